"""The strong-Wolfe line search of LBFGS (Nocedal and Wright, Numerical Optimization, algorithms 3.5 and 3.6).

Steps and function values are Python floats; gradients are flat Ember tensors. ``evaluate(t)`` returns
the loss and flat gradient at ``x + t * d`` (and leaves the parameters at ``x``).
"""
from __future__ import annotations

import math
from typing import Callable

from ..dispatch.ops import F
from ..tensor import Tensor

Evaluate = Callable[[float], "tuple[float, Tensor]"]


def dot(a: Tensor, b: Tensor) -> float:
    """The inner product of two flat tensors, as a Python float (one host read)."""
    return F.dot(a, b).item()


def max_abs(a: Tensor) -> float:
    """The largest magnitude in ``a``, as a Python float (one host read)."""
    return F.amax(F.abs(a)).item()


def cubic_minimum(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
                  bounds: tuple[float, float] | None = None) -> float:
    """The minimiser of the cubic through two points with values ``f`` and slopes ``g``, clamped to
    ``bounds`` (default: the interval between the points); the midpoint when the cubic has none."""
    low, high = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    discriminant = d1 ** 2 - g1 * g2
    if discriminant < 0:
        return (low + high) / 2.0
    d2 = math.sqrt(discriminant)
    if x1 <= x2:
        minimum = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        minimum = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(minimum, low), high)


class _Point:
    """One trial step of the search: the step, the loss there, the flat gradient and the slope along ``d``."""
    __slots__ = ("t", "f", "g", "gtd")

    def __init__(self, t: float, f: float, g: Tensor, gtd: float) -> None:
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def strong_wolfe(evaluate: Evaluate, d: Tensor, t: float, f: float, g: Tensor, gtd: float, *, c1: float = 1e-4,
                 c2: float = 0.9, tolerance_change: float = 1e-9, max_ls: int = 25,
                 d_norm: float | None = None) -> tuple[float, Tensor, float, int]:
    """Find a step ``t`` along ``d`` that satisfies the strong Wolfe conditions (sufficient decrease with
    ``c1``, curvature with ``c2``) starting from ``t``; return ``(loss, flat_grad, t, evaluations)``.
    ``d_norm`` is ``max |d|``, where the caller knows it already."""
    if d_norm is None:
        d_norm = max_abs(d)
    start = _Point(0.0, f, g, gtd)
    evaluations = 0

    def trial(step: float) -> _Point:
        nonlocal evaluations
        loss, grad = evaluate(step)
        evaluations += 1
        return _Point(step, loss, grad, dot(grad, d))

    # Bracketing: grow the step until an interval is known to hold an acceptable one.
    previous, current = start, trial(t)
    bracket: list[_Point] | None = None
    iterations = 0
    while iterations < max_ls:
        if current.f > f + c1 * current.t * gtd or (iterations > 1 and current.f >= previous.f):
            bracket = [previous, current]
            break
        if abs(current.gtd) <= -c2 * gtd:
            return current.f, current.g, current.t, evaluations
        if current.gtd >= 0:
            bracket = [previous, current]
            break
        step = cubic_minimum(previous.t, previous.f, previous.gtd, current.t, current.f, current.gtd,
                             bounds=(current.t + 0.01 * (current.t - previous.t), current.t * 10))
        previous, current = current, trial(step)
        iterations += 1
    if bracket is None:  # out of evaluations while still growing
        bracket = [start, current]

    # Zoom: shrink the bracket by cubic interpolation until a point satisfies both conditions.
    low, high = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    insufficient_progress = False
    while iterations < max_ls:
        lo_t, hi_t = min(bracket[0].t, bracket[1].t), max(bracket[0].t, bracket[1].t)
        if (hi_t - lo_t) * d_norm < tolerance_change:
            break
        step = cubic_minimum(bracket[0].t, bracket[0].f, bracket[0].gtd, bracket[1].t, bracket[1].f, bracket[1].gtd)
        # keep the trial away from the bracket's ends, or the search makes no progress
        margin = 0.1 * (hi_t - lo_t)
        if min(hi_t - step, step - lo_t) < margin:
            if insufficient_progress or step >= hi_t or step <= lo_t:
                step = hi_t - margin if abs(step - hi_t) < abs(step - lo_t) else lo_t + margin
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        point = trial(step)
        iterations += 1
        if point.f > f + c1 * point.t * gtd or point.f >= bracket[low].f:
            bracket[high] = point
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
        else:
            if abs(point.gtd) <= -c2 * gtd:
                bracket[low] = point
                break
            if point.gtd * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = point
    best = bracket[low]
    return best.f, best.g, best.t, evaluations
