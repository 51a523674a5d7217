"""Reductions and scans. ``dim=None`` reduces everything; dims are wrapped by the dispatcher."""
from __future__ import annotations

from numbers import Number

import math

import numpy as np

from ...schema import rules
from ...schema.dtypes import get_default_dtype, int32, int64, uint8
from ...schema.errors import ArgumentError, ShapeError
from ...schema.meta import shape
from ...schema import FLOAT32_ON_CUDA, Sample, defop
from ..elementwise.complex_support import refusing_complex
from ..namespace import F
from ..onnx_support import any_nan, as_ordered, rank, size_of
from ..elementwise.complex_support import conj
from ..elementwise.opmath import in_opmath, large_magnitudes, rounded, widened
from ._shared import (_dim_pair_meta, _extremum_derivative, _moment_meta, _np_axis, _np_reduce, _reduce_meta,
                      _selected_derivative, _var_reference, keep_reduced_dims)


# -- derivatives ------------------------------------------------------------------------------

def _sum_derivative(grad, input, dim, keepdim):
    if grad.ndim:
        grad = keep_reduced_dims(grad, tuple(input.shape), dim, keepdim)
    return F.expand(grad, tuple(input.shape))


def _exclusive_products(x, dim):
    """For each element, the product of all other elements along dim (exact with zeros)."""
    length = x.shape[dim]
    ones = F.ones_like(F.slice(x, dim, 0, 1))
    before = F.cumprod(F.cat([ones, F.slice(x, dim, 0, length - 1)], dim), dim)
    flipped = F.flip(x, [dim])
    after = F.flip(F.cumprod(F.cat([ones, F.slice(flipped, dim, 0, length - 1)], dim), dim), [dim])
    return F.mul(before, after)


def _as_accumulated(input, dtype):
    """The input as the op computed on it: cast to ``dtype=`` where given (a complex input's real part for a real
    dtype, whose gradient is then real too, as PyTorch's)."""
    return input if dtype is None or input.dtype is dtype else F.to_dtype(input, dtype)


def _prod_derivative(grad, input, dim, keepdim, dtype):
    """grad times the product of the other elements (conjugated, for complex input: PyTorch's convention)."""
    input = _as_accumulated(input, dtype)
    in_shape = tuple(input.shape)
    if input.ndim == 0:
        return grad
    x = input if dim is not None else F.reshape(input, (-1,))
    others = conj(_exclusive_products(x, dim if dim is not None else 0))
    if dim is None:
        return F.mul(F.reshape(others, in_shape), grad)
    return F.mul(others, keep_reduced_dims(grad, in_shape, dim, keepdim))


def _cumsum_derivative(grad, input, dim):
    if input.ndim == 0:
        return grad
    return F.flip(F.cumsum(F.flip(grad, [dim]), dim), [dim])


def _along(t, dim: int, ndim: int):
    """A 1-D tensor reshaped to lie along ``dim`` of an ``ndim``-dimensional shape."""
    return F.reshape(t, tuple(-1 if d == dim else 1 for d in range(ndim)))


def _cumprod_derivative(grad, input, dim, result, dtype):
    """d out_j / d x_i = prod_{k <= j, k != i} x_k for j >= i. Without zeros that is out_j / x_i; with
    zeros, the products are formed explicitly, one input position at a time. Complex input takes their
    conjugates (PyTorch's convention)."""
    input = _as_accumulated(input, dtype)
    if input.ndim == 0:
        return grad
    if bool(F.all(F.ne(input, 0))):
        return F.div(_cumsum_derivative(F.mul(grad, conj(result)), input, dim), conj(input))
    n = input.shape[dim]
    x = F.unsqueeze(input, dim + 1)  # x_k along dim, broadcast over j along dim + 1
    positions = F.arange(n, device=input.device)
    k = _along(positions, dim, input.ndim + 1)
    j = F.transpose(k, dim, dim + 1)
    j_out = _along(positions, dim, input.ndim)
    zeros, ones = F.zeros_like(grad), F.ones_like(x)
    pieces = []
    for i in range(n):
        keep = F.logical_and(F.le(k, j), F.ne(k, i))
        products = F.prod(F.where(keep, x, ones), dim)  # the k axis is gone; j now lies along dim
        pieces.append(F.sum(F.where(F.ge(j_out, i), F.mul(grad, conj(products)), zeros), dim, True))
    return F.cat(pieces, dim)


# -- ONNX lowerings (see ember.onnx.builder) -----------------------------------------------------

def _reduced_dims(g, input, dim):
    """The dims an ONNX reduce takes: None for all; () where nothing is reduced (a 0-d input: an empty ``dim``
    list reaches the reductions as None)."""
    if not rank(g, input):
        return ()
    if dim is None:
        return None
    return (dim,) if isinstance(dim, int) else tuple(dim)


def _empty_reduction(g, input, dims) -> bool:
    shape_ = g.shape_of(input)
    return any(shape_[d] == 0 for d in (range(len(shape_)) if dims is None else dims))


def _reduce_onnx(op_type, propagate_nan=False):
    """sum, prod, amax, amin, mean, logsumexp: one ONNX reduce. Bools reduce as int32 (no bool kernel);
    ``propagate_nan`` puts back the NaN that ReduceMax/ReduceMin skip."""
    def lower(g, input, dim=None, keepdim=False, dtype=None):
        dims = _reduced_dims(g, input, dim)
        if dims == ():
            return g.op("Identity", input)
        if op_type == "ReduceMean" and _empty_reduction(g, input, dims):  # the mean of nothing is NaN
            return g.op("Div", g.reduce("ReduceSum", input, dims, keepdim), g.const(0, g.compute))
        ordered = as_ordered(g, input, g.compute)
        out = g.reduce(op_type, ordered, dims, keepdim)
        out = g.cast(out, g.compute) if ordered is not input else out
        if propagate_nan and g.compute.is_floating_point:
            out = g.op("Where", any_nan(g, input, dims, keepdim), g.const(math.nan, g.compute), out)
        return out
    return lower


def _arg_onnx(op_type):
    """argmax/argmin: the first index of the extremum, NaN counting as it (ONNX ArgMax skips NaN, so the
    first NaN's index replaces the result where a NaN is present). dim=None searches the flattened input."""
    def lower(g, input, dim=None, keepdim=False):
        ndim = rank(g, input)
        if not ndim:
            return g.const(0, int64)
        data, axis = (input, dim) if dim is not None else (g.op("Reshape", input, g.ints([-1])), 0)
        keep = int(keepdim and dim is not None)
        out = g.op(op_type, data, axis=axis, keepdims=keep, select_last_index=0)
        if g.compute.is_floating_point:
            nans = g.cast(g.op("IsNaN", data), int32)
            first_nan = g.op("ArgMax", nans, axis=axis, keepdims=keep, select_last_index=0)
            out = g.op("Where", any_nan(g, data, [axis], bool(keep)), first_nan, out)
        if keepdim and dim is None:
            out = g.op("Reshape", out, g.ints([1] * ndim))
        return out
    return lower


def _scan_onnx(body):
    """cumsum/cumprod: ``body(g, x, dim, ndim, dtype)`` along a dim; a 0-d input is its own scan. A scan asked
    for in bool (dtype=bool) runs in int32, then nonzero is true: sum is or, prod is and."""
    def lower(g, input, dim, dtype=None):
        ndim = rank(g, input)
        if not ndim:
            return g.op("Identity", input)
        if g.compute.kind == "bool":
            return g.cast(body(g, g.cast(input, int32), dim, ndim, int32), g.compute)
        return body(g, input, dim, ndim, g.compute)
    return lower


def _cumsum(g, x, dim, ndim, dtype):
    return g.op("CumSum", x, g.const(dim, int64))


def _cumprod(g, x, dim, ndim, dtype):
    """ONNX has no CumProd: out[j] = prod over k of (x[k] where k <= j, else 1), a ReduceProd over a new axis;
    exact (no logarithms), with the length read at run time."""
    length = g.op("Squeeze", size_of(g, x, dim), g.ints([0]))
    positions = g.op("Range", g.const(0, int64), length, g.const(1, int64))
    upto = g.op("LessOrEqual", g.unsqueeze(positions, [0]), g.unsqueeze(positions, [1]))  # [j, k]: k <= j
    trailing = list(range(2, 2 + ndim - dim - 1))
    upto = g.unsqueeze(upto, trailing) if trailing else upto
    terms = g.op("Where", upto, g.unsqueeze(x, [dim]), g.const(1, dtype))
    return g.reduce("ReduceProd", terms, [dim + 1], False)


# -- primitives -------------------------------------------------------------------------------

def _large_samples(*attrs, magnitude: float = 60000.0, **kwargs):
    """Samples ``op(x, *attrs, **kwargs)`` of large half-precision values (``opmath.large_magnitudes``): the op
    must accumulate in float32, as PyTorch does, to match the reference."""
    def samples(make, dtype):
        for x in large_magnitudes(make, dtype, magnitude=magnitude):
            yield Sample((x, *attrs), dict(kwargs), note=f"half precision up to {magnitude:g}: computes in float32")
    return samples


def _accumulate_samples(make, dtype):
    """``dtype=`` given: the input's own dtype (integers wrap, as asked) and float64; large half-precision values."""
    for requested in (dtype, "float64"):
        yield Sample((make((3, 4)), 1), {"dtype": requested}, note=f"dtype={requested}")
        yield Sample((make((2, 3), noncontiguous=True), 0), {"dtype": requested}, note="non-contiguous")
    yield from _large_samples(1)(make, dtype)


defop("sum(Tensor input, dim[]? dim=None, bool keepdim=False, *, dtype? dtype=None)", "reduction", dtypes="all+complex",
      promotion=rules.accumulate, meta=_reduce_meta("sum"), reference=_np_reduce(np.sum),
      derivative=_sum_derivative, samples=_accumulate_samples, autocast=FLOAT32_ON_CUDA,
      onnx=_reduce_onnx("ReduceSum"), jvp="linear", batch="dims", doc="bool and integer inputs sum in int64")
defop("prod(Tensor input, dim? dim=None, bool keepdim=False, *, dtype? dtype=None)", "reduction", dtypes="all+complex",
      promotion=rules.accumulate, meta=_reduce_meta("prod"), reference=_np_reduce(np.prod),
      derivative=_prod_derivative, samples=_accumulate_samples, autocast="float32",
      onnx=_reduce_onnx("ReduceProd"), batch="dims")


defop("amax(Tensor input, dim[]? dim=None, bool keepdim=False)", "reduction", promotion=rules.same,
      meta=_reduce_meta("amax", needs_elements=True),
      reference=_np_reduce(np.max), doc="NaN propagates",
      onnx=_reduce_onnx("ReduceMax", propagate_nan=True),
      derivative=_extremum_derivative, batch="dims")
defop("amin(Tensor input, dim[]? dim=None, bool keepdim=False)", "reduction", promotion=rules.same,
      meta=_reduce_meta("amin", needs_elements=True),
      reference=_np_reduce(np.min), doc="NaN propagates",
      onnx=_reduce_onnx("ReduceMin", propagate_nan=True),
      derivative=_extremum_derivative, batch="dims")


# -- sum_to_size ------------------------------------------------------------------------------

def _sum_to_size_dims(in_shape: tuple, size: tuple) -> tuple | None:
    """The dims of ``in_shape`` to sum (with keepdim) so that it becomes ``size``: the leading ones and those where
    ``size`` has 1; None where ``in_shape`` is not an expansion of ``size``."""
    lead = len(in_shape) - len(size)
    if lead < 0 or any(s not in (1, t) for s, t in zip(size, in_shape[lead:])):
        return None
    return tuple(range(lead)) + tuple(lead + d for d, s in enumerate(size) if s == 1 and in_shape[lead + d] != 1)


def _sum_to_size_normalize(op, args):
    if _sum_to_size_dims(shape(args["input"]), args["size"]) is None:
        raise ShapeError(f"{op.name}: size {list(args['size'])} is not expandable to the size of the tensor "
                         f"{list(shape(args['input']))}")


def _sum_to_size_promotion(rt, op, args):
    """sum's dtype (integers and bools in int64) where something is summed, else the input as it is, as PyTorch
    returns the input itself there (sum's where asked about a dtype alone, without a tensor or a size)."""
    x, size = args["input"], args["size"]
    if not hasattr(x, "_data") or size is None or _sum_to_size_dims(shape(x), size):
        return rules.accumulate(rt, op, args)
    return rules.passthrough(rt, op, args)


def _sum_to_size(x, size):
    dims = _sum_to_size_dims(tuple(x.shape), size)
    out = F.sum(x, dims, True) if dims else x
    return F.reshape(out, size) if tuple(out.shape) != size else out


def _sum_to_size_reference(x, size):
    size = tuple(size)
    dims = _sum_to_size_dims(np.shape(x), size)
    return np.reshape(np.sum(x, axis=dims, keepdims=True), size) if dims else np.asarray(x)


def _sum_to_size_samples(make, dtype):
    yield Sample((make((2, 3)), (1, 3)))
    yield Sample((make((4, 2, 3), noncontiguous=True), (2, 1)), note="leading dims dropped, non-contiguous")
    yield Sample((make((2, 3)), (2, 3)), note="nothing to sum: the input itself")
    yield Sample((make((3, 1)), (1,)), note="size-1 dims kept")
    yield Sample((make((0, 3)), (1, 3)), note="empty")
    yield Sample((make(()), ()), note="0-d")


defop("sum_to_size(Tensor input, int[] size)", "reduction", dtypes="all+complex", kind="composite",
      promotion=_sum_to_size_promotion,
      normalize=_sum_to_size_normalize, meta=lambda x, size: tuple(size), composite=_sum_to_size,
      reference=_sum_to_size_reference, samples=_sum_to_size_samples,
      doc="input summed down to size, which it must expand to (a gradient's reduction to an operand's shape); "
          "the input itself where size is its shape. A Tensor method in PyTorch, taking the sizes as varargs")


def _arg_reference(fn):
    def reference(x, dim=None, keepdim=False):
        if _np_axis(x, dim) is None:
            out = fn(x.reshape(-1), axis=0)
            return np.reshape(out, (1,) * x.ndim) if keepdim else out
        return fn(x, axis=dim, keepdims=keepdim)
    return reference


defop("argmax(Tensor input, dim? dim=None, bool keepdim=False)", "reduction",
      promotion=refusing_complex(rules.to_int64, "argmax(): does not support complex input"),
      dtypes="numeric", meta=_reduce_meta("argmax", needs_elements=True), reference=_arg_reference(np.argmax),
      differentiable=False, onnx=_arg_onnx("ArgMax"), batch="dims",
      doc="the first index of the maximum; NaN counts as the maximum")
defop("argmin(Tensor input, dim? dim=None, bool keepdim=False)", "reduction",
      promotion=refusing_complex(rules.to_int64, "argmin(): does not support complex input"),
      dtypes="numeric", meta=_reduce_meta("argmin", needs_elements=True), reference=_arg_reference(np.argmin),
      differentiable=False, onnx=_arg_onnx("ArgMin"), batch="dims")


def _scan_meta(x, dim, dtype=None):
    return shape(x)


defop("cumsum(Tensor input, dim dim, *, dtype? dtype=None)", "reduction", promotion=rules.accumulate,
      meta=_scan_meta, reference=lambda x, dim, dtype=None: np.cumsum(x, axis=dim) if x.ndim else x.copy(),
      derivative=_cumsum_derivative, samples=_accumulate_samples, autocast=FLOAT32_ON_CUDA, onnx=_scan_onnx(_cumsum),
      dtypes="all+complex", inplace=True, jvp="linear", batch="dims")
defop("cumprod(Tensor input, dim dim, *, dtype? dtype=None)", "reduction", promotion=rules.accumulate,
      meta=_scan_meta, reference=lambda x, dim, dtype=None: np.cumprod(x, axis=dim) if x.ndim else x.copy(),
      derivative=_cumprod_derivative, samples=_accumulate_samples, autocast=FLOAT32_ON_CUDA, onnx=_scan_onnx(_cumprod),
      dtypes="all+complex", inplace=True, batch="dims")


# -- composites -------------------------------------------------------------------------------

def _count(x, dim) -> int:
    if x.ndim == 0:
        return 1
    dims = range(x.ndim) if dim is None else dim
    return math.prod(x.shape[d] for d in dims)


def _mean(x, dim=None, keepdim=False, dtype=None):
    """The sum and the division in opmath (float32 for half precision), rounded once."""
    out = x.dtype if dtype is None else dtype
    return rounded(F.div(F.sum(widened(x, out), dim, keepdim), _count(x, dim)), out)


def _mean_reference(x, dim=None, keepdim=False, dtype=None):
    return np.mean(x, axis=_np_axis(x, dim), keepdims=keepdim)


defop("mean(Tensor input, dim[]? dim=None, bool keepdim=False, *, dtype? dtype=None)", "reduction",
      kind="composite", promotion=rules.float_or_requested, dtypes="float+complex", meta=_reduce_meta("mean"),
      composite=_mean, reference=_mean_reference, onnx=_reduce_onnx("ReduceMean"), samples=_large_samples(1),
      doc="float inputs only, as in PyTorch")


@in_opmath
def _var(x, dim=None, correction=1, keepdim=False):
    """The mean squared distance from the mean: |x - mean|^2, real for complex input, as in PyTorch."""
    centered = F.sub(x, F.mean(x, dim, True))
    if centered.dtype.is_complex:
        squares = F.add(F.square(F.real(centered)), F.square(F.imag(centered)))
    else:
        squares = F.mul(centered, centered)
    return F.div(F.sum(squares, dim, keepdim), max(_count(x, dim) - correction, 0))


@in_opmath
def _std(x, dim=None, correction=1, keepdim=False):
    """The square root of the variance before it is rounded (a half-precision variance may overflow where
    its square root does not)."""
    return F.sqrt(_var(x, dim, correction, keepdim))


defop("var(Tensor input, dim[]? dim=None, *, Scalar correction=1, bool keepdim=False)", "reduction",
      kind="composite", promotion=rules.same_real, dtypes="float+complex", meta=_moment_meta("var"), composite=_var,
      reference=_var_reference, samples=_large_samples(1, magnitude=200.0), doc="Bessel-corrected by default (correction=1)")
defop("std(Tensor input, dim[]? dim=None, *, Scalar correction=1, bool keepdim=False)", "reduction",
      kind="composite", promotion=rules.same_real, dtypes="float+complex", meta=_moment_meta("std"),
      composite=_std, samples=_large_samples(1),
      reference=lambda x, dim=None, correction=1, keepdim=False: np.sqrt(_var_reference(x, dim, correction,
                                                                                        keepdim)))


def _logsumexp(x, dim, keepdim=False):
    if not x.dtype.is_floating_point:  # integers and bools compute in the default float dtype
        x = F.to_dtype(x, get_default_dtype())
    return _logsumexp_float(x, dim, keepdim)


@in_opmath
def _logsumexp_float(x, dim, keepdim):
    peak = F.amax(x, dim, True)
    peak = F.where(F.isinf(peak), F.zeros_like(peak), peak)
    total = F.log(F.sum(F.exp(F.sub(x, peak)), dim, True))
    out = F.add(total, peak)
    return out if keepdim else F.squeeze(out, dim)


def _complex_logsumexp(x, dim, keepdim=False):
    """PyTorch's form for complex input: shifted by the largest real part, each step recording its own node."""
    peak = F.amax(F.real(x), dim, True)
    peak = F.where(F.isinf(peak), F.zeros_like(peak), peak)
    out = F.add(F.log(F.sum(F.exp(F.sub(x, peak)), dim, True)), peak)
    return out if keepdim else F.squeeze(out, dim)


def _logsumexp_reference(x, dim, keepdim=False):
    x, axis = np.asarray(x, dtype=np.complex128 if np.iscomplexobj(x) else np.float64), _np_axis(x, dim)
    peak = np.max(x.real, axis=axis, keepdims=True)
    peak = np.where(np.isinf(peak), 0, peak)
    out = np.log(np.sum(np.exp(x - peak), axis=axis, keepdims=True)) + peak
    return out if keepdim else np.squeeze(out, axis=axis)


def _logsumexp_derivative(grad, input, dim, keepdim, result):
    """softmax(input) * grad, from the saved result."""
    in_shape = tuple(input.shape)
    weights = F.exp(F.sub(input, keep_reduced_dims(result, in_shape, dim, keepdim)))
    return F.mul(weights, keep_reduced_dims(grad, in_shape, dim, keepdim))


defop("logsumexp(Tensor input, dim[]? dim, bool keepdim=False)", "reduction", kind="composite",
      promotion=rules.to_float, dtypes="all+complex", complex_decomposition=_complex_logsumexp,
      meta=_reduce_meta("logsumexp", needs_elements=True), composite=_logsumexp,
      reference=_logsumexp_reference, derivative=_logsumexp_derivative, autocast=FLOAT32_ON_CUDA,
      samples=_large_samples(1),
      onnx=_reduce_onnx("ReduceLogSumExp"),
      doc="log(sum(exp(input))) without overflow")


def _as_truth_of(x, answer):
    """any/all answer in bool, but in uint8 for uint8 input (rules.truth)."""
    return F.to_dtype(answer, uint8) if x.dtype is uint8 else answer


def _no_dims(dim) -> bool:
    """An empty dim list: PyTorch's any and all reduce no dim then, where sum would reduce every one."""
    return dim is not None and len(dim) == 0


def _all(x, dim=None, keepdim=False):
    if _no_dims(dim):
        return _as_truth_of(x, F.ne(x, 0))
    return _as_truth_of(x, F.eq(F.sum(F.logical_not(x), dim, keepdim), 0))


def _any(x, dim=None, keepdim=False):
    if _no_dims(dim):
        return _as_truth_of(x, F.ne(x, 0))
    return _as_truth_of(x, F.gt(F.sum(F.ne(x, 0), dim, keepdim), 0))


def _truth_reference(fn):
    def reference(x, dim=None, keepdim=False):
        out = fn(x, axis=_np_axis(x, dim), keepdims=keepdim)
        return out.astype(np.uint8) if x.dtype == np.uint8 else out
    return reference


defop("all(Tensor input, dim[]? dim=None, bool keepdim=False)", "reduction", dtypes="all+complex", kind="composite",
      promotion=rules.truth, meta=_reduce_meta("all"), composite=_all, reference=_truth_reference(np.all),
      empty_dim_reduces_all=False, differentiable=False, doc="bool, or uint8 for uint8 input, as in PyTorch")
defop("any(Tensor input, dim[]? dim=None, bool keepdim=False)", "reduction", dtypes="all+complex", kind="composite",
      promotion=rules.truth, meta=_reduce_meta("any"), composite=_any, reference=_truth_reference(np.any),
      empty_dim_reduces_all=False, differentiable=False, doc="bool, or uint8 for uint8 input, as in PyTorch")


def _max_dim(x, dim, keepdim=False):
    return F.amax(x, dim, keepdim), F.argmax(x, dim, keepdim)


def _min_dim(x, dim, keepdim=False):
    return F.amin(x, dim, keepdim), F.argmin(x, dim, keepdim)


defop("max(Tensor input, dim dim, bool keepdim=False)", "reduction", kind="composite",
      promotion=refusing_complex(rules.with_indices, "max(): does not support complex input"),
      dtypes="numeric", meta=_dim_pair_meta("max"), composite=_max_dim,
      outputs=("values", "indices"), derivative=_selected_derivative,
      reference=lambda x, dim, keepdim=False: (np.max(x, axis=_np_axis(x, dim), keepdims=keepdim),
                                               np.argmax(x, axis=_np_axis(x, dim), keepdims=keepdim)),
      doc="values and indices of the maximum along dim; ember.max(x) and ember.max(x, y) also work")
defop("min(Tensor input, dim dim, bool keepdim=False)", "reduction", kind="composite",
      promotion=refusing_complex(rules.with_indices, "min(): does not support complex input"),
      dtypes="numeric", meta=_dim_pair_meta("min"), composite=_min_dim,
      outputs=("values", "indices"), derivative=_selected_derivative,
      reference=lambda x, dim, keepdim=False: (np.min(x, axis=_np_axis(x, dim), keepdims=keepdim),
                                               np.argmin(x, axis=_np_axis(x, dim), keepdims=keepdim)))


def _norm(x, p="fro", dim=None, keepdim=False, dtype=None):
    """In opmath (float32 for half precision: squares of large values overflow float16), rounded once."""
    out = x.dtype if dtype is None else dtype
    return rounded(_norm_of(widened(x, out), p, dim, keepdim), out)


def _norm_of(x, p, dim, keepdim):
    if p in ("fro", 2, 2.0):
        return F.sqrt(F.sum(F.mul(x, x), dim, keepdim))
    magnitude = F.abs(x)
    if p == math.inf:
        return F.amax(magnitude, dim, keepdim)
    if p == -math.inf:
        return F.amin(magnitude, dim, keepdim)
    if p == 0:
        return F.sum(F.to_dtype(F.ne(x, 0), x.dtype), dim, keepdim)
    if p == 1:
        return F.sum(magnitude, dim, keepdim)
    return F.pow(F.sum(F.pow(magnitude, p), dim, keepdim), 1.0 / p)


def _norm_check(op, args):
    p = args["p"]
    if hasattr(p, "_data") and p.numel() == 1 or isinstance(p, Number) and hasattr(p, "item"):
        p = args["p"] = p.item()  # a 0-d tensor or a NumPy scalar: its number, as PyTorch's Scalar
    elif p is None:
        p = args["p"] = "fro"  # PyTorch's default: the 2-norm of the elements
    if not (p == "fro" or (isinstance(p, (int, float)) and not isinstance(p, bool))):
        raise ArgumentError(f"norm: p must be a number or 'fro', got {p!r}")


def _norm_reference(x, p="fro", dim=None, keepdim=False, dtype=None):
    x, axis = np.abs(x) if np.iscomplexobj(x) else np.asarray(x, dtype=np.float64), _np_axis(x, dim)
    if p in ("fro", 2, 2.0):
        return np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdim))
    if p == math.inf:
        return np.max(np.abs(x), axis=axis, keepdims=keepdim)
    if p == -math.inf:
        return np.min(np.abs(x), axis=axis, keepdims=keepdim)
    if p == 0:
        return np.sum(x != 0, axis=axis, keepdims=keepdim).astype(np.float64)
    return np.sum(np.abs(x) ** p, axis=axis, keepdims=keepdim) ** (1.0 / p)


def _norm_derivative(grad, input, p, dim, keepdim, result):
    """d||x||_p/dx = sign(x) |x|^(p-1) / ||x||^(p-1); zero where the norm is zero (PyTorch's subgradient)."""
    dtype = grad.dtype
    return rounded(_norm_slope(widened(grad), widened(input, dtype), p, dim, keepdim, widened(result)), dtype)


def _norm_slope(grad, input, p, dim, keepdim, result):
    """_norm_derivative in opmath."""
    in_shape, x = tuple(input.shape), input
    grad = keep_reduced_dims(grad, in_shape, dim, keepdim)
    norm = keep_reduced_dims(result, in_shape, dim, keepdim)
    zeros = F.zeros_like(x)
    if p == 0:
        return zeros
    if p == 1:
        return F.mul(F.sign(x), grad)
    if p in (math.inf, -math.inf):
        hits = F.to_dtype(F.eq(F.abs(x), norm), x.dtype)
        return F.mul(F.mul(F.sign(x), F.div(hits, F.sum(hits, dim, True))), grad)
    if p in ("fro", 2, 2.0):
        scaled = F.div(x, norm)
    else:
        scaled = F.div(F.mul(F.sign(x), F.pow(F.abs(x), p - 1)), F.pow(norm, p - 1))
    return F.mul(F.where(F.eq(norm, 0), zeros, scaled), grad)


def _norms_samples(make, dtype):
    """Half-precision values whose squares and cubes overflow float16 while their norms do not."""
    for p in (2, 3):
        yield from _large_samples(p, 1, magnitude=8000.0)(make, dtype)


def _norm_meta(x, p="fro", dim=None, keepdim=False, dtype=None):
    return _reduce_meta("norm")(x, dim, keepdim)


def _norm_promotion(rt, op, args):
    """A norm is real: the component dtype of a complex input (or of a complex ``dtype=``)."""
    compute, out = rules.float_or_requested(rt, op, args)
    return compute, out.to_real()


def _complex_norm(x, p="fro", dim=None, keepdim=False, dtype=None):
    """The norm of the magnitudes, each step recording its own node (abs's derivative brings grad * sgn(x))."""
    return F.norm(F.abs(x), p, dim, keepdim, dtype=None if dtype is None else dtype.to_real())


defop("norm(Tensor input, Any p='fro', dim[]? dim=None, bool keepdim=False, *, dtype? dtype=None)",
      "reduction", kind="composite", promotion=_norm_promotion, dtypes="float+complex", meta=_norm_meta,
      complex_decomposition=_complex_norm,
      numpy_keywords=False, normalize=_norm_check, composite=_norm, reference=_norm_reference,
      derivative=_norm_derivative,
      samples=_norms_samples,
      autocast=FLOAT32_ON_CUDA,
      doc="vector p-norm over dim (all elements by default); 'fro' is the 2-norm")
