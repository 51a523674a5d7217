"""The vmap mode: runs every op call that has a batched operand on the batches themselves.

One mode per vmap level. An op call whose operands are batched at its level is run by the op's batching
rule (``OpDef.batch``: a family of ``batch_rules`` or the op's own function), which calls the op once on
the physical tensors; a composite without a rule runs its decomposition with the mode still watching, so
its inner ops are batched by their rules; any other op runs once per batch element and the results are
stacked, with a warning naming the op (PyTorch's fallback does the same). Calls with nothing batched at
the level go on unchanged, except random ops, which follow vmap's ``randomness``.
"""
from __future__ import annotations

import warnings

from ..dispatch.execution import modes
from ..dispatch.execution.executor import named
from ..dispatch.ops import F
from ..dispatch.schema.errors import EmberError
from . import batch_rules
from .bound_calls import checked_values
from .batched import VmapUnsupported, batched, is_batched_at

RANDOMNESS = ("error", "different", "same")


class VmapLevel(modes.DispatchMode):
    """The mode of one ``vmap`` call: its level, batch size and randomness."""

    reads_types = False

    def __init__(self, level: int, size: int, randomness: str) -> None:
        self.level, self.size, self.randomness = level, size, randomness

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        op = func.op
        if not any(is_batched_at(t, self.level) for t in modes.tensors_in(args, kwargs)):
            if op.category == "random" or op.batch == "random":
                return self._random(func, args, kwargs)
            return func(*args, **kwargs)
        return VmapCall(self, func, args, kwargs).run()

    def _random(self, func, args, kwargs):
        """A random op with no batched operand: by ``randomness``, an error, one draw for every element
        ("same"), or one per element ("different", the composite's inner primitives drawing a batch)."""
        op = func.op
        if self.randomness == "error":
            raise RuntimeError(f"vmap: called random operation {op.name} while in randomness error mode. Please "
                               f"either use the 'same' or 'different' randomness flags on vmap or perform the "
                               f"randomness operation out of vmap")
        if self.randomness == "same":
            return func(*args, **kwargs)
        return VmapCall(self, func, args, kwargs).run()


class VmapCall:
    """One op call at a vmap level: its bound values (attributes converted against the elements' shapes) and
    what the rules need to run it on the physical tensors."""

    def __init__(self, mode: VmapLevel, func, args: tuple, kwargs: dict) -> None:
        self.mode, self.func, self.op = mode, func, func.op
        self.level, self.size = mode.level, mode.size
        with mode:  # the op's checks may compute on batched operands (a tensor q's range): batched, they run
            self.values, self.normalized = checked_values(self.op, args, kwargs)

    # -- reading the call ---------------------------------------------------------------------
    def is_batched(self, value) -> bool:
        return is_batched_at(value, self.level)

    def physical(self, value):
        """The batch of ``value`` (batch dim first) where it is batched at this level; else ``value``."""
        return _at_level(value, self.level)._value if self.is_batched(value) else value

    def expanded(self, value):
        """The batch of ``value``: an unbatched tensor's value repeated (expanded, no copy) for every element."""
        if self.is_batched(value):
            return self.physical(value)
        return F.expand(F.unsqueeze(value, 0), (self.size, *value.shape))

    def tensor_values(self) -> list:
        return [self.values[i] for i in self.op.tensor_positions]

    unsupported = VmapUnsupported  # what a rule raises for a call vmap cannot batch

    # -- running it -----------------------------------------------------------------------------
    def call(self, values: list):
        """The op on ``values`` (all of its parameters), below this level."""
        op = self.op
        positional = [v for p, v in zip(op.params, values) if not p.kw_only]
        keywords = {p.name: v for p, v in zip(op.params, values) if p.kw_only}
        return self.func(*positional, **keywords)

    def wrap(self, result):
        """Results of a call on physical tensors, as elements of this level's batch."""
        if isinstance(result, tuple):
            items = [self.wrap(r) for r in result]
            return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
        if isinstance(result, list):
            return [self.wrap(r) for r in result]
        if hasattr(result, "_data"):
            return batched(result, self.level)
        return result

    def run(self):
        op = self.op
        rule = op.batch
        if rule is not None and rule != "random":
            function = batch_rules.FAMILIES[rule] if isinstance(rule, str) else rule
            result = function(self)  # NotImplemented: the rule declines this call
            if result is not NotImplemented:
                return result
        elif rule == "random" and op.kind == "primitive":
            result = batch_rules.random(self)
            if result is not NotImplemented:
                return result
        if op.kind == "composite" and self.normalized:
            try:
                return self.decompose()
            except VmapUnsupported:
                pass  # its definition reads values or writes a batch into a tensor of its own: one call per element
        return self.loop()

    def decompose(self):
        """A composite's own definition, run with this level watching, so its inner ops are batched."""
        with self.mode:
            result = self.op.composite(*self.values)
        return named(self.op, result) if len(self.op.outputs) > 1 and isinstance(result, (tuple, list)) else result

    def loop(self, warn: bool = True):
        """The op once per element, the results stacked: correct for any op, as slow as a Python loop."""
        op = self.op
        if op.mutates or op.name.endswith("_"):
            return self._loop_in_place()
        if warn:
            _warn_fallback(op.name)
        results = [self.call([self._element(v, b) for v in self.values]) for b in range(self.size)]
        first = results[0]
        if isinstance(first, (tuple, list)):
            stacked = [F.stack([r[k] for r in results]) for k in range(len(first))]
            return self.wrap(named(op, stacked) if hasattr(first, "_fields") else type(first)(stacked))
        if not hasattr(first, "_data"):
            raise EmberError(f"vmap: {op.name} returned {type(first).__name__}, which vmap cannot batch")
        return batched(F.stack(results), self.level)

    def _loop_in_place(self):
        """A mutating op per element, each writing through a view of the target's batch."""
        target = self.values[self.op.tensor_positions[0]]
        if not self.is_batched(target):
            raise_inplace_unbatched(self.op.name)
        _warn_fallback(self.op.name)
        for b in range(self.size):
            self.call([self._element(v, b) for v in self.values])
        return target

    def _element(self, value, b: int):
        if self.is_batched(value):
            return F.select(self.physical(value), 0, b)
        if isinstance(value, (list, tuple)) and any(self.is_batched(v) for v in value):
            return type(value)(self._element(v, b) for v in value)
        return value


def _at_level(t, level: int):
    """The wrapper of ``t`` at ``level`` (its outer wrappers belong to levels above this one, inner calls)."""
    while t._level != level:
        t = t._value
    return t


def raise_inplace_unbatched(name: str) -> None:
    raise VmapUnsupported(f"vmap: {name}(self, *extra_args) is not possible because there exists a Tensor "
                          f"`other` in extra_args that has more elements than `self`. This happened due to `other` "
                          f"being vmapped over but `self` not being vmapped over in a vmap. Please try to use "
                          f"out-of-place operators instead of inplace arithmetic.")


_warned: set = set()


def _warn_fallback(name: str) -> None:
    if name not in _warned:
        _warned.add(name)
        warnings.warn(f"There is a performance drop because we have not yet implemented the batching rule for "
                      f"{name}. vmap runs it once per batch element (ember.func's loop fallback); "
                      f"`python -m ember.dispatch` lists the ops that have a rule.", UserWarning, stacklevel=4)
