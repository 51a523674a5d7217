"""Finite-difference checks of analytical gradients, in float64 (PyTorch's gradcheck/gradgradcheck)."""
from __future__ import annotations

from ..dispatch.ops import F
from ..tensor import Tensor
from .gradients import grad as autograd_grad
from .grad_mode import no_grad


class GradcheckError(RuntimeError):
    """The analytical and numerical Jacobians differ."""


def _outputs(fn, inputs):
    out = fn(*inputs)
    return [o for o in (out if isinstance(out, (tuple, list)) else (out,))
            if isinstance(o, Tensor) and o._dtype.is_floating_point]


def _differentiable(inputs):
    return [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]


def _values(outputs):
    """Flat copies of the outputs: an output may alias the input being perturbed (an identity map)."""
    return [F.clone(o.detach()).reshape(-1) for o in outputs]


def _numerical_jacobian(fn, inputs, index, eps):
    """d(flattened outputs)/d(input[index]) by central differences, one input element at a time."""
    base = inputs[index].detach().clone().requires_grad_()  # contiguous, so the flat view below aliases it
    flat = base.data.view(-1)
    inputs = list(inputs)
    inputs[index] = base
    columns = []
    for k in range(flat.numel()):  # fn runs with grad mode on: it may itself differentiate (gradgradcheck)
        original = flat[k].item()
        flat[k] = original + eps
        plus = _values(_outputs(fn, inputs))
        flat[k] = original - eps
        minus = _values(_outputs(fn, inputs))
        flat[k] = original
        columns.append(F.cat([(p - m) / (2 * eps) for p, m in zip(plus, minus)]) if plus else None)
    return columns


def _analytical_jacobian(fn, inputs, index):
    """Row by row: the gradient of each output element with respect to input[index]."""
    outputs = _outputs(fn, inputs)
    rows = []
    for out in outputs:
        flat = out.reshape(-1)
        for k in range(flat.numel()):
            if not out.requires_grad:  # not connected to the graph (a constant derivative): zero Jacobian
                rows.append(F.zeros_like(inputs[index]).reshape(-1))
                continue
            (g,) = autograd_grad([flat[k]], [inputs[index]], retain_graph=True, allow_unused=True)
            rows.append(F.zeros_like(inputs[index]).reshape(-1) if g is None else g.reshape(-1))
    return rows


def _fast_check(fn, inputs, eps, atol, rtol):
    """Compare one random projection: v . J u by autograd against central differences along u.

    Two forward evaluations and one backward instead of a full Jacobian (PyTorch's fast mode)."""
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
    analytical = sum(F.sum(F.mul(g, directions[i])).item() for i, g in zip(diff, grads) if g is not None)

    def shifted(sign):
        moved = list(inputs)
        for i in diff:
            with no_grad():
                moved[i] = F.add(inputs[i].detach(), F.mul(directions[i], sign * eps))
            moved[i].requires_grad_()
        return sum(F.sum(F.mul(o.detach(), w)).item() for o, w in zip(_outputs(fn, moved), weights))
    numerical = (shifted(1) - shifted(-1)) / (2 * eps)
    if abs(analytical - numerical) > atol + rtol * abs(numerical):
        return f"projected Jacobian mismatch: numerical {numerical:.8g}, analytical {analytical:.8g}"
    return None


def gradcheck(fn, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, fast_mode: bool = False) -> bool:
    """True when autograd's Jacobian of ``fn`` matches central differences for every input requiring grad.

    Inputs should be float64 tensors; anything else loses the precision finite differences need.
    ``fast_mode`` compares a random projection of the Jacobian instead of every entry.
    """
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    for index in _differentiable(inputs):
        if inputs[index]._dtype.name != "float64":
            raise GradcheckError(f"gradcheck: input {index} is {inputs[index]._dtype.name}; use float64 inputs")
    if fast_mode:
        problem = _fast_check(fn, inputs, eps, atol, rtol)
        if problem is not None and raise_exception:
            raise GradcheckError(problem)
        return problem is None
    for index in _differentiable(inputs):
        if inputs[index]._dtype.name != "float64":
            raise GradcheckError(f"gradcheck: input {index} is {inputs[index]._dtype.name}; use float64 inputs")
        numerical = _numerical_jacobian(fn, inputs, index, eps)
        analytical = _analytical_jacobian(fn, inputs, index)
        for k, column in enumerate(numerical):
            for row_index, row in enumerate(analytical):
                a = row[k].item()
                n = column[row_index].item() if column is not None else 0.0
                if abs(a - n) > atol + rtol * abs(n):
                    if raise_exception:
                        raise GradcheckError(f"Jacobian mismatch for output element {row_index} with respect to "
                                             f"input {index}, element {k}: numerical {n:.8g}, analytical {a:.8g}")
                    return False
    return True


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
