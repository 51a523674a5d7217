"""PyTorch's older registration API: ``Library(ns, kind)`` with ``define``/``impl``, and the module-level
``define``, ``impl`` and ``fallthrough_kernel``.

A ``Library`` owns what it registers: ``define("op(Tensor x) -> Tensor")`` declares ``ns::op`` from a schema
string in PyTorch's language, ``impl(name, fn, dispatch_key)`` registers ``fn`` at one of PyTorch's dispatch keys,
and ``_destroy()`` (or the library being garbage collected, as in PyTorch) takes all of it back. The keys Ember
understands, and what each becomes:

- a device's key ("CPU", "CUDA", "PrivateUse1": every device type but cpu and cuda) or an Ember device type
  ("cpu", "opencl", a plugin's): the kernel for that device type; "CompositeExplicitAutograd": for every one;
- "CompositeImplicitAutograd" (also ``impl``'s default): a decomposition into other ops, which autograd
  differentiates through where no formula is registered;
- "Autograd": an ``autograd.Function``'s ``apply``, run where the call records for autograd (its ``forward``
  calls the op again, under no_grad, to reach the kernel);
- "Meta": the fake function (as ``register_fake``).

``fallthrough_kernel`` at a key removes what is registered there.
"""
from __future__ import annotations

import sys
import weakref
from typing import Callable, Sequence

from .definition import DEFINITIONS, RESERVED_NAMESPACES, Definition, split_qualname
from .registration import device_keys, resolve
from .schema import parse

_KINDS = ("DEF", "IMPL", "FRAGMENT")
_DEF_LIBRARIES: dict[str, weakref.ref] = {}  # namespace -> its live "DEF" library
_keep_alive: list = []  # libraries of the module-level functions, which live as long as the process


def fallthrough_kernel():
    """Pass to ``Library.impl`` to register nothing at a key (what was registered there is removed)."""
    raise RuntimeError("fallthrough_kernel() should never be called: it is a marker for Library.impl")


def _slot(key: str, qualname: str) -> tuple[str, str | None]:
    """The registration slot (and its key) of a dispatch key."""
    fixed = {"CompositeImplicitAutograd": ("implicit", None), "CompositeExplicitAutograd": ("kernels", None),
             "Autograd": ("autograd_impl", None), "Meta": ("fake", None), "CPU": ("kernels", "cpu"),
             "CUDA": ("kernels", "cuda"), "PrivateUse1": ("kernels", "privateuse1")}
    if key in fixed:
        return fixed[key]
    if key.islower():  # an Ember device type
        return "kernels", device_keys(key, qualname, "Library.impl")[0]
    raise ValueError(f"Library.impl: {qualname}: dispatch key {key!r} is not one Ember understands (it takes "
                     f"{', '.join(fixed)}, or an Ember device type such as 'opencl')")


def _finalize(registrations: list, definitions: list) -> None:
    for definition, slot, key in reversed(registrations):
        definition.unregister(slot, key)
    registrations.clear()
    for definition in definitions:
        definition.remove()
    definitions.clear()


class Library:
    """Registrations in namespace ``ns``: ``kind`` "DEF" (the one library defining the namespace), "FRAGMENT"
    (more definitions in it) or "IMPL" (implementations only); ``dispatch_key`` is ``impl``'s default key."""

    def __init__(self, ns: str, kind: str, dispatch_key: str = "") -> None:
        if kind not in _KINDS:
            raise ValueError(f"Unsupported kind: {kind}")
        split_qualname(f"{ns}::op")
        if ns in RESERVED_NAMESPACES:
            raise ValueError(f"{ns} is a reserved namespace (Ember's own ops, and PyTorch's); Ember's ops take "
                             f"kernels from backends (docs/backends.md), not from a Library")
        if kind == "DEF":
            live = _DEF_LIBRARIES.get(ns)
            live = live() if live is not None else None
            if live is not None and live._finalizer.alive:
                raise RuntimeError(f"Only a single Library(..., 'DEF') can be used to register the namespace {ns}; "
                                   f"please put all of your definitions in one, and use 'FRAGMENT' elsewhere")
            _DEF_LIBRARIES[ns] = weakref.ref(self)
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._registrations: list = []  # (definition, slot, key)
        self._defs: list[Definition] = []
        frame = sys._getframe(1)
        self._source = (frame.f_code.co_filename, frame.f_lineno)
        self._finalizer = weakref.finalize(self, _finalize, self._registrations, self._defs)

    def __repr__(self) -> str:
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def define(self, schema: str, alias_analysis: str = "", *, tags=()) -> str:
        """Declare ``ns::name`` from ``schema`` ("name(Tensor x, float a=1.0) -> Tensor"); returns the name."""
        if alias_analysis not in ("", "FROM_SCHEMA", "CONSERVATIVE"):
            raise RuntimeError(f"Invalid alias_analysis type {alias_analysis}")
        self._check_alive()
        if self.kind == "IMPL":
            raise RuntimeError(f"Library(\"{self.ns}\", \"IMPL\") cannot define ops: use \"DEF\" or \"FRAGMENT\"")
        parsed = parse(schema, f"{self.ns}::{schema.split('(')[0].strip() or '?'}")
        if not parsed.name:
            raise ValueError(f"Library.define: the schema must start with the op's name, e.g. \"op{schema}\"")
        frame = sys._getframe(1)
        definition = Definition(f"{self.ns}::{parsed.name}", parsed, (frame.f_code.co_filename, frame.f_lineno))
        self._defs.append(definition)
        return parsed.name

    def impl(self, op_name, fn: Callable, dispatch_key: str = "", *, with_keyset: bool = False,
             allow_override: bool = True) -> None:
        """Register ``fn`` for the op at ``dispatch_key`` (see the module docstring; default: the library's key,
        else "CompositeImplicitAutograd")."""
        if not callable(fn):
            raise TypeError(f"Input function is required to be a callable but found type {type(fn)}")
        if with_keyset:
            raise NotImplementedError("Library.impl(..., with_keyset=True): Ember has no dispatch key sets to pass")
        self._check_alive()
        key = dispatch_key or self.dispatch_key or "CompositeImplicitAutograd"
        definition = resolve(op_name if not isinstance(op_name, str) or "::" in op_name
                             else f"{self.ns}::{op_name}", "Library.impl")
        slot, slot_key = _slot(key, definition.qualname)
        if fn is fallthrough_kernel:
            definition.unregister(slot, slot_key)
            return
        if not allow_override and _registered(definition, slot, slot_key):
            raise RuntimeError(f"Library.impl: {definition.qualname} already has an implementation at {key}")
        definition.register(slot, fn, slot_key, self)

    def _register_fake(self, op_name, fn: Callable, _stacklevel: int = 1, *, allow_override: bool = True) -> None:
        self.impl(op_name, fn, "Meta", allow_override=allow_override)

    def _check_alive(self) -> None:
        if not self._finalizer.alive:
            raise RuntimeError("Library object has been destroyed")

    def _destroy(self) -> None:
        """Take back everything this library registered, and remove the ops it defined."""
        self._finalizer()


def _registered(definition: Definition, slot: str, key) -> bool:
    value = getattr(definition, slot)
    return key in value if isinstance(value, dict) else value is not None


def define(qualname: str, schema: str, *, lib: Library | None = None, tags=()) -> None:
    """Declare the op ``qualname`` ("mylib::op") from ``schema`` without its name ("(Tensor x) -> Tensor")."""
    namespace, name = split_qualname(qualname)
    if not schema.strip().startswith("("):
        raise ValueError(f"define(qualname, schema, ...): expected schema to look like e.g. \"(Tensor x) -> Tensor\" "
                         f"but got \"{schema}\"")
    if lib is None:
        lib = Library(namespace, "FRAGMENT")
        _keep_alive.append(lib)
    lib.define(name + schema, tags=tags)


def impl(qualname: str, types: str | Sequence[str], func: Callable | None = None, *, lib: Library | None = None):
    """Register ``func`` for op ``qualname`` on device ``types`` ("cpu", "opencl", ...; "default" for every
    device type) or at PyTorch dispatch keys ("CompositeImplicitAutograd", ...). A decorator without ``func``."""
    namespace, _ = split_qualname(qualname)
    keys = [types] if isinstance(types, str) else list(types)
    keys = ["CompositeExplicitAutograd" if k == "default" else k for k in keys]

    def register(fn: Callable) -> None:
        use = lib
        if use is None:
            use = Library(namespace, "FRAGMENT")
            _keep_alive.append(use)
        for key in keys:
            use.impl(qualname, fn, key)

    if func is None:
        return register
    register(func)
    return None


__all__ = ["Library", "define", "impl", "fallthrough_kernel", "DEFINITIONS"]
