"""Element-wise ops PyTorch supports on sparse tensors, computed on the stored values.

- functions that map 0 to 0 (``sin``, ``sqrt``, ``relu``, ...) and ``pow`` with a positive exponent: the
  result keeps the structure (a nonlinear one coalesces first: f(a + b) is not f(a) + f(b));
- ``sparse * number``, ``sparse / number``, ``sparse * dense`` (sparse, the dense values gathered),
  ``sparse * sparse`` (the intersection), ``sparse + sparse`` and ``- sparse``: sparse results;
- ``dense + sparse`` and ``dense - sparse``: dense results. ``COO + dense`` raises as in PyTorch.
"""
from __future__ import annotations

from numbers import Number

from ..dispatch.ops import F
from ..dispatch.schema.promotion import promote_types
from ..memory_format import sparse_coo, sparse_csr
from ..tensor import Tensor
from .conversion import coalesce, coo_to_csr, csr_to_coo, linear_index, to_dense
from .tensor import SparseTensor, make

#: zero-preserving functions whose value at a sum is the sum of values: no coalescing needed
LINEAR = ("neg", "negative", "deg2rad", "rad2deg")
#: zero-preserving functions that need each position stored once
NONLINEAR = ("abs", "absolute", "sin", "sinh", "tan", "tanh", "asin", "arcsin", "asinh", "arcsinh", "atan", "arctan",
             "atanh", "arctanh", "sqrt", "square", "ceil", "floor", "round", "trunc", "fix", "frac", "sign", "sgn",
             "expm1", "log1p", "relu", "erf", "erfinv", "signbit", "isnan", "isinf", "isposinf", "isneginf",
             "nan_to_num")
UNARY = LINEAR + NONLINEAR
#: those with a bool result, which have no in-place form
PREDICATES = ("signbit", "isnan", "isinf", "isposinf", "isneginf")


def _coalesced(t: SparseTensor) -> SparseTensor:
    return coalesce(t) if t.layout is sparse_coo else t


def unary(name: str, t: SparseTensor, *args, **kwargs) -> SparseTensor:
    """``name`` applied to the stored values (positions coalesced first where ``name`` is nonlinear)."""
    if name in NONLINEAR:
        t = _coalesced(t)
    return t._with_values(getattr(t._vals, name)(*args, **kwargs))


def _is_scalar(x) -> bool:
    return isinstance(x, Number) or (isinstance(x, Tensor) and not isinstance(x, SparseTensor) and x.ndim == 0)


def _same_shape(function: str, a: Tensor, b: Tensor) -> None:
    if tuple(a.shape) != tuple(b.shape):
        raise RuntimeError(f"{function}: expected sizes of 'self' and 'other' to match, but {list(a.shape)} != "
                           f"{list(b.shape)}")


def _as_coo(t: SparseTensor) -> SparseTensor:
    return csr_to_coo(t) if t.layout is sparse_csr else t


def _in_layout(result: SparseTensor, like: SparseTensor) -> SparseTensor:
    return coo_to_csr(result) if like.layout is sparse_csr else result


def _aligned(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    dtype = promote_types(a.dtype, b.dtype)
    return (a if a.dtype is dtype else a.to(dtype)), (b if b.dtype is dtype else b.to(dtype))


def add(input: Tensor, other, *, alpha=1) -> Tensor:
    """``input + alpha * other`` with a sparse operand."""
    if isinstance(input, SparseTensor) and isinstance(other, SparseTensor):
        _same_shape("add", input, other)
        if input.layout is not other.layout:
            raise RuntimeError(f"add: both sparse operands must have one layout, got {input.layout.name} and "
                               f"{other.layout.name}")
        a, b = _as_coo(input), _as_coo(other)
        va, vb = _aligned(a._vals, b._vals if alpha == 1 else b._vals * alpha)
        both = make(sparse_coo, tuple(a.shape), F.cat([va, vb]), indices=F.cat([a._idx, b._idx], 1))
        return _in_layout(coalesce(both), input)
    if isinstance(other, SparseTensor):  # dense + sparse: dense
        if not isinstance(input, Tensor):
            raise RuntimeError("add(number, sparse) is not supported: a sparse tensor has no dense zeros to shift")
        return input + to_dense(other) * alpha if alpha != 1 else input + to_dense(other)
    if input.layout is sparse_csr and isinstance(other, Tensor):
        return to_dense(input) + (other * alpha if alpha != 1 else other)
    raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")


def sub(input: Tensor, other, *, alpha=1) -> Tensor:
    return add(input, other, alpha=-alpha)


def mul(input: Tensor, other) -> Tensor:
    """Sparse times a number, a dense tensor (gathered at the stored entries) or a sparse tensor (the
    entries both store): always sparse."""
    if not isinstance(input, SparseTensor):
        input, other = other, input
    if _is_scalar(other):
        return input._with_values(input._vals * other)
    if isinstance(other, SparseTensor):
        return _intersection(input, other)
    if not isinstance(other, Tensor):
        raise TypeError(f"mul: expected a number or a tensor, got {type(other).__name__}")
    dense = other.expand(tuple(input.shape)) if tuple(other.shape) != tuple(input.shape) else other
    coo = _as_coo(input)
    gathered = dense[tuple(coo._idx)] if coo._nnz() else dense.new_zeros((0, *input.shape[input.sparse_dim():]))
    return _in_layout(coo._with_values(coo._vals * gathered), input)


def _intersection(a: SparseTensor, b: SparseTensor) -> SparseTensor:
    _same_shape("mul", a, b)
    if a.dense_dim() != b.dense_dim():
        raise RuntimeError("mul: sparse operands must have the same sparse and dense dims")
    ca, cb = coalesce(_as_coo(a)), coalesce(_as_coo(b))
    sizes = tuple(a.shape[:a.sparse_dim()])
    key_a, key_b = linear_index(ca._idx, sizes), linear_index(cb._idx, sizes)
    if cb._nnz() == 0 or ca._nnz() == 0:
        keep = key_a != key_a  # nothing in common
        at = key_a
    else:
        at = F.searchsorted(key_b, key_a).clamp(max=cb._nnz() - 1)
        keep = key_b[at] == key_a
    va, vb = _aligned(ca._vals[keep], cb._vals[at[keep]])
    out = make(sparse_coo, tuple(a.shape), va * vb, indices=ca._idx[:, keep], coalesced=True)
    return _in_layout(out, a)


def div(input: SparseTensor, other, *, rounding_mode=None) -> SparseTensor:
    """Sparse divided by a number (or a 0-d tensor): the stored values divided."""
    if not isinstance(input, SparseTensor) or not _is_scalar(other):
        raise RuntimeError("div: a sparse tensor divides only by a number or a 0-d dense tensor (a zero divided "
                           "by a tensor's entries would not stay zero)")
    return input._with_values(F.div(input._vals, other, rounding_mode=rounding_mode))


def pow(input: SparseTensor, exponent) -> SparseTensor:  # noqa: A001 (PyTorch's name)
    """Stored values to a positive number's power (0 ** p stays 0 only for p > 0)."""
    if not isinstance(exponent, Number) or exponent <= 0:
        raise RuntimeError(f"pow: a sparse tensor takes a positive number as exponent, got {exponent!r}")
    t = _coalesced(input)
    return t._with_values(t._vals ** exponent)


def sparse_mask(input: Tensor, mask: SparseTensor) -> SparseTensor:
    """``input``'s values at ``mask``'s stored positions, in ``mask``'s layout and structure."""
    if not isinstance(mask, SparseTensor):
        kind = f"a {mask.layout.name} tensor" if isinstance(mask, Tensor) else type(mask).__name__
        raise RuntimeError(f"sparse_mask: expected a sparse mask, got {kind}")
    _same_shape("sparse_mask", input, mask)
    dense = to_dense(input) if isinstance(input, SparseTensor) else input
    coo = _as_coo(mask)
    gathered = dense[tuple(coo._idx)] if coo._nnz() else dense.new_zeros((0, *mask.shape[mask.sparse_dim():]))
    return mask._with_values(gathered)  # CSR stores its entries in the order coo_indices lists them
