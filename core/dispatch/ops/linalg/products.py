"""Products: dot, vdot, inner, ger, mv, tensordot, kron, the scaled-and-added matrix products (addmm, addmv,
addr, baddbmm, addbmm) and addcmul/addcdiv. All composed from matmul and elementwise ops, so every backend
runs them and autograd differentiates them through their parts (beta and alpha scale the gradients as in
PyTorch)."""
from __future__ import annotations

import math
import operator

import numpy as np

from ...schema import rules
from ...schema.binding import tensor_argument, wrap_dim
from ...schema.errors import ArgumentError, DtypeError, ShapeError, describe
from ...schema.meta import broadcast_shapes, elementwise, shape
from ...schema import Sample, defop
from ..elementwise.complex_support import conj
from ..namespace import F
from ._shared import _matmul_meta


def _is_tensor(v) -> bool:
    return hasattr(v, "_data")


def _require_rank(op_name: str, ranks: dict, args) -> None:
    """ShapeError unless each named input has the given number of dims."""
    for name, rank in ranks.items():
        if len(shape(args[name])) != rank:
            raise ShapeError(f"{op_name}: expects {name} to be a {rank}-D tensor, got {describe(args[name])}")


def _tensors_only(op, args) -> None:
    """A Python number where PyTorch takes a tensor is PyTorch's TypeError."""
    for position, p in enumerate(op.params):
        if p.is_tensor and args[p.name] is not None:
            tensor_argument(op.name, p.name, args[p.name], position)


def _same_dtype(op_name: str, a, b) -> None:
    """dot and vdot take no promotion, as in PyTorch."""
    if _is_tensor(a) and _is_tensor(b) and a.dtype is not b.dtype:
        raise DtypeError(f"{op_name}: expected both vectors to have same dtype, but found {a.dtype.name} and "
                         f"{b.dtype.name} ({describe(a)}, {describe(b)})")


def _integral_scalars(op_name: str, args, names) -> None:
    """Integer tensors take integer scale factors (PyTorch: "beta and alpha ... should be integers")."""
    dtypes = [args[p.name].dtype for p in args.op.params if p.is_tensor and _is_tensor(args[p.name])]
    if dtypes and not any(d.is_inexact for d in dtypes):
        for name in names:
            value = args[name]
            if isinstance(value, float) and not value.is_integer():
                raise DtypeError(f"{op_name}: {name}={value} must be an integer for integer tensors "
                                 f"({', '.join(describe(args[p.name]) for p in args.op.params if p.is_tensor)})")


# -- dot, vdot, inner, ger, mv -------------------------------------------------------------------------

def _dot_normalize(op, args) -> None:
    a, b = args["input"], args["tensor"] if "tensor" in args else args["other"]
    _same_dtype(op.name, a, b)
    if len(shape(a)) != 1 or len(shape(b)) != 1:
        raise ShapeError(f"{op.name}: 1D tensors expected, but got {describe(a)} and {describe(b)}")
    if shape(a) != shape(b):
        raise ShapeError(f"{op.name}: inconsistent tensor size, expected tensor [{shape(a)[0]}] and src "
                         f"[{shape(b)[0]}] to have the same number of elements")


def _vector_pair_samples(make, dtype):
    yield Sample((make((5,)), make((5,))))
    yield Sample((make((4,), noncontiguous=True), make((4,), noncontiguous=True)), note="non-contiguous")
    yield Sample((make((0,)), make((0,))), note="empty")


defop("dot(Tensor input, Tensor tensor)", "linalg", kind="composite", promotion=rules.same,
      dtypes="numeric+complex",
      meta=lambda a, b: (), normalize=_dot_normalize, composite=lambda a, b: F.matmul(a, b),
      reference=lambda a, b: np.asarray(np.dot(a, b)), samples=_vector_pair_samples, autocast="lower",
      doc="the inner product of two 1-D tensors of one dtype")
defop("vdot(Tensor input, Tensor other)", "linalg", kind="composite", promotion=rules.same,
      dtypes="numeric+complex",
      meta=lambda a, b: (), normalize=_dot_normalize, composite=lambda a, b: F.matmul(conj(a), b),
      reference=lambda a, b: np.asarray(np.vdot(a, b)), samples=_vector_pair_samples,
      doc="dot with the first vector conjugated (the same as dot for real tensors)")


def _inner_meta(a, b):
    sa, sb = shape(a), shape(b)
    if not sa or not sb:
        return broadcast_shapes("inner", sa, sb)
    if sa[-1] != sb[-1]:
        raise ShapeError(f"inner: the last dimensions must match, got {describe(a)} and {describe(b)}")
    return sa[:-1] + sb[:-1]


def _inner(a, b):
    if a.ndim == 0 or b.ndim == 0:
        return F.mul(a, b)
    rows, cols = tuple(a.shape[:-1]), tuple(b.shape[:-1])
    product = F.matmul(F.reshape(a, (-1, a.shape[-1])), F.transpose(F.reshape(b, (-1, b.shape[-1])), 0, 1))
    return F.reshape(product, rows + cols)


def _inner_samples(make, dtype):
    yield Sample((make((2, 3)), make((4, 3))))
    yield Sample((make((3,)), make((2, 2, 3), noncontiguous=True)), note="vector and batch")
    yield Sample((make(()), make((2, 3))), note="0-d scales")


defop("inner(Tensor input, Tensor other)", "linalg", kind="composite", promotion=rules.same,
      dtypes="numeric+complex",
      meta=_inner_meta, normalize=_tensors_only, composite=_inner, reference=lambda a, b: np.asarray(np.inner(a, b)),
      samples=_inner_samples, autocast="lower", doc="sums of products over the last dims of both inputs")


def _ger_normalize(op, args) -> None:
    _require_rank("ger", {"input": 1, "vec2": 1}, args)


def _ger_samples(make, dtype):
    yield Sample((make((3,)), make((4,))))
    yield Sample((make((2,), noncontiguous=True), make((0,))), note="empty")


defop("ger(Tensor input, Tensor vec2)", "linalg", kind="composite", promotion=rules.same, normalize=_ger_normalize,
      meta=lambda a, b: shape(a) + shape(b), composite=lambda a, b: F.outer(a, b), reference=np.outer,
      dtypes="all+complex", samples=_ger_samples, doc="outer's older name: input[i] * vec2[j]")


def _mv_normalize(op, args) -> None:
    _require_rank("mv", {"input": 2, "vec": 1}, args)


def _mv_samples(make, dtype):
    yield Sample((make((3, 4)), make((4,))))
    yield Sample((make((2, 3), noncontiguous=True), make((3,), noncontiguous=True)), note="non-contiguous")
    yield Sample((make((0, 2)), make((2,))), note="no rows")


defop("mv(Tensor input, Tensor vec)", "linalg", kind="composite", promotion=rules.same,
      dtypes="numeric+complex",
      normalize=_mv_normalize, meta=lambda a, v: _matmul_meta(a, v, "mv"), composite=lambda a, v: F.matmul(a, v),
      reference=np.matmul, samples=_mv_samples, autocast="lower", doc="matrix @ vector")


# -- tensordot and kron -----------------------------------------------------------------------------

_TENSORDOT_DIMS = "int or tuple[list[int], list[int]] or list[list[int]] containing two lists"


def _tensordot_dim_list(values, name: str, position: int) -> list[int]:
    """One of aten::tensordot's int[] arguments, refused in the words of PyTorch's argument parser."""
    where = f"tensordot(): argument '{name}' (position {position}) must be tuple of ints"
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{where}, not {type(values).__name__}")
    dims = []
    for pos, value in enumerate(values):
        if value.__class__ is bool or not hasattr(value, "__index__"):
            raise TypeError(f"{where}, but found element of type {type(value).__name__} at pos {pos}")
        dims.append(operator.index(value))
    return dims


def _tensordot_dim_lists(a_shape: tuple, b_shape: tuple, dims) -> tuple[list, list]:
    """``dims`` read as torch.tensordot reads it: an int n (a's last n dims with b's first n), a pair of dim
    lists, or a tensor holding either (one element: n, truncated; more: the pair, along its first dim)."""
    if _is_tensor(dims):
        if dims.numel() > 1:
            if dims.shape[0] != 2:
                raise ShapeError(f"tensordot: dims tensor must have size 2 in first dimension, got "
                                 f"{dims.shape[0]} ({describe(dims)})")
            dims = (dims[0].tolist(), dims[1].tolist())
        else:
            dims = int(dims.item())
    if isinstance(dims, int):
        if dims < 0:
            raise ArgumentError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(len(a_shape), len(b_shape)):
            raise ShapeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims} for tensors of "
                             f"shapes {a_shape} and {b_shape}")
        return list(range(len(a_shape) - dims, len(a_shape))), list(range(dims))
    if not isinstance(dims, (list, tuple)) or len(dims) != 2:
        raise ArgumentError(f"tensordot expects dims to be {_TENSORDOT_DIMS}, but got dims={dims!r}")
    return _tensordot_dim_list(dims[0], "dims_self", 3), _tensordot_dim_list(dims[1], "dims_other", 4)


def _tensordot_dims(a_shape: tuple, b_shape: tuple, dims) -> tuple[list, list]:
    """The contracted dims of each operand, non-negative, checked against the shapes."""
    first, second = _tensordot_dim_lists(a_shape, b_shape, dims)
    if len(first) != len(second):
        raise ShapeError(f"tensordot: both dimension lists should have same length, got {first} and {second}")
    wrapped = []
    for dim_list, s in ((first, a_shape), (second, b_shape)):
        out = [wrap_dim("tensordot", d, len(s), scalar_ok=False) for d in dim_list]
        if len(set(out)) != len(out):
            raise ShapeError(f"tensordot: a dim appears multiple times in the list of dims {dim_list} "
                             f"(of a tensor of shape {s})")
        wrapped.append(out)
    for da, db in zip(*wrapped):
        if a_shape[da] != b_shape[db]:
            raise ShapeError(f"tensordot: contracted dimensions need to match, but first has size {a_shape[da]} in "
                             f"dim {da} and second has size {b_shape[db]} in dim {db} (shapes {a_shape} and "
                             f"{b_shape})")
    return wrapped[0], wrapped[1]


def _tensordot_meta(a, b, dims=2):
    da, db = _tensordot_dims(shape(a), shape(b), dims)
    return (tuple(n for i, n in enumerate(shape(a)) if i not in da)
            + tuple(n for i, n in enumerate(shape(b)) if i not in db))


def _tensordot(a, b, dims=2):
    da, db = _tensordot_dims(tuple(a.shape), tuple(b.shape), dims)
    free_a = [i for i in range(a.ndim) if i not in da]
    free_b = [i for i in range(b.ndim) if i not in db]
    inner = math.prod(a.shape[i] for i in da)
    left = F.reshape(F.permute(a, tuple(free_a + da)), (-1, inner))
    right = F.reshape(F.permute(b, tuple(db + free_b)), (inner, -1))
    out_shape = tuple(a.shape[i] for i in free_a) + tuple(b.shape[i] for i in free_b)
    return F.reshape(F.matmul(left, right), out_shape)


def _tensordot_reference(a, b, dims=2):
    return np.tensordot(a, b, dims if isinstance(dims, int) else [list(d) for d in dims])


def _tensordot_samples(make, dtype):
    yield Sample((make((2, 3, 4)), make((3, 4, 5))), note="the last two with the first two")
    yield Sample((make((2, 3)), make((4, 5)), 0), note="outer product")
    yield Sample((make((3, 4, 2), noncontiguous=True), make((2, 3)), ([0, 2], [1, 0])), note="dim lists")


defop("tensordot(Tensor a, Tensor b, Any dims=2)", "linalg", kind="composite", promotion=rules.same,
      dtypes="numeric+complex", normalize=_tensors_only, meta=_tensordot_meta, composite=_tensordot,
      reference=_tensordot_reference, samples=_tensordot_samples, autocast="lower", method=False,
      doc="sums of products over the paired dims (an int n: a's last n with b's first n)")


def _kron_meta(a, b):
    sa, sb = shape(a), shape(b)
    n = max(len(sa), len(sb))
    sa, sb = (1,) * (n - len(sa)) + sa, (1,) * (n - len(sb)) + sb
    return tuple(x * y for x, y in zip(sa, sb))


def _kron(a, b):
    n = max(a.ndim, b.ndim)
    sa, sb = (1,) * (n - a.ndim) + tuple(a.shape), (1,) * (n - b.ndim) + tuple(b.shape)
    spread_a = F.reshape(a, tuple(x for s in sa for x in (s, 1)))  # (a0, 1, a1, 1, ...)
    spread_b = F.reshape(b, tuple(x for s in sb for x in (1, s)))  # (1, b0, 1, b1, ...)
    return F.reshape(F.mul(spread_a, spread_b), tuple(x * y for x, y in zip(sa, sb)))


def _kron_samples(make, dtype):
    yield Sample((make((2, 3)), make((2, 2))))
    yield Sample((make((3,)), make((2, 1, 2), noncontiguous=True)), note="different ranks")
    yield Sample((make(()), make((2,))), note="0-d")


defop("kron(Tensor input, Tensor other)", "linalg", kind="composite", promotion=rules.same, meta=_kron_meta,
      dtypes="all+complex", normalize=_tensors_only,
      composite=_kron, reference=np.kron, samples=_kron_samples,
      doc="the Kronecker product: each element of input times the whole of other, in blocks")


# -- beta * input + alpha * (product) ---------------------------------------------------------------

def _scaled_sum(input, product, beta, alpha):
    """beta * input + alpha * product; beta == 0 ignores input's values (NaN included), as in PyTorch."""
    if alpha != 1:
        product = F.mul(product, alpha)
    if beta == 0:  # zeros like input keep input's place in type promotion
        input = F.zeros(tuple(input.shape), dtype=input.dtype, device=input.device)
    return F.add(input if beta in (0, 1) else F.mul(input, beta), product)


def _addmm_family(name: str, product, ranks: dict, meta_of, reference_of, samples):
    """One op ``name(input, <two operands>, *, beta=1, alpha=1)``: beta * input + alpha * product(...)."""
    operands = list(ranks)

    def normalize(op, args):
        _tensors_only(op, args)
        _require_rank(name, ranks, args)
        _integral_scalars(name, args, ("beta", "alpha"))
        product_shape = meta_of(args[operands[0]], args[operands[1]])
        if broadcast_shapes(name, product_shape, shape(args["input"])) != product_shape:
            raise ShapeError(f"{name}: input of shape {shape(args['input'])} cannot be broadcast to the product's "
                             f"shape {product_shape}")

    def meta(input, a, b, beta=1, alpha=1):
        return meta_of(a, b)

    def composite(input, a, b, beta=1, alpha=1):
        return _scaled_sum(input, product(a, b), beta, alpha)

    def reference(input, a, b, beta=1, alpha=1):
        scaled = alpha * reference_of(a, b)
        return scaled if beta == 0 else beta * input + scaled

    return dict(kind="composite", promotion=rules.same, dtypes="numeric+complex", meta=meta, normalize=normalize,
                composite=composite, reference=reference, samples=samples, inplace=True, autocast="lower")


def _addmm_samples(make, dtype):
    yield Sample((make((3, 5)), make((3, 4)), make((4, 5))))
    yield Sample((make((5,)), make((2, 4), noncontiguous=True), make((4, 5))), {"beta": 2, "alpha": 3},
                 note="broadcast input, beta and alpha")
    yield Sample((make((3, 2)), make((3, 0)), make((0, 2))), {"beta": 0}, note="beta 0, empty inner dim")


def _addmv_samples(make, dtype):
    yield Sample((make((3,)), make((3, 4)), make((4,))))
    yield Sample((make(()), make((2, 3), noncontiguous=True), make((3,))), {"beta": 0, "alpha": 2},
                 note="0-d input, beta 0")


def _addr_samples(make, dtype):
    yield Sample((make((3, 4)), make((3,)), make((4,))))
    yield Sample((make((4,)), make((2,), noncontiguous=True), make((4,))), {"beta": 3, "alpha": 2},
                 note="broadcast input")


def _baddbmm_samples(make, dtype):
    yield Sample((make((2, 3, 5)), make((2, 3, 4)), make((2, 4, 5))))
    yield Sample((make((3, 1)), make((2, 3, 4), noncontiguous=True), make((2, 4, 2))), {"beta": 2, "alpha": 3},
                 note="broadcast input")


def _addbmm_samples(make, dtype):
    yield Sample((make((3, 5)), make((2, 3, 4)), make((2, 4, 5))))
    yield Sample((make((5,)), make((3, 2, 4), noncontiguous=True), make((3, 4, 5))), {"beta": 0, "alpha": 2},
                 note="broadcast input, beta 0")


defop("addmm(Tensor input, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1)", "linalg",
      **_addmm_family("addmm", lambda a, b: F.matmul(a, b), {"mat1": 2, "mat2": 2},
                      lambda a, b: _matmul_meta(a, b, "addmm"), np.matmul, _addmm_samples),
      doc="beta * input + alpha * (mat1 @ mat2)")
defop("addmv(Tensor input, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1)", "linalg",
      **_addmm_family("addmv", lambda a, b: F.matmul(a, b), {"mat": 2, "vec": 1},
                      lambda a, b: _matmul_meta(a, b, "addmv"), np.matmul, _addmv_samples),
      doc="beta * input + alpha * (mat @ vec)")
defop("addr(Tensor input, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1)", "linalg",
      **_addmm_family("addr", lambda a, b: F.outer(a, b), {"vec1": 1, "vec2": 1},
                      lambda a, b: shape(a) + shape(b), np.outer, _addr_samples),
      doc="beta * input + alpha * outer(vec1, vec2)")
defop("baddbmm(Tensor input, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1)", "linalg",
      **_addmm_family("baddbmm", lambda a, b: F.matmul(a, b), {"batch1": 3, "batch2": 3},
                      lambda a, b: _matmul_meta(a, b, "baddbmm") if shape(a)[:1] == shape(b)[:1] else
                      _batch_mismatch("baddbmm", a, b), np.matmul, _baddbmm_samples),
      doc="beta * input + alpha * (batch1 @ batch2), batch by batch")


def _batch_mismatch(name, a, b):
    raise ShapeError(f"{name}: batch1 and batch2 must have the same number of batches, got {describe(a)} and "
                     f"{describe(b)}")


def _summed_over_batch(products):
    return F.sum(products, 0, dtype=products.dtype)  # integers keep their dtype, as PyTorch's addbmm


def _addbmm_product_meta(a, b):
    if shape(a)[:1] != shape(b)[:1]:
        _batch_mismatch("addbmm", a, b)
    return _matmul_meta(a, b, "addbmm")[1:]


defop("addbmm(Tensor input, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1)", "linalg",
      **_addmm_family("addbmm", lambda a, b: _summed_over_batch(F.matmul(a, b)),
                      {"batch1": 3, "batch2": 3}, _addbmm_product_meta,
                      lambda a, b: np.matmul(a, b).sum(0, dtype=a.dtype), _addbmm_samples),
      doc="beta * input + alpha * the sum over the batch of batch1[i] @ batch2[i]")


# -- addcmul, addcdiv ---------------------------------------------------------------------------------

def _addc_normalize(op, args) -> None:
    _integral_scalars(op.name, args, ("value",))


def _addc_samples(make, dtype):
    yield Sample((make((2, 3)), make((2, 3)), make((3,))), {"value": 2}, note="value 2")
    yield Sample((make((4,), noncontiguous=True), make((2, 1)), make(())), {"value": 3}, note="broadcast")


def _addcdiv_samples(make, dtype):
    yield Sample((make((2, 3)), make((2, 3)), make((3,), nonzero=True)), {"value": 0.5}, note="value 0.5")


def _scaled(values, value):
    """The references scale as the composites do: not at all by 1 (NumPy's complex product with 1 + 0j would turn
    an infinite part's zero partner into NaN)."""
    return values if value == 1 else value * values


def _addcmul(input, tensor1, tensor2, value=1):
    product = F.mul(tensor1, tensor2)
    return F.add(input, product if value == 1 else F.mul(product, value))


def _addcdiv(input, tensor1, tensor2, value=1):
    quotient = F.div(tensor1, tensor2)
    return F.add(input, quotient if value == 1 else F.mul(quotient, value))


defop("addcmul(Tensor input, Tensor tensor1, Tensor tensor2, *, Scalar value=1)", "elementwise", kind="composite",
      promotion=rules.same, meta=elementwise("addcmul"), normalize=_addc_normalize, composite=_addcmul,
      reference=lambda x, t1, t2, value=1: x + _scaled(t1 * t2, value), samples=_addc_samples, inplace=True,
      dtypes="numeric+complex", doc="input + value * tensor1 * tensor2")
defop("addcdiv(Tensor input, Tensor tensor1, Tensor tensor2, *, Scalar value=1)", "elementwise", kind="composite",
      promotion=rules.same, meta=elementwise("addcdiv"), composite=_addcdiv, dtypes="float+complex",
      reference=lambda x, t1, t2, value=1: x + _scaled(t1 / t2, value), samples=_addcdiv_samples, inplace=True,
      domain={"tensor2": {"nonzero": True}}, doc="input + value * tensor1 / tensor2 (floating tensors only)")


def _dot_method(self, tensor):
    """Tensor.dot(tensor), as the function names it too."""
    return F.dot(self, tensor)


METHODS = {"dot": _dot_method}
