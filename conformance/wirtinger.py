"""Finite-difference checks of gradients where complex numbers are involved (PyTorch's Wirtinger convention).

For a real loss ``L``, PyTorch's gradient of a complex input ``z = x + iy`` is ``dL/dx + i dL/dy`` (the
conjugate Wirtinger derivative, doubled), and a backward pass given ``v`` for a complex output ``w`` treats it
as that same gradient of ``L`` with respect to ``w``. So the vector-Jacobian product of weights ``v`` is the
gradient of the real function ``L(inputs) = sum Re(conj(v) * f(inputs))``, and central differences of ``L``
along the real and imaginary part of every input element (or along random complex directions, fast mode)
check it. Real inputs and outputs are the special case with zero imaginary parts, so one check covers an op
with complex inputs, with complex outputs of real inputs (fft), and with real outputs of complex ones (abs).
"""
from __future__ import annotations

import numpy as np

import ember
from ember.autograd import no_grad

from .compare import mismatch
from .gradients import first_derivative, standard_normal, vjp
from .oracle import wide

#: Step and tolerances of the central differences, in complex128/float64 (those of ``ember.autograd.gradcheck``).
EPS = 1e-6
ATOL = 1e-5
RTOL = 1e-3


def involves_complex(fn, inputs) -> bool:
    """Whether a complex tensor is among the inputs or the outputs of ``fn`` (which a real gradcheck would miss)."""
    with no_grad():
        outputs = fn(*inputs)
    return any(t.dtype.is_complex for t in (*inputs, *outputs))


def loss(fn, inputs, weights: list) -> float:
    """``sum Re(conj(v) * f(inputs))`` over the outputs, on the host in complex128. ``fn`` runs in grad mode:
    it may itself differentiate (``check_second_order``)."""
    outputs = fn(*inputs)
    return float(sum(np.real(np.sum(np.conj(v) * wide(o))) for o, v in zip(outputs, weights)))


def _moved(inputs, index: int, step: np.ndarray) -> list:
    """``inputs`` with ``step`` added to input ``index`` (a fresh tensor of its dtype, on its device)."""
    x = inputs[index]
    moved = list(inputs)
    moved[index] = ember.tensor(wide(x) + step, dtype=x.dtype, device=x.device, requires_grad=x.requires_grad)
    return moved


def _directional(fn, inputs, weights, steps: dict) -> float:
    """Central difference of ``loss`` along ``steps`` (input index -> host array), per unit of EPS."""
    def shifted(sign):
        moved = list(inputs)
        for i, step in steps.items():
            moved = _moved(moved, i, sign * EPS * step)
        return loss(fn, moved, weights)
    return (shifted(1) - shifted(-1)) / (2 * EPS)


def _parts(dt) -> tuple:
    return (1, 1j) if dt.is_complex else (1,)


def numerical_gradient(fn, inputs, weights, index: int) -> np.ndarray:
    """``dL/dx + i dL/dy`` for every element of input ``index``, by central differences."""
    x = inputs[index]
    out = np.zeros(tuple(x.shape), np.complex128 if x.dtype.is_complex else np.float64)
    flat = out.reshape(-1)
    for k in range(flat.size):
        for part in _parts(x.dtype):
            step = np.zeros(flat.size, out.dtype)
            step[k] = part
            flat[k] += part * _directional(fn, inputs, weights, {index: step.reshape(out.shape)})
    return out


def analytical_gradients(fn, inputs, weights, outputs) -> list:
    """Autograd's vector-Jacobian products of ``weights`` (host arrays, one per output), as host arrays (zeros
    where an input is not reached)."""
    tensors = [ember.tensor(v, dtype=o.dtype, device=o.device) for v, o in zip(weights, outputs)]
    grads = vjp(fn, inputs, tensors)
    return [np.zeros(tuple(x.shape)) if g is None else wide(g) for g, x in zip(grads, inputs)]


def check(fn, inputs, rng, fast_mode: bool = False, what: str = "") -> None:
    """Raise AssertionError where autograd's gradients of ``fn`` disagree with central differences.

    ``inputs`` require grad (float64 or complex128 for precision); ``fast_mode`` compares the projection on
    one random complex direction instead of every element's gradient."""
    outputs = fn(*inputs)
    weights = [standard_normal(rng, tuple(o.shape), o.dtype) for o in outputs]
    analytical = analytical_gradients(fn, inputs, weights, outputs)
    if fast_mode:
        steps = {i: standard_normal(rng, tuple(x.shape), x.dtype) for i, x in enumerate(inputs)}
        numerical = _directional(fn, inputs, weights, steps)
        projected = float(sum(np.real(np.sum(np.conj(g) * steps[i])) for i, g in enumerate(analytical)))
        assert abs(projected - numerical) <= ATOL + RTOL * abs(numerical), (
            f"{what}projected gradient (Wirtinger): numerical {numerical:.8g}, analytical {projected:.8g}")
        return
    for i, x in enumerate(inputs):
        expected = numerical_gradient(fn, inputs, weights, i)
        problem = mismatch(analytical[i], expected, ember.complex128 if x.dtype.is_complex else ember.float64,
                           RTOL, ATOL)
        assert problem is None, f"{what}gradient of input {i} ({x.dtype.name}) against central differences: {problem}"


def check_second_order(fn, inputs, rng, what: str = "") -> None:
    """``check`` (fast mode) of the map (inputs, weights) -> vector-Jacobian product: second derivatives."""
    with no_grad():
        outputs = fn(*inputs)
    weights = [ember.tensor(standard_normal(rng, tuple(o.shape), o.dtype), dtype=o.dtype, device=o.device,
                            requires_grad=True) for o in outputs]
    check(first_derivative(fn, len(inputs)), [*inputs, *weights], rng, fast_mode=True, what=f"{what}second order: ")
