"""Linear algebra: matmul is the primitive; bmm, mm, outer and einsum are composed from it. All take complex
operands too, with PyTorch's conjugate Wirtinger derivatives (grad @ conj(other)^T)."""
from __future__ import annotations

import functools
import string

import numpy as np

from ...schema import rules
from ...schema.dtypes import int64
from ...schema.errors import DtypeError, ShapeError
from ...schema.promotion import promote_types
from ...schema.meta import require, shape
from ...schema import Sample, defop
from ..namespace import F
from ._shared import _matmul_meta
from .matrices import mH


def _as_matrices(grad, input_ndim: int, other_ndim: int):
    """The output gradient with the dims that 1-D operands dropped put back."""
    if input_ndim == 1:  # a vector @ vector gradient is 0-d: its row dim is the only one
        grad = F.unsqueeze(grad, -2 if grad.ndim else 0)
    if other_ndim == 1:
        grad = F.unsqueeze(grad, -1)
    return grad


def _matmul_input_derivative(grad, input, other):
    """grad @ other^H; the engine sums broadcast batch dims."""
    b = F.unsqueeze(other, -1) if other.ndim == 1 else other
    out = F.matmul(_as_matrices(grad, input.ndim, other.ndim), mH(b))
    return F.squeeze(out, [-2]) if input.ndim == 1 else out


def _matmul_other_derivative(grad, input, other):
    """input^H @ grad."""
    a = F.unsqueeze(input, 0) if input.ndim == 1 else input
    out = F.matmul(mH(a), _as_matrices(grad, input.ndim, other.ndim))
    return F.squeeze(out, [-1]) if other.ndim == 1 else out


def _matmul_samples(make, dtype):
    yield Sample((make((3, 4)), make((4, 5))), note="matrix @ matrix")
    yield Sample((make((4,)), make((4,))), note="vector @ vector")
    yield Sample((make((4,)), make((4, 2))), note="vector @ matrix")
    yield Sample((make((3, 4)), make((4,))), note="matrix @ vector")
    yield Sample((make((2, 3, 4)), make((4, 5))), note="batch @ matrix")
    yield Sample((make((2, 1, 3, 4)), make((5, 4, 2))), note="broadcast batch dims")
    yield Sample((make((3, 4), noncontiguous=True), make((4, 2), noncontiguous=True)), note="non-contiguous")
    yield Sample((make((0, 4)), make((4, 3))), note="no rows")
    yield Sample((make((3, 0)), make((0, 2))), note="empty inner dim")


def _bmm_samples(make, dtype):
    yield Sample((make((2, 3, 4)), make((2, 4, 5))))
    yield Sample((make((3, 2, 4), noncontiguous=True), make((3, 4, 1), noncontiguous=True)), note="non-contiguous")
    yield Sample((make((0, 3, 4)), make((0, 4, 2))), note="empty batch")


def _mm_samples(make, dtype):
    yield Sample((make((3, 4)), make((4, 5))))
    yield Sample((make((1, 4), noncontiguous=True), make((4, 3), noncontiguous=True)), note="non-contiguous")
    yield Sample((make((0, 4)), make((4, 3))), note="no rows")


def _outer_samples(make, dtype):
    yield Sample((make((3,)), make((4,))))
    yield Sample((make((5,), noncontiguous=True), make((1,))), note="non-contiguous")
    yield Sample((make((0,)), make((2,))), note="empty")


def _einsum_samples(make, dtype):
    yield Sample(("ij,jk->ik", [make((3, 4)), make((4, 5))]), note="matrix product")
    yield Sample(("bij,bjk->bik", [make((2, 3, 4)), make((2, 4, 2), noncontiguous=True)]), note="batched")
    yield Sample(("i,i->", [make((5,)), make((5,))]), note="dot product")
    yield Sample(("i,j->ij", [make((3,)), make((2,))]), note="outer product")
    yield Sample(("ij->ji", [make((2, 3))]), note="transpose")
    yield Sample(("ij->", [make((2, 3))]), note="sum of all")
    yield Sample(("...ij,...jk", [make((2, 3, 4)), make((4, 2))]), note="ellipsis, implicit output")
    yield Sample(("ij,jk,kl->il", [make((2, 3)), make((3, 4)), make((4, 2))]), note="three operands")
    yield Sample(("ij,j->i", [make((0, 3)), make((3,))]), note="empty")


def _matmul_batch(call):
    """vmap's rule: vectors become matrices (a row on the left, a column on the right), batched operands get
    their batch dim first and size-1 dims up to the other's rank, one matmul broadcasts, the added dims go."""
    a, b = call.values
    if a.dim() == 0 or b.dim() == 0:
        return NotImplemented
    ranks = max(a.dim(), 2), max(b.dim(), 2)
    operands = []
    for x, as_matrix in ((a, (1, *a.shape)), (b, (*b.shape, 1))):
        shape_ = tuple(x.shape) if x.dim() >= 2 else as_matrix
        if call.is_batched(x):
            operands.append(F.reshape(call.physical(x), (call.size, *(1,) * (max(ranks) - len(shape_)), *shape_)))
        else:
            operands.append(F.reshape(x, shape_) if x.dim() < 2 else x)
    out = F.matmul(*operands)
    if b.dim() == 1:
        out = F.squeeze(out, -1)
    if a.dim() == 1:
        out = F.squeeze(out, -1 if b.dim() == 1 else -2)
    return call.wrap(out)


defop("matmul(Tensor input, Tensor other)", "linalg", promotion=rules.same, dtypes="numeric+complex",
      meta=_matmul_meta,
      samples=_matmul_samples, autocast="lower", onnx="MatMul", jvp="multilinear", batch=_matmul_batch,
      derivative={"input": _matmul_input_derivative, "other": _matmul_other_derivative},
      reference=np.matmul, doc="matrix product with NumPy/PyTorch broadcasting of batch dims")


def _declare_fixed_rank_matmul(name: str, rank: int, samples) -> None:
    """``bmm`` (3-D, equal batch sizes) and ``mm`` (2-D): matmul with both operands' ranks fixed, as in PyTorch."""
    def meta(a, b):
        require(len(shape(a)) == rank and len(shape(b)) == rank, name, f"expects two {rank}-D tensors", a, b)
        require(rank == 2 or shape(a)[0] == shape(b)[0], name, "batch sizes differ", a, b)
        return _matmul_meta(a, b, name)

    defop(f"{name}(Tensor input, Tensor mat2)", "linalg", kind="composite", promotion=rules.same,
          dtypes="numeric+complex",
          meta=meta, composite=lambda a, b: F.matmul(a, b), reference=np.matmul, samples=samples, onnx="MatMul",
          autocast="lower")


_declare_fixed_rank_matmul("bmm", 3, _bmm_samples)
_declare_fixed_rank_matmul("mm", 2, _mm_samples)


def _outer_meta(a, b):
    require(len(shape(a)) == 1 and len(shape(b)) == 1, "outer", "expects two 1-D tensors", a, b)
    return shape(a) + shape(b)


defop("outer(Tensor input, Tensor vec2)", "linalg", kind="composite", promotion=rules.same, dtypes="all+complex",
      meta=_outer_meta,
      composite=lambda a, b: F.mul(F.unsqueeze(a, 1), F.unsqueeze(b, 0)), reference=np.outer,
      samples=_outer_samples)


# -- einsum ----------------------------------------------------------------------------------------

def parse_einsum(equation: str, shapes: list) -> tuple[list[str], str]:
    """Subscripts per operand and for the output, with '...' spelled out as spare capital letters."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ShapeError(f"einsum: equation {equation!r} has {len(terms)} operand(s) but {len(shapes)} were given")
    spare = [c for c in string.ascii_uppercase if c not in equation]
    ellipsis_rank = max((len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes) if "..." in t),
                        default=0)
    batch = "".join(spare[:ellipsis_rank])
    expanded = []
    for term, s in zip(terms, shapes):
        if "..." in term:
            rank = len(s) - len(term.replace("...", ""))
            term = term.replace("...", batch[ellipsis_rank - rank:] if rank else "")
        if not all(c.isalpha() for c in term):
            raise ShapeError(f"einsum: invalid subscripts {term!r} in {equation!r}")
        if len(term) != len(s):
            raise ShapeError(f"einsum: subscripts {term!r} do not match an operand of shape {tuple(s)}")
        if len(set(term)) != len(term):
            raise ShapeError(f"einsum: repeated subscripts within one operand ({term!r}) are not supported")
        expanded.append(term)
    if arrow:
        out = rhs.replace("...", batch)
    else:
        counts = {}
        for term in expanded:
            for c in term:
                counts[c] = counts.get(c, 0) + 1
        out = batch + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in batch))
    for c in out:
        if not any(c in term for term in expanded):
            raise ShapeError(f"einsum: output subscript {c!r} does not appear in any operand of {equation!r}")
    return expanded, out


def _einsum_sizes(equation, operands):
    terms, out = parse_einsum(equation, [shape(o) for o in operands])
    sizes = {}
    for term, o in zip(terms, operands):
        for c, n in zip(term, shape(o)):
            if sizes.get(c, 1) != 1 and n != 1 and sizes[c] != n:
                raise ShapeError(f"einsum: subscript {c!r} has size {sizes[c]} in one operand and {n} in another "
                                 f"({equation!r} with shapes {[shape(x) for x in operands]})")
            sizes[c] = max(sizes.get(c, 1), n) if n != 0 and sizes.get(c, 1) != 0 else 0
    return terms, out, sizes


def _summed_alone(equation: str, shapes: list) -> list[bool]:
    """Per operand: whether it has a subscript that neither another operand nor the output has."""
    terms, out = parse_einsum(equation, shapes)
    return [any(c not in out and not any(c in other for j, other in enumerate(terms) if j != i) for c in term)
            for i, term in enumerate(terms)]


def _einsum_dtype(equation, operands, promoted):
    """PyTorch's result dtype. Its einsum first sums away each operand's subscripts that no other operand and
    not the output has, and integer sums answer in int64: so integers give int64 where every operand has such
    subscripts, keep their dtype where none has, and cannot be contracted where only some have (PyTorch fails
    there too)."""
    if promoted.kind != "int" or promoted is int64:  # bool is refused (dtypes='numeric')
        return promoted
    alone = _summed_alone(equation, [shape(o) for o in operands])
    if all(alone):
        return int64
    if any(alone):
        raise DtypeError(f"einsum: {equation!r} sums some operands' own subscripts before contracting, which turns "
                         f"those {promoted.name} operands into int64 sums that cannot meet the other {promoted.name} "
                         f"operands (PyTorch fails the same way); cast the operands to int64 "
                         f"(shapes {[shape(o) for o in operands]})")
    return promoted


def _einsum_promotion(rt, op, args):
    """_einsum_dtype; asked about a dtype alone, with no equation (the conformance suite's dtype query), the
    operands' type."""
    equation = args["equation"]
    dt = _einsum_dtype(equation, args["operands"], rt) if isinstance(equation, str) else rt
    return dt, dt


def _einsum(equation, operands):
    terms, out, sizes = _einsum_sizes(equation, operands)
    dtype = _einsum_dtype(equation, operands, functools.reduce(promote_types, [o.dtype for o in operands]))
    operands = [o if o.dtype is dtype else F.to_dtype(o, dtype) for o in operands]
    labels = list(out) + sorted(set("".join(terms)) - set(out))
    product = None
    for term, operand in zip(terms, operands):
        order = [term.index(c) for c in labels if c in term]
        aligned = F.permute(operand, order) if order != list(range(len(term))) else operand
        view_shape = tuple(operand.shape[term.index(c)] if c in term else 1 for c in labels)
        aligned = F.reshape(aligned, view_shape)
        product = aligned if product is None else F.mul(product, aligned)
    contracted = tuple(range(len(out), len(labels)))
    if contracted:
        product = F.sum(product, contracted, dtype=product.dtype)  # integers: as _einsum_dtype says
    target = tuple(sizes[c] for c in out)
    return product if tuple(product.shape) == target else F.expand(product, target)


def _einsum_reference(equation, operands):
    out = np.einsum(equation, *operands)
    integral = all(o.dtype.kind in "iu" for o in operands)
    return out.astype(np.int64) if integral and all(_summed_alone(equation, [o.shape for o in operands])) else out


def _einsum_meta(equation, operands):
    _, out, sizes = _einsum_sizes(equation, operands)
    return tuple(sizes[c] for c in out)


def _einsum_onnx(g, equation, operands):
    """ONNX Einsum with the equation spelled out ('...' as letters, the output explicit): ONNX's shape
    inference wants every '...' to stand for as many dims, where NumPy's broadcasting does not."""
    terms, out = parse_einsum(equation, [g.shape_of(o) for o in operands])
    return g.op("Einsum", *operands, equation=f"{','.join(terms)}->{out}")


defop("einsum(str equation, Tensor[] operands)", "linalg", kind="composite", promotion=_einsum_promotion,
      dtypes="numeric+complex", meta=_einsum_meta, composite=_einsum, method=False, samples=_einsum_samples,
      autocast="lower", onnx=_einsum_onnx,
      tolerances={"float16": (1e-2, 0.1), "bfloat16": (4e-2, 0.25)},  # the composite rounds every product
      reference=_einsum_reference,
      doc="Einstein summation; '...' broadcasts; a subscript may not repeat within one operand")
