"""Matrix products with a sparse operand, and their gradients.

``sparse @ dense`` runs the device's CSR kernel (``kernels.csr_matmul``) inside an autograd Function:
the dense operand's gradient is A^T @ grad (the same kernel on the cached transposed pattern), the values'
gradient is the product sampled at the stored entries, sum_k grad[row, k] * dense[col, k]. So a sparse
leaf's ``.grad`` is sparse on its own indices, as ``torch.sparse.mm`` gives it (PyTorch's ``torch.mm`` gives
that leaf a dense gradient instead; its values at the stored entries are the same). ``dense @ sparse`` is
the transpose of ``sparse^T @ dense^T``; ``sparse @ sparse`` multiplies by the second operand made dense
and keeps the result sparse.
"""
from __future__ import annotations

from ..autograd.function import Function
from ..dispatch.schema.dtypes import bfloat16, float16, float32
from ..dispatch.schema.errors import DeviceError, DtypeError, ShapeError
from ..memory_format import sparse_csr
from ..tensor import Tensor
from .conversion import to_dense, to_sparse, to_sparse_csr, transpose
from .kernels import csr_matmul
from .pattern import Pattern, pattern_of
from .tensor import SparseTensor

_HALF = (float16, bfloat16)  # products of these run in float32 (SciPy and the CSR kernels have no halves)


class _CsrTimesDense(Function):
    """values (CSR order) and dense -> the dense product; the pattern rides along as a constant."""

    @staticmethod
    def forward(ctx, values: Tensor, dense: Tensor, pattern: Pattern) -> Tensor:
        ctx.pattern = pattern
        ctx.save_for_backward(values, dense)
        return csr_matmul(pattern.crow, pattern.col, values, dense, pattern.shape[0])

    @staticmethod
    def backward(ctx, grad: Tensor):
        values, dense = ctx.saved_tensors
        pattern = ctx.pattern
        grad_values = grad_dense = None
        if ctx.needs_input_grad[0]:
            grad_values = (grad.index_select(0, pattern.row) * dense.index_select(0, pattern.col)).sum(1)
        if ctx.needs_input_grad[1]:
            transposed, order = pattern.transposed()
            grad_dense = _CsrTimesDense.apply(values[order], grad.contiguous(), transposed)
        return grad_values, grad_dense, None


def _describe(t: Tensor) -> str:
    return f"{t.layout.name} {tuple(t.shape)} {t.dtype.name} on {t.device}"


def _check(function: str, a: Tensor, b: Tensor) -> None:
    """Two matrices that multiply: 2-D, one device, one dtype, inner sizes equal (PyTorch's RuntimeErrors)."""
    for t in (a, b):
        if not isinstance(t, Tensor):
            raise TypeError(f"{function}(): expected tensors, got {type(t).__name__}")
        if t.ndim != 2:
            raise RuntimeError(f"{function}: matrices expected, got a {t.ndim}-D tensor ({_describe(t)})")
        if isinstance(t, SparseTensor) and t.dense_dim():
            raise RuntimeError(f"{function}: a sparse operand must have no dense dims, got {_describe(t)}")
    if a.device != b.device:
        raise DeviceError(f"{function}: expected both operands on one device, got {_describe(a)} and {_describe(b)}")
    if a.dtype is not b.dtype:
        raise DtypeError(f"{function}: expected operands of one dtype, got {_describe(a)} and {_describe(b)}")
    if a.shape[1] != b.shape[0]:
        raise ShapeError(f"{function}: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be multiplied "
                         f"({_describe(a)} @ {_describe(b)})")


def sparse_times_dense(a: SparseTensor, b: Tensor) -> Tensor:
    """The dense product of a 2-D sparse matrix and a dense matrix (checked already)."""
    pattern = pattern_of(a)
    values = pattern.ordered(a._vals)
    if a.dtype in _HALF:
        return _CsrTimesDense.apply(values.to(float32), b.to(float32), pattern).to(a.dtype)
    return _CsrTimesDense.apply(values, b.contiguous(), pattern)


def _as_layout(result: Tensor, like: SparseTensor) -> SparseTensor:
    return to_sparse_csr(result) if like.layout is sparse_csr else to_sparse(result)


def mm(mat1: Tensor, mat2: Tensor, reduce: str = "sum") -> Tensor:
    """``ember.sparse.mm``: sparse @ dense -> dense, dense @ sparse -> dense, sparse @ sparse -> sparse
    (in the first operand's layout). ``reduce`` is ``"sum"`` or ``"mean"`` (the mean over each row's
    stored entries; a row with none gives zeros)."""
    if reduce not in ("sum", "mean"):
        raise RuntimeError(f"sparse.mm: reduce must be 'sum' or 'mean' in Ember, got {reduce!r}")
    _check("mm", mat1, mat2)
    first, second = isinstance(mat1, SparseTensor), isinstance(mat2, SparseTensor)
    if first and second:
        if mat1.layout is not mat2.layout:
            raise RuntimeError(f"mm: both sparse operands must have one layout, got {_describe(mat1)} and "
                               f"{_describe(mat2)}")
        out = _as_layout(sparse_times_dense(mat1, to_dense(mat2)), mat1)
    elif first:
        out = sparse_times_dense(mat1, mat2)
    elif second:
        return sparse_times_dense(transpose(mat2, 0, 1), mat1.t()).t()
    else:
        from ..dispatch.ops import F
        return F.mm(mat1, mat2)
    if reduce == "mean":
        pattern = pattern_of(mat1)
        counts = (pattern.crow[1:] - pattern.crow[:-1]).clamp(min=1).to(out.dtype).unsqueeze(1)
        out = out / counts if not isinstance(out, SparseTensor) else _as_layout(to_dense(out) / counts, mat1)
    return out


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """``@`` with a sparse operand: matrix @ matrix as ``mm``, and matrix @ vector / vector @ matrix."""
    if input.ndim == 2 and other.ndim == 1:
        return mm(input, other.unsqueeze(1)).squeeze(1)
    if input.ndim == 1 and other.ndim == 2:
        return mm(input.unsqueeze(0), other).squeeze(0)
    if input.ndim != 2 or other.ndim != 2:
        raise RuntimeError(f"matmul: a sparse operand takes part in 2-D @ 2-D, 2-D @ 1-D and 1-D @ 2-D products "
                           f"only, got {_describe(input)} @ {_describe(other)}")
    return mm(input, other)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` where either factor may be sparse; dense result (a sparse
    ``input`` is made dense). ``beta=0`` ignores ``input``, NaNs included, as PyTorch does."""
    product = mm(mat1, mat2)
    if isinstance(product, SparseTensor):
        product = to_dense(product)
    if isinstance(input, SparseTensor):
        input = to_dense(input)
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:
        return scaled
    return (input if beta == 1 else input * beta) + scaled


def smm(input: SparseTensor, mat: Tensor) -> SparseTensor:
    """sparse @ dense as a sparse COO tensor."""
    return to_sparse(mm(input, mat))


def _into(out: SparseTensor | None, result: SparseTensor) -> SparseTensor:
    """``out=``: the result's components written into ``out`` (a sparse tensor)."""
    if out is None:
        return result
    if not isinstance(out, SparseTensor):
        raise RuntimeError(f"out= must be a sparse tensor here, got {_describe(out)}")
    from .methods import _assign
    _assign(out, result)
    out._data = type(out._data)(tuple(result.shape), result.layout.name)
    out._layout = result.layout
    return out


def hspmm(mat1: SparseTensor, mat2: Tensor, *, out: SparseTensor | None = None) -> SparseTensor:
    """sparse @ dense as a hybrid COO tensor: rows sparse, each stored row dense."""
    return _into(out, to_sparse(mm(mat1, mat2), 1))


def sspaddmm(input: SparseTensor, mat1: SparseTensor, mat2: Tensor, *, beta=1, alpha=1,
             out: SparseTensor | None = None) -> SparseTensor:
    """``beta * input + alpha * (mat1 @ mat2)`` as a sparse COO tensor."""
    return _into(out, to_sparse(addmm(input, mat1, mat2, beta=beta, alpha=alpha)))


def dsmm(input: SparseTensor, mat2: Tensor) -> Tensor:
    """sparse @ dense -> dense (PyTorch's legacy name)."""
    return mm(input, mat2)
