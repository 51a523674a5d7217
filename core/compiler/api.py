"""``ember.compile``: PyTorch's ``torch.compile`` for Ember, and the compiled callables it returns.

``mode="reduce-overhead"`` runs each entry's programs through a static memory plan and, where the backend
captures device graphs (CUDA), replays them as one graph each (``reduce_overhead.py``, ``device_graph.py``).
A ``CompiledFunction`` keeps one entry per guard key (the arguments' shapes, dtypes, devices and
``requires_grad``, grad mode, autocast, the watched modules' training flags, parameters' ``requires_grad``
and whether their gradients are set). A call with a new key is captured — that call runs for real — and
later calls with the key replay the entry. After ``config.recompile_limit`` captures, or when a capture
breaks, calls run eagerly; after a break the modules the function calls are compiled one by one
instead, so the part that cannot be captured is all that runs op by op.
"""
from __future__ import annotations

import logging
from typing import Any, Callable

from ..amp.casting import MODE as _AUTOCAST
from ..dispatch.execution import links, modes
from ..dispatch.schema.dtypes import _default_float
from ..nn.modules.module import Module
from . import config, state
from .entry import GuardMiss, capture_entry
from .reduce_overhead import replayed
from .watched import Watched, discover

log = logging.getLogger("ember._dynamo")

_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_BACKENDS = {"inductor": True, "eager": False, "aot_eager": False}  # name -> whether elementwise chains fuse
_compiled: list = []  # every CompiledFunction made, for reset()


def list_backends(exclude_tags=("debug", "experimental")) -> list[str]:
    """The ``backend=`` names ``ember.compile`` accepts (``eager``/``aot_eager`` are PyTorch's debug ones)."""
    return ["inductor"] if exclude_tags and "debug" in exclude_tags else sorted(_BACKENDS)


def _call_state() -> tuple | None:
    """Grad mode, default dtype and autocast; None where another dispatch mode (a profiler) is active: such
    calls run eagerly, so that the mode sees every op."""
    active = modes.active
    if active and any(m is not _AUTOCAST for m in active):
        return None
    autocast = tuple(_AUTOCAST.dtypes.items()) if active else ()
    return (links.recorder.state.enabled, _default_float[0], autocast)


def _signature(x):
    Tensor = links.tensor.type
    if isinstance(x, Tensor):
        return (x._data.shape, x._dtype, x._device, x.requires_grad)
    c = x.__class__
    if c in (int, float, bool, str) or x is None:
        return (c, x)
    if c in (list, tuple) or isinstance(x, tuple):
        return (c, tuple(_signature(i) for i in x))
    if c is dict:
        return (c, tuple((k, _signature(v)) for k, v in x.items()))
    return (c, id(x))


class CompiledFunction:
    """``function`` behind guards, captures and replays (see the module docstring)."""

    def __init__(self, function: Callable, fullgraph: bool = False, dynamic: bool | None = None,
                 mode: str | None = None, fusion: bool = True) -> None:
        self._function = function
        self.fullgraph, self.dynamic, self.mode, self.fusion = fullgraph, dynamic, mode, fusion
        self.entries: dict = {}
        self.broken: dict = {}  # key -> the reasons its capture broke
        self.captures: list = []  # (graph, entry or None, seconds) of every capture, for explain
        self.running = False
        self._watched: Watched | None = None
        self._children: dict | None = None
        self._warned = False
        _compiled.append(self)

    def __call__(self, *args, **kwargs):
        if state.capturing is not None or self.running:  # inside a capture: its tracer records everything
            return self._function(*args, **kwargs)
        call = _call_state()
        if call is None:
            return self._function(*args, **kwargs)
        watched = self._watched
        if watched is None or not watched.intact():
            watched = self._watched = discover(self._function, args, kwargs)
            self.entries.clear()
        key = (call, _signature(args), _signature(kwargs) if kwargs else None, watched.key())
        self.running = True
        try:
            entry = self.entries.get(key)
            if entry is not None:
                try:
                    return entry(args, kwargs)
                except GuardMiss:
                    del self.entries[key]
            if key in self.broken:
                return self._run_split(args, kwargs)
            if len(self.captures) >= config.limit():
                if not self._warned:
                    self._warned = True
                    log.warning("ember.compile: %s reached the recompile limit (%d captures); it runs eagerly for "
                                "new guard keys. Last key: %r", self.name, config.limit(), key)
                return self._function(*args, **kwargs)
            return self._capture(key, watched, args, kwargs)
        finally:
            self.running = False

    @property
    def name(self) -> str:
        return getattr(self._function, "__qualname__", repr(self._function))

    def _capture(self, key, watched: Watched, args: tuple, kwargs: dict):
        try:
            static = self.mode == "reduce-overhead"
            result, entry, graph, seconds = capture_entry(self._function, args, kwargs, watched.leaves,
                                                          self.fullgraph, self.fusion, keep_grads=static)
            if static and entry is not None:
                entry = replayed(entry)
        except Exception:
            if not config.suppress_errors:
                raise
            log.warning("ember.compile: capturing %s failed; running it eagerly", self.name, exc_info=True)
            self.broken[key] = ["capture failed"]
            return self._function(*args, **kwargs)  # noqa: the failed call raised before finishing
        self.captures.append((graph, entry, seconds))
        if entry is None:
            self.broken[key] = list(graph.breaks)
            log.info("ember.compile: %s runs its modules compiled one by one: %s", self.name, "; ".join(graph.breaks))
        else:
            self.entries[key] = entry
        return result

    def _run_split(self, args: tuple, kwargs: dict):
        """Run the function eagerly, its modules through compiled versions of their own."""
        if self._children is None:
            roots = [m for m in self._watched.roots if isinstance(m, Module)]
            if len(roots) == 1 and getattr(self._function, "__self__", None) is roots[0]:
                roots = list(roots[0].children())  # the module's own forward broke: compile its children
            self._children = {id(m): CompiledFunction(m.__call__, False, self.dynamic, self.mode, self.fusion)
                              for m in roots}
        overrides = state.module_overrides
        added = [k for k in self._children if k not in overrides]
        overrides.update({k: self._children[k] for k in added})
        try:
            return self._function(*args, **kwargs)
        finally:
            for k in added:
                overrides.pop(k, None)

    def reset(self) -> None:
        self.entries.clear()
        self.broken.clear()
        self.captures.clear()
        self._watched = self._children = None
        self._warned = False


class OptimizedModule(Module):
    """A compiled module, as PyTorch's: ``_orig_mod`` is the module (so ``state_dict`` keys start with
    ``_orig_mod.``); calling it runs the module's ``__call__`` compiled; other attributes are the module's."""

    def __init__(self, mod: Module, compiled: CompiledFunction) -> None:
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled_call", compiled)
        object.__setattr__(self, "forward", compiled)

    def __call__(self, *args, **kwargs):
        return self._compiled_call(*args, **kwargs)

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)

    def __repr__(self) -> str:
        return f"OptimizedModule({self._orig_mod!r})"


def compile(model: Callable | None = None, *, fullgraph: bool = False, dynamic: bool | None = None,
            backend: str | Callable = "inductor", mode: str | None = None, options: dict | None = None,
            disable: bool = False) -> Any:
    """Capture ``model`` (a Module or a function) into a program replayed without per-op Python work, with
    chains of elementwise ops fused into one kernel on backends that generate code. PyTorch's signature;
    also a decorator, with or without arguments."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode!r}, should be one of: {', '.join(_MODES)}")
    if backend is None:
        backend = "inductor"
    if not isinstance(backend, str) or backend not in _BACKENDS:
        raise ValueError(f"ember.compile: backend={backend!r} is not available; Ember captures into its own "
                         f"programs and accepts {sorted(_BACKENDS)} ('eager' and 'aot_eager' replay without fusion)")
    if model is None:
        return lambda fn: compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                  options=options, disable=disable)
    if not callable(model):
        raise TypeError(f"ember.compile: expected a Module or a callable, got {type(model).__name__}")
    if disable:
        return model
    fusion = _BACKENDS[backend]
    if isinstance(model, Module):
        return OptimizedModule(model, CompiledFunction(model.__call__, fullgraph, dynamic, mode, fusion))
    compiled = CompiledFunction(model, fullgraph, dynamic, mode, fusion)

    def compiled_function(*args, **kwargs):
        return compiled(*args, **kwargs)
    compiled_function.__wrapped__ = model
    compiled_function._ember_compiled = compiled
    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        if hasattr(model, attr):
            setattr(compiled_function, attr, getattr(model, attr))
    return compiled_function


def reset() -> None:
    """Forget every capture of every compiled function (PyTorch's ``torch.compiler.reset``)."""
    for compiled in _compiled:
        compiled.reset()


def disable(fn: Callable | None = None, recursive: bool = True, *, reason: str | None = None):
    """Run ``fn`` uncompiled: inside compiled code it runs as itself at every call (PyTorch's
    ``torch.compiler.disable``). A compiled function or module given here is its original."""
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)
    if isinstance(fn, OptimizedModule):
        return fn._orig_mod
    fn = getattr(fn, "__wrapped__", fn) if hasattr(fn, "_ember_compiled") else fn
    return state.runs_eagerly(fn)


__all__ = ["compile", "reset", "disable", "list_backends", "CompiledFunction", "OptimizedModule"]
