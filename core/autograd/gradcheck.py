"""Finite-difference checks of analytical gradients, in double precision (PyTorch's gradcheck/gradgradcheck).

Complex numbers are checked as pairs of reals, as PyTorch checks them: a complex output is two real outputs, its
real and imaginary parts (autograd reaches them by backpropagating 1 and 1j), and a complex input is two real
inputs, moved along 1 and 1j, whose derivatives are the real and imaginary parts of the gradient autograd gives
it (the conjugate Wirtinger convention: for a real loss L of z = x + iy, grad = dL/dx + i dL/dy).
"""
from __future__ import annotations

from ..dispatch.ops import F
from ..tensor import Tensor
from .gradients import grad as autograd_grad
from .grad_mode import no_grad

_DOUBLE = ("float64", "complex128")


class GradcheckError(RuntimeError):
    """The analytical and numerical Jacobians differ."""


def _outputs(fn, inputs):
    out = fn(*inputs)
    return [o for o in (out if isinstance(out, (tuple, list)) else (out,))
            if isinstance(o, Tensor) and o._dtype.is_inexact]


def _differentiable(inputs):
    return [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]


def _units(t) -> tuple:
    """The real directions of one element of ``t``: 1, and 1j where it is complex."""
    return (1.0, 1j) if t._dtype.is_complex else (1.0,)


def _component(value, unit) -> float:
    """The part of a (possibly complex) number along ``unit``: its real part for 1, its imaginary part for 1j."""
    return (value * unit.conjugate()).real


def _host(outputs) -> list:
    """The outputs' values as one flat list of Python numbers (copies: an output may alias a perturbed input)."""
    return [v for o in outputs for v in F.reshape(o.detach(), (-1,)).tolist()]


def _real_dot(a, b) -> float:
    """The dot product of two tensors as vectors of reals (complex entries count as pairs): Re(sum(conj(a) b))."""
    return sum((x.conjugate() * y).real for x, y in zip(_host([a]), _host([b])))


def _numerical_jacobian(fn, inputs, index, eps):
    """d(flattened outputs)/d(input[index]) by central differences: one column per input element and direction
    (1, and 1j for a complex input), each the list of the outputs' (possibly complex) derivatives."""
    base = inputs[index].detach().clone().requires_grad_()  # contiguous, so the flat view below aliases it
    flat = base.data.view(-1)
    inputs = list(inputs)
    inputs[index] = base
    columns = []
    for k in range(flat.numel()):  # fn runs with grad mode on: it may itself differentiate (gradgradcheck)
        original = flat[k].tolist()
        for direction in _units(base):
            flat[k] = original + eps * direction
            plus = _host(_outputs(fn, inputs))
            flat[k] = original - eps * direction
            minus = _host(_outputs(fn, inputs))
            flat[k] = original
            columns.append([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
    return columns


def _analytical_jacobian(fn, inputs, index):
    """Row by row, one per output element and part (real, and imaginary for a complex output): the gradient of
    that part with respect to input[index], as ``(element, unit, gradient values)``."""
    outputs = _outputs(fn, inputs)
    zeros = [0.0] * inputs[index].numel()
    rows = []
    element = 0
    for out in outputs:
        flat = F.reshape(out, (-1,))
        for k in range(flat.numel()):
            for unit in _units(out):
                g = None
                if out.requires_grad:  # else not connected to the graph (a constant derivative): zero Jacobian
                    (g,) = autograd_grad([flat[k]], [inputs[index]], [unit], retain_graph=True, allow_unused=True)
                rows.append((element, unit, zeros if g is None else _host([g])))
            element += 1
    return rows


def _first_mismatch(numerical, analytical, index, directions, atol, rtol) -> str | None:
    """PyTorch's wording for the first entry where the Jacobians differ, naming the parts compared where an
    output or the input is complex; None where they agree."""
    part = {1.0: "real", 1j: "imaginary"}
    for column_index, column in enumerate(numerical):
        k, direction = divmod(column_index, len(directions))
        direction = directions[direction]
        for element, unit, gradient in analytical:
            a = _component(gradient[k], direction)
            n = _component(column[element], unit)
            if abs(a - n) > atol + rtol * abs(n):
                prefix = f"While considering the {part[unit]} part of complex outputs only, " if unit == 1j else ""
                along = f" ({part[direction]} part)" if len(directions) == 2 else ""
                return (f"{prefix}Jacobian mismatch for output element {element} with respect to input {index}, "
                        f"element {k}{along}: numerical {n:.8g}, analytical {a:.8g}")
    return None


def _fast_check(fn, inputs, eps, atol, rtol):
    """Compare one random projection: v . J u by autograd against central differences along u.

    Two forward evaluations and one backward instead of a full Jacobian (PyTorch's fast mode). Complex vectors
    count as vectors of reals (pairs), so the projection is Re(sum(conj(v) J u))."""
    diff = _differentiable(inputs)
    outputs = _outputs(fn, inputs)
    if not outputs:
        return None
    weights = [F.rand_normal(tuple(o.shape), dtype=o.dtype, device=o.device) for o in outputs]
    directions = {i: F.rand_normal(tuple(inputs[i].shape), dtype=inputs[i].dtype, device=inputs[i].device)
                  for i in diff}
    connected = [(o, w) for o, w in zip(outputs, weights) if o.requires_grad]  # the others have zero Jacobian
    grads = autograd_grad([o for o, _ in connected], [inputs[i] for i in diff], [w for _, w in connected],
                          allow_unused=True) if connected else [None] * len(diff)
    analytical = sum(_real_dot(g, directions[i]) for i, g in zip(diff, grads) if g is not None)

    def shifted(sign):
        moved = list(inputs)
        for i in diff:
            with no_grad():
                moved[i] = F.add(inputs[i].detach(), F.mul(directions[i], sign * eps))
            moved[i].requires_grad_()
        return sum(_real_dot(w, o) for o, w in zip(_outputs(fn, moved), weights))
    numerical = (shifted(1) - shifted(-1)) / (2 * eps)
    if abs(analytical - numerical) > atol + rtol * abs(numerical):
        return f"projected Jacobian mismatch: numerical {numerical:.8g}, analytical {analytical:.8g}"
    return None


def _check_double(inputs) -> None:
    for index in _differentiable(inputs):
        if inputs[index]._dtype.name not in _DOUBLE:
            raise GradcheckError(f"gradcheck: input {index} is {inputs[index]._dtype.name}; use float64 or "
                                 f"complex128 inputs")


def gradcheck(fn, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, fast_mode: bool = False) -> bool:
    """True when autograd's Jacobian of ``fn`` matches central differences for every input requiring grad.

    Inputs should be float64 or complex128 tensors; anything else loses the precision finite differences need.
    ``fast_mode`` compares a random projection of the Jacobian instead of every entry.
    """
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    _check_double(inputs)
    if fast_mode:
        problem = _fast_check(fn, inputs, eps, atol, rtol)
    else:
        problem = None
        for index in _differentiable(inputs):
            problem = _first_mismatch(_numerical_jacobian(fn, inputs, index, eps),
                                      _analytical_jacobian(fn, inputs, index), index, _units(inputs[index]),
                                      atol, rtol)
            if problem is not None:
                break
    if problem is not None and raise_exception:
        raise GradcheckError(problem)
    return problem is None


def gradgradcheck(fn, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  raise_exception: bool = True, fast_mode: bool = False) -> bool:
    """gradcheck of the map (inputs, grad_outputs) -> vector-Jacobian product: second derivatives."""
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    outputs = _outputs(fn, inputs)
    if grad_outputs is None:
        grad_outputs = [F.rand_normal(tuple(o.shape), dtype=o.dtype, device=o.device).requires_grad_()
                        for o in outputs]
    diff = _differentiable(inputs)

    def first_derivative(*args):
        xs, gs = args[:len(inputs)], args[len(inputs):]
        # outputs that do not depend on the inputs (lu_unpack's permutation) have no derivative to check
        pairs = [(o, g) for o, g in zip(_outputs(fn, xs), gs) if o.requires_grad]
        grads = autograd_grad([o for o, _ in pairs], [xs[i] for i in diff], [g for _, g in pairs], create_graph=True,
                              allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivative, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, fast_mode=fast_mode)
