"""Forward-mode AD: a level of dual tensors, as a dispatch mode.

A forward level keeps the tangent of each tensor that has one (``make_dual`` gives one; every op with an
operand that has one gives its outputs one). An op call with such an operand runs below the level for its
values, and its outputs' tangents come from the op's ``jvp`` rule (``jvp_rules``). A composite with neither a
rule nor a derivative of its own runs its decomposition with the level watching, so its inner ops carry the
tangents (a composite that declares a derivative does so for its special points: its JVP is derived from it).
Levels nest (``jvp`` of ``jvp``): each keeps its own tangents, and the ops of a rule are seen by the levels
entered before it, which is how a tangent gets a tangent of its own.
"""
from __future__ import annotations

import weakref
from contextlib import ExitStack, contextmanager
from typing import Iterator

from ..dispatch.execution import modes
from ..dispatch.execution.executor import named
from ..autograd import function
from . import jvp_rules, levels
from .bound_calls import checked_values
from .batched import BatchedTensor, batched, with_levels


class ForwardLevel(modes.DispatchMode):
    """One level of dual tensors (see the module docstring)."""

    reads_types = False

    def __init__(self, level: int) -> None:
        self.level = level
        self._tangents: dict = {}  # id(primal's array) -> (weak reference to the primal, tangent)

    # -- the tangents ---------------------------------------------------------------------------
    # Keyed by the tensor's array: tensors that share it hold the same values (autograd's unpacked saved
    # outputs, which derivatives read as ``result``, are such fresh tensors), so they share the tangent too.
    # A batched tensor and its physical tensor (``_value``) are one value seen from two vmap levels: the
    # physical tangent is the batched tangent's physical tensor. Both are kept, so that ops on either side of
    # the vmap level (the function's, and autograd's on the physical graph) find their tangent.
    def tangent_of(self, t):
        entry = self._tangents.get(id(t._data))
        if entry is not None:
            owner = entry[0]()
            if owner is not None and owner._data is t._data:
                return entry[1]
        if t.__class__ is BatchedTensor:
            inner = self.tangent_of(t._value)
            if inner is not None:
                return batched(inner, t._level)
        return None

    def set_tangent(self, t, tangent) -> None:
        key = id(t._data)
        table = self._tangents

        def forget(ref, key=key):
            entry = table.get(key)
            if entry is not None and entry[0] is ref:
                del table[key]
        table[key] = (weakref.ref(t, forget), tangent)
        if t.__class__ is BatchedTensor:
            with modes.standing_aside(self):
                physical = with_levels(tangent, {t._level: t._value.shape[0]})
                while physical._level != t._level:
                    physical = physical._value
            self.set_tangent(t._value, physical._value)

    def clear(self) -> None:
        self._tangents.clear()

    # -- op calls -------------------------------------------------------------------------------
    # A forward level sits below every vmap level (``__enter__``): vmap turns batched calls into calls on
    # physical tensors first, so the level sees, and gives tangents to, the very tensors autograd records and
    # saves (forward over reverse under vmap: ``jacfwd(jacrev(f))``). Tangents may themselves be batched (a
    # batch of directions, ``jacfwd``): the rules' ops on them go through the vmap levels again (``restored``),
    # which stand aside while this level handles a call they passed on.
    def __enter__(self):
        from .vmap_mode import VmapLevel
        at = next((i for i, mode in enumerate(modes.active) if isinstance(mode, VmapLevel)), len(modes.active))
        modes.active.insert(at, self)
        return self

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not self._tangents or not any(self.tangent_of(t) is not None for t in modes.tensors_in(args, kwargs)):
            return func(*args, **kwargs)
        above = _vmaps_standing_aside()  # a batch of tangents needs them for the rules' ops
        op = func.op
        values, _ = checked_values(op, args, kwargs)
        if op.jvp is None and op.derivative is None and op.kind == "composite":
            with modes.restored([self, *above]):  # the decomposition's ops carry the tangents
                result = op.composite(*values)
            return named(op, result) if len(op.outputs) > 1 and isinstance(result, (tuple, list)) else result
        positional = [v for p, v in zip(op.params, values) if not p.kw_only]
        result = func(*positional, **{p.name: v for p, v in zip(op.params, values) if p.kw_only})
        if op.differentiable:
            outputs = tuple(result) if isinstance(result, (tuple, list)) else (result,)
            with modes.restored(above):
                tangents = jvp_rules.output_tangents(op, values, outputs, self._input_tangents(op, values))
            for out, tangent in zip(outputs, tangents):
                if tangent is not None and hasattr(out, "_dtype") and (out._dtype.is_floating_point
                                                                       or out._dtype.is_complex):
                    self.set_tangent(out, tangent)
        return result

    def _input_tangents(self, op, values) -> list:
        """One tangent (or None) per tensor parameter; a list parameter gets a list."""
        out = []
        for i in op.tensor_positions:
            v = values[i]
            if isinstance(v, (list, tuple)):
                out.append([self.tangent_of(t) if hasattr(t, "_data") else None for t in v])
            else:
                out.append(self.tangent_of(v) if hasattr(v, "_data") else None)
        return out


def _vmaps_standing_aside() -> list:
    """The vmap levels being run that stand aside now (they handled the call, or an enclosing one, already)."""
    from .vmap_mode import VmapLevel
    return [mode for mode in levels.active if isinstance(mode, VmapLevel) and all(m is not mode for m in modes.active)]


class FunctionTangents:
    """``autograd.Function.apply`` while forward levels are entered: its forward runs with those levels standing
    aside (its own ops carry no tangents), and ``jvp(ctx, *input_tangents)`` gives its outputs theirs."""

    def forward(self, cls, ctx, args):
        found = []
        for mode in levels.active:
            if isinstance(mode, ForwardLevel):
                tangents = [mode.tangent_of(a) if hasattr(a, "_data") else None for a in args]
                if any(t is not None for t in tangents):
                    found.append((mode, tangents))
        if not found:
            return cls.forward(ctx, *args), _nothing
        with ExitStack() as hidden:
            for mode, _ in found:
                hidden.enter_context(modes.standing_aside(mode))
            outputs = cls.forward(ctx, *args)

        def attach(outs) -> None:
            for mode, tangents in found:
                with modes.standing_aside(mode):
                    result = cls.jvp(ctx, *tangents)
                for out, tangent in zip(outs, result if isinstance(result, tuple) else (result,)):
                    if tangent is not None:
                        mode.set_tangent(out, tangent)
        return outputs, attach


def _nothing(outs) -> None:
    return None


@contextmanager
def entered() -> Iterator[ForwardLevel]:
    """A new forward level for the block (``levels.entered``), Functions taking their tangents from ``jvp``."""
    function.forward_levels[0] = _FUNCTION_TANGENTS
    try:
        with levels.entered(ForwardLevel) as level:
            yield level
    finally:
        if not any(isinstance(mode, ForwardLevel) for mode in levels.active):
            function.forward_levels[0] = None


_FUNCTION_TANGENTS = FunctionTangents()
