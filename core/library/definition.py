"""One custom op: an ``OpDef`` declared at run time, and the registrations that complete its declaration.

DESIGN.md: "a custom op is a ``defop`` made at run time". ``Definition`` declares the op in ``OPS`` under its
qualified name (``"mylib::bias_gelu"``, category ``"custom"``) from its PyTorch schema, so that it dispatches
through the one call path, records one autograd node, and is one op to every dispatch mode (profiler, autocast,
``ember.compile``'s tracer, export, vmap, forward AD). Each registration (``register_kernel``, ``register_fake``,
``register_autograd``, ...) sets one slot here, and ``refresh`` writes the slots into the op's declaration:

- ``kernels`` -> ``OpDef.kernels`` (functions on tensors by device type; ``execution/user_kernels.py`` runs them);
- ``fake`` -> the op's promotion rule and ``meta``: output dtypes and shapes come from running it on fake tensors
  (``fake.py``); without one, from the op's decomposition on fake tensors, or from running its kernel;
- ``backward``/``setup_context`` -> ``OpDef.derivative`` (``autograd.py``);
- ``vmap`` -> ``OpDef.batch`` (``vmap.py``); ``autocast`` -> ``OpDef.autocast``; ``onnx`` -> ``OpDef.onnx``;
- ``implicit`` (a ``CompositeImplicitAutograd`` impl) and ``autograd_impl`` (an ``Autograd`` impl, an
  ``autograd.Function``'s apply) -> ``OpDef.composite`` (the op decomposes where it records for autograd).

Plans cached before a registration are dropped after it.
"""
from __future__ import annotations

import re
from typing import Any, Callable

from ..dispatch.execution import links, modes, plan, user_kernels
from ..dispatch.execution.fallback import get_fallback
from ..dispatch.contract import registry
from ..dispatch.schema import OPS, declare, undeclare
from ..dispatch.schema.defaults import get_default_device
from ..dispatch.schema.errors import BackendError, EmberError, describe
from ..tensor import Tensor
from . import autograd, fake
from .schema import RESERVED_NAMES, Schema
from .vmap import batch_rule

#: namespaces Ember keeps for itself (its own ops, PyTorch's primitives)
RESERVED_NAMESPACES = ("aten", "prim", "prims", "ember", "torch")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: definitions by qualified name
DEFINITIONS: dict[str, "Definition"] = {}


def split_qualname(qualname: str) -> tuple[str, str]:
    """``"mylib::op"`` -> ("mylib", "op"), or an error saying what a qualified name looks like."""
    if not isinstance(qualname, str):
        raise ValueError(f"a custom op's name must be a str like 'mylib::op', got {type(qualname).__name__}")
    namespace, sep, name = qualname.partition("::")
    if not sep or not _NAME.match(namespace) or not _NAME.match(name):
        raise ValueError(f"{qualname!r} is not a qualified op name: expected 'namespace::name' (two identifiers, "
                         f"e.g. 'mylib::bias_gelu'; overload names are not supported)")
    return namespace, name


def check_namespace(qualname: str) -> str:
    """The namespace of ``qualname``, or an error where a custom op may not be defined in it."""
    namespace, _ = split_qualname(qualname)
    if namespace in RESERVED_NAMESPACES:
        raise ValueError(f"{qualname}: the namespace '{namespace}' is reserved (Ember's own ops and PyTorch's); "
                         f"name your ops after your package, e.g. 'mypackage::op'")
    if namespace in OPS:
        raise ValueError(f"{qualname}: the namespace '{namespace}' is the name of one of Ember's ops, so "
                         f"ember.ops.{namespace} would be ambiguous; name your ops after your package")
    return namespace


def find(qualname: str, who: str) -> "Definition":
    """The custom op ``qualname``, or an error naming ``who`` (the registration) and what exists."""
    definition = DEFINITIONS.get(qualname)
    if definition is None:
        split_qualname(qualname)
        known = ", ".join(sorted(DEFINITIONS)) or "none"
        raise ValueError(f"{who}: there is no custom op {qualname!r} (define it first with ember.library.custom_op "
                         f"or Library.define; custom ops now: {known})")
    return definition


class Definition:
    """One custom op (see the module docstring)."""

    def __init__(self, qualname: str, schema: Schema, source: tuple[str, int] | None, doc: str = "") -> None:
        check_namespace(qualname)
        if qualname in OPS:
            where = OPS[qualname].source
            raise RuntimeError(f"{qualname} is already defined{f' at {where[0]}:{where[1]}' if where else ''}; "
                               f"a library defines each op once (destroy the library that defined it first)")
        self.qualname, self.schema = qualname, schema
        self.params = schema.params(qualname)
        self._check_signature()
        self.mutated = schema.mutated
        self.void = schema.returns == ()
        self.many = schema.returns_tuple or schema.returns == ("Tensor[]",)
        self._check_returns()
        self.kernels: dict = {}
        self.fake: Callable | None = None
        self.backward: Callable | None = None
        self.setup_context: Callable | None = None
        self.vmap: Callable | None = None
        self.autocast: dict = {}
        self.onnx: Any = None
        self.implicit: Callable | None = None
        self.autograd_impl: Callable | None = None
        self.dispatch_rules: dict = {}
        self.disabled: set = set()
        self.init_fn: Callable | None = None  # custom_op's function: what a disabled kernel gives way to
        self._memo: tuple | None = None
        outputs = () if self.void else ("*",) if self.many else ("out",)
        self.op = declare(qualname, self.params, "custom", promotion=self._promotion, meta=self._meta,
                          normalize=self._normalize, outputs=outputs, method=False, kernels={},
                          mutates=self.mutated or False, differentiable=not self.mutated, source=source, doc=doc)
        DEFINITIONS[qualname] = self
        self.refresh()

    # -- checks of the schema ---------------------------------------------------------------------------------
    def _check_signature(self) -> None:
        q = self.qualname
        for p, a in zip(self.params, self.schema.args):
            if p.name in RESERVED_NAMES:
                raise ValueError(f"{q}: an argument may not be named '{p.name}' (Ember's derivatives reserve "
                                 f"{', '.join(RESERVED_NAMES)} for gradients and outputs); rename it")
            if p.name == "generator":
                raise ValueError(f"{q}: an argument may not be named 'generator' (kernels get the backend's "
                                 f"generator there); rename it")
            if p.name == "device" and a.type not in ("Device", "Device?"):
                raise ValueError(f"{q}: an argument named 'device' must be a Device (the dispatcher reads it as "
                                 f"the device of an op without tensor inputs), got {a.type}")
            if p.kw_only and p.is_tensor:
                raise NotImplementedError(f"{q}: keyword-only tensor arguments are not supported (as in PyTorch's "
                                          f"custom_op); make '{p.name}' positional")

    def _check_returns(self) -> None:
        q, returns = self.qualname, self.schema.returns
        if any(r != "Tensor" for r in returns) and returns != ("Tensor[]",):
            raise ValueError(f"{q}: returns {self.schema.signature.split('->')[1].strip()}; Ember's custom ops "
                             f"return a Tensor, a tuple of Tensors, a Tensor[] or nothing (-> ())")
        if self.mutated and not self.void:
            raise ValueError(f"{q}: an op that writes into its arguments ({', '.join(self.mutated)}) returns "
                             f"nothing in Ember (-> None, the schema's -> ()); return new tensors from another op")
        if self.void and not self.mutated:
            raise ValueError(f"{q}: returns nothing and writes into none of its arguments, so it computes nothing "
                             f"Ember can see; return its results, or declare what it writes (mutates_args)")

    # -- the declaration ----------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Write the registrations into the op's declaration; plans made before are dropped."""
        kernels = dict(self.kernels)
        if self.init_fn is not None:
            for device_type in self.disabled & set(kernels):
                kernels[device_type] = self.init_fn
        composite = self._composite() if self.implicit or self.autograd_impl else None
        if self.backward is not None:
            derivative = autograd.derivative(self.qualname, self.params, self.backward, self.setup_context,
                                             self.many)
        elif composite is not None or self.mutated:
            derivative = None  # the decomposition records its inner ops; a mutating op is not differentiable
        else:
            derivative = autograd.missing(self.qualname)
        self.op.redeclare(kind="composite" if composite else "primitive", composite=composite, kernels=kernels,
                          derivative=derivative, batch=batch_rule(self.qualname, self.vmap) if self.vmap else None,
                          autocast=dict(self.autocast) or None, onnx=self.onnx)
        for key in [k for k in modes.rules if k[0] is self.op]:
            del modes.rules[key]
        modes.rules.update({(self.op, cls): rule for cls, rule in self.dispatch_rules.items()})
        plan.clear()

    def register(self, slot: str, value, key=None, owner=None) -> None:
        """Set one registration (``slot``: kernels, autocast and dispatch_rules by ``key``; autograd is the pair
        (backward, setup_context); the rest one value each) and refresh the declaration. ``owner``, a
        ``Library``, takes it back when destroyed."""
        if slot in ("kernels", "autocast", "dispatch_rules"):
            getattr(self, slot)[key] = value
        elif slot == "autograd":
            self.backward, self.setup_context = value
        else:
            setattr(self, slot, value)
        if owner is not None:
            owner._registrations.append((self, slot, key))
        self.refresh()

    def unregister(self, slot: str, key=None) -> None:
        """Take one registration back (its library was destroyed, or a fallthrough replaced it)."""
        if DEFINITIONS.get(self.qualname) is not self:
            return  # the op itself is gone
        if slot in ("kernels", "autocast", "dispatch_rules"):
            getattr(self, slot).pop(key, None)
        elif slot == "autograd":
            self.backward = self.setup_context = None
        else:
            setattr(self, slot, None)
        self.refresh()

    def remove(self) -> None:
        """Take the op out of OPS (its library was destroyed, or it is defined anew)."""
        if DEFINITIONS.get(self.qualname) is self:
            del DEFINITIONS[self.qualname]
            undeclare(self.qualname)
        for key in [k for k in modes.rules if k[0] is self.op]:
            del modes.rules[key]
        plan.clear()

    def _composite(self) -> Callable:
        """The op's decomposition: its ``Autograd`` impl where the call records for autograd, else its
        ``CompositeImplicitAutograd`` impl; neither: the call has no kernel to run."""
        implicit, autograd_impl, op = self.implicit, self.autograd_impl, self.op

        def composite(*values):
            args, kwargs = self.split(values)
            if autograd_impl is not None and links.recorder.state.enabled and any(
                    t.requires_grad for t in modes.tensors_in(args, kwargs)):
                return autograd_impl(*args, **kwargs)
            if implicit is not None:
                return implicit(*args, **kwargs)
            raise BackendError(user_kernels.missing_kernel(op, self.device_of(values)))
        return composite

    # -- calls --------------------------------------------------------------------------------------------------
    def split(self, values) -> tuple[tuple, dict]:
        """Bound values as the user's functions take them: positional arguments and keyword-only ones."""
        args = tuple(v for p, v in zip(self.params, values) if not p.kw_only)
        return args, {p.name: v for p, v in zip(self.params, values) if p.kw_only}

    def device_of(self, values):
        """The device a call runs on: its first tensor's, else its ``device`` argument's, else the default."""
        for t in modes.tensors_in(tuple(values), None):
            return t._device
        at = self.op.param_index.get("device")
        if at is not None and values[at] is not None:
            return registry.resolve_device(values[at])
        return get_default_device()

    def _normalize(self, op, args) -> None:
        """Check (and make tuples of) the list arguments the dispatcher leaves to the op (float[], bool[],
        Scalar[]); a Device argument may not be None."""
        values = args.values
        for i, (p, a) in enumerate(zip(self.params, self.schema.args)):
            v = values[i]
            if a.type in ("Device",) and v is None:
                raise TypeError(f"{self.qualname}(): argument '{p.name}' (Device) must not be None")
            if p.type != "Any" or (v is None and a.type.endswith("?")):
                continue
            kinds = {"float": (int, float), "bool": (bool,), "Scalar": (int, float, bool)}[a.type.split("[")[0]]
            items = v if isinstance(v, (list, tuple)) else None
            if items is None or not all(isinstance(x, kinds) for x in items):
                raise TypeError(f"{self.qualname}(): argument '{p.name}' must be a list of {a.type.split('[')[0]}s "
                                f"({a.type}), got {v!r}")
            if v.__class__ is not tuple:
                values[i] = tuple(items)

    def _promotion(self, rt, op, args):
        """The op's result dtypes (no promotion: kernels see their inputs as they are), from its fake."""
        self._normalize(op, args)
        values = args.values
        outputs = self._outputs(values)
        self._memo = (tuple(values), outputs)
        if self.void:
            return None, None
        dtypes = tuple(d for _, d, _ in outputs)
        return None, dtypes if self.many else dtypes[0]

    def _meta(self, *values):
        """The op's output shapes, from its fake (run by ``_promotion`` just before, for the same values)."""
        memo, self._memo = self._memo, None
        if memo is not None and len(memo[0]) == len(values) and all(a is b for a, b in zip(memo[0], values)):
            outputs = memo[1]
        else:
            outputs = self._outputs(list(values))
        if self.void:
            return ()
        shapes = tuple(s for s, _, _ in outputs)
        return shapes if self.many else shapes[0]

    def _outputs(self, values: list) -> list[tuple]:
        """(shape, dtype, device) of each output of a call with ``values``, without running its kernel where the
        op has a fake function or a decomposition."""
        if self.void:
            return []
        args, kwargs = self.split(values)
        device = self.device_of(values)
        if self.fake is not None:
            who = f"the fake function of {self.qualname} (register_fake)"
            outputs = self.described(fake.run_fake(self.fake, args, kwargs, who), who)
            wrong = [o for o in outputs if o[2] != device]
            if wrong:
                raise EmberError(f"{who} returned a tensor on {wrong[0][2]} for a call on {device}; make its outputs "
                                 f"on its inputs' device (e.g. ember.empty_like(x), x.new_empty(shape))")
            return outputs
        if self.implicit is not None:
            who = f"the decomposition of {self.qualname} (its CompositeImplicitAutograd impl)"
            try:
                return self.described(fake.run_fake(self.implicit, args, kwargs, who), who)
            except fake.FakeValueError:
                return self.described(fake.run_apart(self.implicit, args, kwargs), who)
        return self.described(self._run_kernel(values, device, args, kwargs),
                              f"the {device.type} kernel of {self.qualname}")

    def _run_kernel(self, values, device, args: tuple, kwargs: dict):
        """The op run for real, to learn its outputs (it has no fake function): once per new kind of call."""
        fn = user_kernels.function_for(self.op, device.type)
        if fn is None and get_fallback() is not None:
            host = registry.resolve_device(get_fallback())
            fn = user_kernels.function_for(self.op, host.type)
            if fn is not None:
                args = tuple(_moved(v, host) for v in args)
                kwargs = {k: _moved(v, host) for k, v in kwargs.items()}
        if fn is None:
            raise BackendError(f"{user_kernels.missing_kernel(self.op, device)}; (without a fake function, "
                               f"register_fake, the op also has no way to learn its outputs' shapes)")
        return fake.run_apart(fn, args, kwargs)

    def described(self, result, who: str) -> list[tuple]:
        """(shape, dtype, device) per output of ``result`` (a fake's or a kernel's), checked against the schema."""
        returns = self.schema.signature.split("->")[1].strip()
        if self.many:
            listed = self.schema.returns == ("Tensor[]",)
            ok = isinstance(result, (tuple, list)) and (listed or len(result) == len(self.schema.returns))
            items = tuple(result) if ok else ()
        else:
            ok, items = True, (result,)
        if not ok or not all(isinstance(t, Tensor) for t in items):
            got = type(result).__name__ if not ok else ", ".join(
                describe(t) if isinstance(t, Tensor) else type(t).__name__ for t in items)
            raise EmberError(f"{who} returned {got}, but {self.qualname} returns {returns}")
        return [(tuple(t._data.shape), t._dtype, t._device) for t in items]


def _moved(value, device):
    if isinstance(value, Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return type(value)(_moved(v, device) for v in value)
    return value


__all__ = ["Definition", "DEFINITIONS", "RESERVED_NAMESPACES", "check_namespace", "find", "split_qualname"]
