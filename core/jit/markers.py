"""TorchScript's annotations and helpers, as they behave on code that runs as Python: programs that mark
functions with them (``@torch.jit.ignore``, ``torch.jit.is_scripting()``, ``fork``/``wait``) run unchanged."""
from __future__ import annotations

import builtins
import typing
from typing import Any, Callable, Final  # noqa: F401  (ember.jit.Final is typing.Final, as torch.jit.Final)


class Error(RuntimeError):
    """PyTorch's ``torch.jit.Error``: what a scripted program raises."""


def is_scripting() -> bool:
    """False: Ember runs scripted code as Python, so code guarded by ``if not torch.jit.is_scripting()`` runs."""
    return False


def _marked(fn: Callable, how: str) -> Callable:
    try:
        fn._ember_jit = how
    except (AttributeError, TypeError):  # builtins and bound methods take no attributes
        pass
    return fn


def ignore(drop=False, **kwargs):
    """Leave a function to Python (``@ignore`` or ``@ignore(drop=True)``); it runs as it is."""
    if callable(drop):
        return _marked(drop, "ignore")
    return lambda fn: _marked(fn, "drop" if drop else "ignore")


def unused(fn: Callable) -> Callable:
    return _marked(fn, "unused")


def export(fn: Callable) -> Callable:
    """Mark a method to be compiled along with ``forward``; it runs as Python."""
    return _marked(fn, "export")


def interface(obj):
    return obj


def script_if_tracing(fn: Callable) -> Callable:
    return fn


def annotate(the_type, the_value):
    """``the_value``: the type is for TorchScript's compiler."""
    return the_value


def Attribute(value, type=None):  # noqa: N802,A002  (PyTorch's name and signature)
    """``value``: the type is for TorchScript's compiler."""
    return value


def isinstance(obj, target_type) -> bool:  # noqa: A001  (PyTorch's name)
    """``builtins.isinstance`` that also takes TorchScript's container types: ``List[int]``, ``Dict[str, Tensor]``,
    ``Optional[Tensor]``, ``Tuple[int, str]``."""
    origin = typing.get_origin(target_type)
    if origin is None:
        return target_type is Any or builtins.isinstance(obj, target_type)
    arguments = typing.get_args(target_type)
    if origin is typing.Union:
        return builtins.any(isinstance(obj, option) for option in arguments)
    if not builtins.isinstance(obj, origin):
        return False
    if origin in (list, set, frozenset) and arguments:
        return builtins.all(isinstance(item, arguments[0]) for item in obj)
    if origin is tuple and arguments:
        if len(arguments) == 2 and arguments[1] is Ellipsis:
            return builtins.all(isinstance(item, arguments[0]) for item in obj)
        return len(obj) == len(arguments) and builtins.all(isinstance(i, t) for i, t in zip(obj, arguments))
    if origin is dict and arguments:
        return builtins.all(isinstance(k, arguments[0]) and isinstance(v, arguments[1]) for k, v in obj.items())
    return True


class Future:
    """The result of ``fork``: already there, since Ember runs the forked call at once (PyTorch's ``Future``)."""

    def __init__(self) -> None:
        self._done, self._value, self._error, self._callbacks = False, None, None, []

    def done(self) -> bool:
        return self._done

    def set_result(self, result) -> None:
        self._done, self._value = True, result
        for callback in self._callbacks:
            callback(self)

    def set_exception(self, error: BaseException) -> None:
        self._done, self._error = True, error

    def wait(self):
        if self._error is not None:
            raise self._error
        return self._value

    value = wait

    def then(self, callback: Callable) -> "Future":
        chained = Future()
        chained.set_result(callback(self))
        return chained

    def add_done_callback(self, callback: Callable) -> None:
        callback(self)


def fork(func: Callable, *args, **kwargs) -> Future:
    """Run ``func(*args, **kwargs)`` now and return its ``Future``: forked calls run eagerly, in order."""
    future = Future()
    try:
        future.set_result(func(*args, **kwargs))
    except Exception as error:  # noqa: BLE001  raised again by wait(), where PyTorch raises it
        future.set_exception(error)
    return future


def wait(future: Future):
    return future.wait()


def freeze(mod, preserved_attrs: list | None = None, optimize_numerics: bool = True):
    """The module itself: its parameters already are constants to the compiled program. As in PyTorch, only a
    scripted module in eval mode can be frozen."""
    from .script_module import ScriptModule

    if not builtins.isinstance(mod, ScriptModule):
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use torch.jit.script or "
                           "torch.jit.trace to script your 'nn.Module'.")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. Please call .eval() on "
                           "your module before freezing.")
    return mod


def optimize_for_inference(mod, other_methods: list | None = None):
    """``freeze`` of the module in eval mode."""
    from .script_module import script

    return freeze(script(mod).eval())


_fusion = {"onednn": False, "strategy": [("STATIC", 2), ("DYNAMIC", 10)]}


def enable_onednn_fusion(enabled: bool) -> None:
    _fusion["onednn"] = bool(enabled)


def onednn_fusion_enabled() -> bool:
    return _fusion["onednn"]


def set_fusion_strategy(strategy: list) -> list:
    """Accepted and returned as PyTorch does; Ember's fusion (``ember.compile``) has no such strategies."""
    previous, _fusion["strategy"] = _fusion["strategy"], list(strategy)
    return previous


class strict_fusion:  # noqa: N801  (PyTorch's name)
    """A context manager that TorchScript uses to assert fusion; in Python it does nothing."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return False


def export_opnames(m) -> list:
    """The schema ops a traced or loaded module's program calls."""
    graph = getattr(m, "graph", None)
    if graph is None or not hasattr(graph, "nodes"):
        raise RuntimeError("ember.jit.export_opnames: expected a traced or loaded module (ember.jit.trace, "
                           "ember.jit.load)")
    return sorted({node.target for node in graph.nodes})


class CompilationUnit:
    """TorchScript source compiled into functions: Ember runs the source as Python, with ``torch`` standing for
    ``ember`` in it (PyTorch's ``torch.jit.CompilationUnit(src)``; its functions are attributes)."""

    def __init__(self, lang: str | None = None, _frames_up: int = 0) -> None:
        self._functions: dict = {}
        if lang is not None:
            self.define(lang)

    def define(self, src: str, rcb=None, _frames_up: int = 0) -> None:
        import ember
        import textwrap

        namespace = {"torch": ember, "ember": ember, "Tensor": ember.Tensor, "List": typing.List,
                     "Dict": typing.Dict, "Tuple": typing.Tuple, "Optional": typing.Optional}
        exec(compile(textwrap.dedent(src), "<ember.jit.CompilationUnit>", "exec"), namespace)  # noqa: S102
        for name, value in namespace.items():
            if callable(value) and getattr(value, "__module__", None) is None and hasattr(value, "__code__"):
                self._functions[name] = value

    def __getattr__(self, name: str):
        functions = self.__dict__.get("_functions", {})
        if name in functions:
            return functions[name]
        raise AttributeError(f"CompilationUnit has no function '{name}'")

    def find_function(self, name: str):
        return self._functions.get(name)


__all__ = ["Error", "is_scripting", "ignore", "unused", "export", "interface", "script_if_tracing", "annotate",
           "Attribute", "isinstance", "Future", "fork", "wait", "freeze", "optimize_for_inference",
           "enable_onednn_fusion", "onednn_fusion_enabled", "set_fusion_strategy", "strict_fusion",
           "export_opnames", "CompilationUnit", "Final"]
