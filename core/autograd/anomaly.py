"""``detect_anomaly()``: after each backward step, check for NaN/inf and name the forward op.

The forward side is a dispatch mode: it sees every op call, whichever path the call takes, and keeps
the Python stack of each call that left graph nodes behind, for the engine's error message.
"""
from __future__ import annotations

import traceback
import weakref

from ..dispatch.execution.modes import DispatchMode, tensors_in
from ..dispatch.ops import F
from .graph import AccumulateGrad
from .grad_mode import state

_forward_stacks: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class AnomalyMode(DispatchMode):
    """Remembers where in the program each recorded op was called."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        known = {id(a.grad_fn) for a in tensors_in(args, kwargs) if a.grad_fn is not None}
        result = func(*args, **(kwargs or {}))
        new = [t.grad_fn for t in tensors_in((result,), None) if t.grad_fn is not None]
        if new:
            stack = "".join(traceback.format_stack(limit=14)[:-2])
            _remember(new, known, stack)
        return result


def _remember(nodes: list, known: set, stack: str) -> None:
    """Give ``stack`` to the nodes this call made: the outputs' nodes and, for a call that decomposed
    into recorded inner ops, the nodes behind them, down to the inputs' own nodes."""
    pending = list(nodes)
    while pending:
        node = pending.pop()
        if node is None or id(node) in known or node.__class__ is AccumulateGrad or node in _forward_stacks:
            continue
        _forward_stacks[node] = stack
        pending.extend(edge[0] for edge in node.next_edges if edge is not None)


class detect_anomaly:
    """Context manager: gradients are checked for NaN/inf and the offending forward op is named,
    with the stack where it ran."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        self._mode = AnomalyMode()

    def __enter__(self):
        self._saved = (state.anomaly, _switches["enabled"], _switches["check_nan"])
        _switches.update(enabled=True, check_nan=self.check_nan)
        state.anomaly = self.check_nan
        self._mode.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._mode.__exit__(*exc)
        state.anomaly, _switches["enabled"], _switches["check_nan"] = self._saved


_global_mode = AnomalyMode()
# PyTorch's two switches: anomaly mode (forward stacks kept for the error messages) and, within it, the check
# of gradients for NaN/inf, which the engine reads as ``state.anomaly``
_switches = {"enabled": False, "check_nan": True}


def set_detect_anomaly(mode: bool, check_nan: bool = True) -> None:
    """Turn anomaly mode on or off for the whole process; ``check_nan`` also checks gradients for NaN/inf."""
    _switches.update(enabled=bool(mode), check_nan=bool(check_nan))
    state.anomaly = bool(mode) and bool(check_nan)
    _global_mode.__exit__(None, None, None)
    if mode:
        _global_mode.__enter__()


def is_anomaly_enabled() -> bool:
    return _switches["enabled"]


def is_anomaly_check_nan_enabled() -> bool:
    return _switches["check_nan"]


def check_gradients(node, grads) -> None:
    for i, grad in enumerate(grads):
        if grad is None or not grad._dtype.is_inexact:
            continue
        if not bool(F.all(F.isfinite(grad))):
            bad = "nan" if bool(F.any(F.isnan(grad))) else "inf"
            where = _forward_stacks.get(node)
            trace = f"\nThe forward call was made at:\n{where}" if where else ""
            raise RuntimeError(f"Function '{node.name()}' returned {bad} values in its {i}th output "
                               f"(forward op: {node.forward_op}).{trace}")
