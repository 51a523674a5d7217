"""The output tangents of one op call, by the op's ``jvp`` rule (``OpDef.jvp``, ``JVP_RULES``).

"elementwise": the Jacobian is diagonal, so each input's derivative applied to that input's tangent (in place
of the gradient) is its share of the output's tangent. "linear": the op applied to the tangents. "multilinear":
the sum over inputs of the op with that input replaced by its tangent (a ``bias`` is added, not multiplied).
A function ``jvp(tangents, **values)``, given ``result`` too where it names it: the op's own formula.
None: derived from the op's derivative, which every differentiable op has, by the double-VJP construction:
the derivative is linear in the gradient ``g``, so ``J t`` is the gradient with respect to ``g`` of
``<Jᵀ g, t>`` (one derivative call and one backward through it).
"""
from __future__ import annotations

from ..autograd.engine import _fit
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..autograd.graph import derivative_inputs, run_derivative, tensor_inputs_of
from ..dispatch.ops import F
from ..dispatch.ops.elementwise.complex_support import conj
from . import autograd_calls, levels
from .batched import requiring_grad, unwrap_all, with_levels, zeros_leaf_like


def output_tangents(op, values: list, outputs: tuple, tangents: list) -> list:
    """One tangent (or None, meaning 0) per output of a call of ``op`` whose inputs have ``tangents`` (one per
    tensor parameter, a list for a list parameter; None where an input has none)."""
    rule = op.jvp
    if rule == "zero":
        return [F.zeros_like(out) if _floating(out) else None for out in outputs]
    if callable(rule):
        named_values = {p.name: v for p, v in zip(op.params, values)}
        if "result" in derivative_inputs(rule):
            named_values["result"] = outputs[0] if len(outputs) == 1 else outputs
        result = rule(tangents, **named_values)
        return list(result) if isinstance(result, (tuple, list)) else [result]
    if rule == "linear":
        return _as_list(_op_on(op, values, _with_zeros(op, values, tangents)))
    if rule == "multilinear":
        return [_multilinear(op, values, tangents)]
    if rule == "elementwise" and len(outputs) == 1 and not op.list_positions and not _complex_call(values, outputs):
        return [_fitted_to(outputs[0], _elementwise(op, values, outputs, tangents))]
    return _derived(op, values, outputs, tangents)


def _floating(t) -> bool:
    """Whether ``t`` is a tensor that carries a tangent: floating or complex."""
    return hasattr(t, "_dtype") and t._dtype.is_inexact


def _complex_call(values: list, outputs: tuple) -> bool:
    """Whether a complex tensor takes part. The derivative applied to a tangent is then no JVP: the derivative
    conjugates (PyTorch's convention), and the conjugation is not undone for ops that are not holomorphic (abs),
    so such calls take the double-VJP construction, which is exact for them."""
    return any(hasattr(v, "_dtype") and v._dtype.is_complex for v in (*values, *outputs))


def _as_list(result) -> list:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _op_on(op, values: list, replaced: dict):
    """``op`` called on ``values`` with the tensor parameters in ``replaced`` (position -> value) swapped."""
    values = [replaced.get(i, v) for i, v in enumerate(values)]
    function = getattr(F, op.name)
    return function(*[v for p, v in zip(op.params, values) if not p.kw_only],
                    **{p.name: v for p, v in zip(op.params, values) if p.kw_only})


def _zero_or(tangent, value):
    return tangent if tangent is not None else F.zeros_like(value)


def _with_zeros(op, values: list, tangents: list) -> dict:
    """Every operand replaced by its tangent, or zeros where it has none; indices (``Index`` parameters) stay."""
    replaced = {}
    for i, tangent in zip(op.tensor_positions, tangents):
        v = values[i]
        if op.params[i].type.startswith("Index"):
            continue
        if isinstance(v, (list, tuple)):
            replaced[i] = [_zero_or(t, x) if hasattr(x, "_data") else x for t, x in zip(tangent, v)]
        elif hasattr(v, "_data"):
            replaced[i] = _zero_or(tangent, v)
    return replaced


def _multilinear(op, values: list, tangents: list):
    """Linear in each operand alone; a ``bias`` operand is added: its term is the op on zeros and the bias's
    tangent (exact, where a difference of two calls would cancel), and the other terms leave it out."""
    bias = op.param_index.get("bias")
    total = None
    for i, tangent in zip(op.tensor_positions, tangents):
        if tangent is None:
            continue
        if i == bias:
            replaced = {j: F.zeros_like(values[j]) for j in op.tensor_positions
                        if j != i and hasattr(values[j], "_data")}
        else:
            replaced = {} if bias is None else {bias: None}
        replaced[i] = tangent
        term = _op_on(op, values, replaced)
        total = term if total is None else F.add(total, term)
    return total


def _elementwise(op, values: list, outputs: tuple, tangents: list):
    total = None
    count = len(tangents)
    for k, tangent in enumerate(tangents):
        if tangent is None:
            continue
        mask = tuple(j == k for j in range(count))
        term = run_derivative(op, values, outputs, [tangent], mask)[k]
        if term is not None:
            total = term if total is None else F.add(total, term)
    return total


def _fitted_to(out, tangent):
    """A tangent with the output's shape and dtype (an input's tangent broadcasts to the output's shape)."""
    if tangent is None:
        return None
    if tuple(tangent.shape) != tuple(out.shape):
        tangent = F.expand(tangent, tuple(out.shape))
    return F.to_dtype(tangent, out.dtype) if tangent.dtype is not out.dtype else tangent


def _tangent_levels(tangents: list) -> dict:
    """Level -> batch size of the vmap levels any of ``tangents`` is batched at."""
    running = levels.vmap_sizes()
    found = {}
    for t in tangents:
        if t is not None:
            for level in unwrap_all(t)[1]:
                found[level] = running[level]
    return found


def _wanting_grad(op, values: list, tangents: list) -> list:
    """``values`` with every input that has a tangent made to require grad, as derivatives test."""
    values = list(values)
    for i, tangent in zip(op.tensor_positions, tangents):
        v = values[i]
        if isinstance(v, (list, tuple)):
            values[i] = [requiring_grad(x) if t is not None else x for x, t in zip(v, tangent)]
        elif tangent is not None:
            values[i] = requiring_grad(v)
    return values


def _derived(op, values: list, outputs: tuple, tangents: list) -> list:
    """J t as the gradient of <Jᵀ g, t> with respect to g, g a zero cotangent that requires grad."""
    inputs = tensor_inputs_of(op, values)
    flat = [t for tangent in tangents for t in (tangent if isinstance(tangent, list) else [tangent])]
    # a graph for the tangents only where something they come from is differentiated (the stand-ins made to
    # require grad below are not): otherwise jvp's tangents would require grad, which PyTorch's do not
    keep_graph = is_grad_enabled() and any(getattr(t, "requires_grad", False) for t in (*flat, *inputs))
    with enable_grad():
        sizes = _tangent_levels(flat)  # a batch of tangents through unbatched values makes batched ones
        cotangents = [zeros_leaf_like(with_levels(out, sizes)) if _floating(out) else None for out in outputs]
        wanting = _wanting_grad(op, values, tangents)  # derivatives skip the inputs that do not require grad
        vjps = run_derivative(op, wanting, outputs, cotangents, tuple(t is not None for t in flat))
        total = None
        for vjp, tangent, x in zip(vjps, flat, inputs):
            if vjp is None or tangent is None:
                continue
            vjp = _fit(vjp, (x._data.shape, x._dtype, x._device))
            # <Jᵀ g, t>, as the real inner product Re(sum(conj(a) b)) where complex: its gradient in g is J t
            term = F.sum(F.mul(vjp, tangent)) if not vjp._dtype.is_complex else F.real(F.sum(F.mul(conj(vjp), tangent)))
            total = term if total is None else F.add(total, term)
        wanted = [g for g in cotangents if g is not None]
        if total is None or not total.requires_grad:
            return [F.zeros_like(g) if g is not None else None for g in cotangents]
        grads = iter(autograd_calls.grad([total], wanted, None, sizes, create_graph=keep_graph))
    result = []
    for g in cotangents:
        if g is None:
            result.append(None)
            continue
        jt = next(grads)
        result.append(F.zeros_like(g) if jt is None else jt)
    return result
