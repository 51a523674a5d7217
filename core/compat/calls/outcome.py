"""Make one call on one framework, and judge two frameworks' outcomes of the same call.

Agreement means: both accept with the same result (values, shape, dtype; and the same state of every
tensor the call writes to), or both reject with exceptions of the same kind (Ember's is an instance of the
built-in class PyTorch's derives from: RuntimeError, TypeError, ValueError, IndexError, ...).
"""
from __future__ import annotations

import builtins
import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from .values import Value


@dataclass(frozen=True)
class Call:
    """One way of calling an op: ``surface`` is ``function`` (``namespace.name(*args, **kwargs)``) or
    ``method`` (``args[0].name(*args[1:], **kwargs)``). ``random``: its values are unspecified (a sampling op,
    ``empty``), so only shapes and dtypes are compared; ``unique_outputs``: the outputs whose values are
    compared, where the others are unique only up to sign or basis (``OpDef.gauge``)."""
    category: str
    surface: str
    namespace: str
    name: str
    args: tuple[Value, ...]
    kwargs: tuple[tuple[str, Value], ...] = ()
    random: bool = False
    unique_outputs: tuple[int, ...] | None = None  # where only these outputs are unique (eigenvectors are not)

    def __str__(self) -> str:
        args = [str(a) for a in self.args] + [f"{k}={v}" for k, v in self.kwargs]
        if self.surface == "python":
            return _python_text(self.name, args)
        if self.surface == "method":
            return f"{args[0]}.{self.name}({', '.join(args[1:])})"
        prefix = f"{self.namespace}." if self.namespace else ""
        return f"{prefix}{self.name}({', '.join(args)})"


def _python_text(name: str, args: list[str]) -> str:
    if name == "setitem":
        return f"{args[0]}[{args[1]}] = {args[2]}"
    if name == "in":
        return f"{args[1]} in {args[0]}"
    if len(args) == 2 and not name[0].isalpha():
        return f"{args[0]} {name} {args[1]}"
    if name.endswith("_"):
        return f"{args[0]}.{name}({', '.join(args[1:])})"
    return f"{name}({', '.join(args)})"


@dataclass
class Outcome:
    result: Any = None
    error: BaseException | None = None
    written: tuple = ()  # the tensors given to the call, after it ran

    @property
    def accepted(self) -> bool:
        return self.error is None


def function(lib, namespace: str, name: str):
    """``lib.namespace.name``, or None where the library lacks it."""
    owner = lib
    for part in filter(None, namespace.split(".")):
        owner = getattr(owner, part, None)
        if owner is None:
            return None
    return getattr(owner, name, None)


def exists(lib, call: Call) -> bool:
    if call.surface == "method":
        return callable(getattr(lib.Tensor, call.name, None))
    if call.surface == "python":
        return True
    return callable(function(lib, call.namespace, call.name))


class Unbuildable(Exception):
    """The library cannot even hold one of the call's values (a dtype it, or the device, lacks)."""


def run(lib, call: Call, device: str | None = None) -> Outcome:
    """Make ``call`` on ``lib``, with its tensors on ``device``."""
    try:
        args = [a.make(lib, device) for a in call.args]
        kwargs = {k: v.make(lib, device) for k, v in call.kwargs}
    except Exception as exc:  # noqa: BLE001 - a dtype the library or the device lacks: the call cannot be made
        raise Unbuildable(str(exc)) from exc
    if call.random:
        lib.manual_seed(0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if call.surface == "method":
                result = getattr(args[0], call.name)(*args[1:], **kwargs)
            elif call.surface == "python":
                from .protocols import PYTHON

                result = PYTHON[call.name](*args, **kwargs)
            else:
                result = function(lib, call.namespace, call.name)(*args, **kwargs)
            if device not in (None, "cpu"):  # a device reports the checks queued with the call at the first read
                _plain((result, args, tuple(kwargs.values())))
    except Exception as exc:  # noqa: BLE001 - the exception is the outcome
        return Outcome(error=exc)
    given = tuple(a for a in args + list(kwargs.values()) if isinstance(a, lib.Tensor))
    return Outcome(result=result, written=given)


def builtin_kind(error: BaseException) -> type:
    """The built-in exception class an exception is an instance of (``torch.linalg.LinAlgError`` ->
    RuntimeError)."""
    for cls in type(error).__mro__:
        if getattr(builtins, cls.__name__, None) is cls:
            return cls
    return Exception


def judge(torch_outcome: Outcome, ember_outcome: Outcome, *, values: bool = True,
          unique_outputs: tuple[int, ...] | None = None) -> str | None:
    """None where the outcomes agree, else what differs."""
    t, e = torch_outcome, ember_outcome
    if t.accepted and not e.accepted:
        return f"PyTorch accepts, Ember raises {type(e.error).__name__}: {_first_line(e.error)}"
    if e.accepted and not t.accepted:
        return f"PyTorch raises {type(t.error).__name__} ({_first_line(t.error)}), Ember accepts"
    if not t.accepted:
        kind = builtin_kind(t.error)
        if isinstance(e.error, kind):
            return None
        return (f"PyTorch raises {kind.__name__} ({_first_line(t.error)}), Ember raises "
                f"{type(e.error).__name__} ({_first_line(e.error)})")
    if unique_outputs is not None and isinstance(t.result, tuple) and isinstance(e.result, tuple) \
            and len(t.result) == len(e.result):
        difference = next((d for i, (tv, ev) in enumerate(zip(t.result, e.result))
                           if (d := differ(tv, ev, values and i in unique_outputs)) is not None), None)
    else:
        difference = differ(t.result, e.result, values)
    if difference is None and len(t.written) == len(e.written):
        for position, (tw, ew) in enumerate(zip(t.written, e.written)):
            difference = differ(tw, ew, values)
            if difference is not None:
                difference = f"tensor argument {position} after the call: {difference}"
                break
    return difference


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:160] if text else ""


def _plain(value: Any) -> Any:
    """A framework's value as plain Python / NumPy, so that two frameworks' values compare."""
    module = type(value).__module__.split(".")[0]
    if module in ("torch", "ember"):
        name = type(value).__name__
        if hasattr(value, "detach") and hasattr(value, "shape"):
            layout = str(getattr(value, "layout", "strided")).split(".")[-1]
            if layout != "strided":  # sparse: its layout, then its values as a dense tensor
                return ("layout", layout), _plain(value.to_dense())
            array = value.detach().cpu().numpy() if hasattr(value, "cpu") else value.numpy()
            return ("tensor", str(value.dtype).split(".")[-1], array)
        if name == "Size":
            return tuple(value)
        if name == "dtype":
            return ("dtype", str(value).split(".")[-1])
        if isinstance(value, tuple):  # named tuples (return_types)
            return tuple(_plain(v) for v in value)
        if name == "device":
            return ("device", value.type)
        return ("object", name)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    return value


def differ(torch_value: Any, ember_value: Any, values: bool = True) -> str | None:
    return _differ(_plain(torch_value), _plain(ember_value), values)


def _differ(t: Any, e: Any, values: bool) -> str | None:
    if isinstance(t, tuple) and t[:1] == ("tensor",):
        if not (isinstance(e, tuple) and e[:1] == ("tensor",)):
            return f"PyTorch returns a tensor, Ember {_kind(e)}"
        if t[1] != e[1]:
            return f"dtype {t[1]} (PyTorch) vs {e[1]} (Ember)"
        if t[2].shape != e[2].shape:
            return f"shape {t[2].shape} (PyTorch) vs {e[2].shape} (Ember)"
        if values and not _close(t[2], e[2]):
            return f"values differ: PyTorch {_brief(t[2])}, Ember {_brief(e[2])}"
        return None
    if isinstance(t, (list, tuple)):
        if not isinstance(e, (list, tuple)) or len(t) != len(e):
            return f"PyTorch returns {_kind(t)}, Ember {_kind(e)}"
        for tv, ev in zip(t, e):
            difference = _differ(tv, ev, values)
            if difference is not None:
                return difference
        return None
    if isinstance(t, float) and isinstance(e, (int, float)) and not isinstance(e, bool):
        return None if (not values or math.isclose(t, e, rel_tol=1e-5, abs_tol=1e-6)
                        or (math.isnan(t) and math.isnan(e))) else f"{t!r} (PyTorch) vs {e!r} (Ember)"
    if type(t) is not type(e) and not (isinstance(t, int) and isinstance(e, int) and type(t) is int):
        return f"PyTorch returns {_kind(t)}, Ember {_kind(e)}"
    if values and t != e:
        return f"{t!r} (PyTorch) vs {e!r} (Ember)"
    return None


def _close(t: np.ndarray, e: np.ndarray) -> bool:
    if t.dtype.kind in "biu" or e.dtype.kind in "biu":
        return bool(np.array_equal(t, e))
    wide = np.complex128 if t.dtype.kind == "c" or e.dtype.kind == "c" else np.float64  # both parts of complex
    return bool(np.allclose(t.astype(wide), e.astype(wide), rtol=1e-4, atol=1e-5, equal_nan=True))


def _brief(array: np.ndarray) -> str:
    return " ".join(np.array2string(array, threshold=8, precision=4).split())


def _kind(value: Any) -> str:
    if isinstance(value, tuple) and value[:1] == ("tensor",):
        return "a tensor"
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)}"
    return type(value).__name__
