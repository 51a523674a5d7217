"""``detect_anomaly()``: after each backward step, check for NaN/inf and name the forward op."""
from __future__ import annotations

import traceback

from ..dispatch.ops import F
from .grad_mode import state


class detect_anomaly:
    """Context manager: gradients are checked for NaN/inf and the offending forward op is named,
    with the stack where it ran."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan

    def __enter__(self):
        self._saved = state.anomaly
        state.anomaly = self.check_nan
        return self

    def __exit__(self, *exc) -> None:
        state.anomaly = self._saved


def set_detect_anomaly(mode: bool) -> None:
    state.anomaly = bool(mode)


def is_anomaly_enabled() -> bool:
    return state.anomaly


_forward_stacks: "weakref.WeakKeyDictionary" = None


def remember_forward(node) -> None:
    """Keep the Python stack of the forward call, to show when its backward goes wrong."""
    global _forward_stacks
    if _forward_stacks is None:
        import weakref
        _forward_stacks = weakref.WeakKeyDictionary()
    _forward_stacks[node] = "".join(traceback.format_stack(limit=12)[:-3])


def check_gradients(node, grads) -> None:
    for i, grad in enumerate(grads):
        if grad is None or not grad._dtype.is_floating_point:
            continue
        if not bool(F.all(F.isfinite(grad))):
            bad = "nan" if bool(F.any(F.isnan(grad))) else "inf"
            where = _forward_stacks.get(node) if _forward_stacks is not None else None
            trace = f"\nThe forward call was made at:\n{where}" if where else ""
            raise RuntimeError(f"Function '{node.name()}' returned {bad} values in its {i}th output "
                               f"(forward op: {node.forward_op}).{trace}")
