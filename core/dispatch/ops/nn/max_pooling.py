"""Max pooling that reports where each maximum came from: ``max_pool{1,2,3}d_with_indices``,
``adaptive_max_pool{1,2,3}d``, ``fractional_max_pool{2,3}d``, and their inverse ``max_unpool{2,3}d``.

The three poolings differ only in which input positions each output looks at, so one N-d body serves them
all: per spatial dim, a table ``(out, taps)`` of input positions (a regular stride, PyTorch's adaptive bins,
or the pseudo-random fractional intervals) and whether each is inside the input. The positions of all dims
combine into flat indices into the image; one ``gather`` reads every window, the maximum and its first
position (a NaN wins, as in PyTorch) give values and indices. The gradient sends each output's gradient to
its index with one ``scatter_add``, which is also how ``max_unpool`` places values.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ...schema import rules
from ...execution.dispatcher import note_value_read
from ...schema.dtypes import bool_, int64
from ...schema.meta import require, shape
from ...schema import Sample, defop
from ..namespace import F
from .pooling import pool_normalize
from ._shared import _adaptive_normalize, _lowest, _pool_output_size
from .spatial import at_least, expand_attr, int_tuple


# -- the shared body: windows given by position tables --------------------------------------------------------

def _combined(tables: list, lead: int):
    """Per-dim tensors (lead..., out_d, taps_d) -> one tensor (lead..., *out, *taps) of their sum, each
    broadcast along the other dims (the flat index, or the count of valid dims)."""
    n = len(tables)
    total = None
    for d, table in enumerate(tables):
        view = [1] * (2 * n)
        view[d], view[n + d] = table.shape[-2], table.shape[-1]
        term = F.reshape(table, tuple(table.shape[:lead]) + tuple(view))
        total = term if total is None else F.add(total, term)
    return total


def _max_over_positions(x, positions: list, valid: list):
    """x (N, C, *sizes); positions[d] and valid[d]: (N or 1, C or 1, out_d, taps_d) int64 / bool tables.
    Returns the maxima (N, C, *out) and their flat indices into the spatial dims."""
    n = len(positions)
    batch, channels, sizes = x.shape[0], x.shape[1], tuple(x.shape[2:])
    strides = [math.prod(sizes[d + 1:]) for d in range(n)]
    flat = _combined([F.mul(F.clamp(p, 0, s - 1), st) for p, s, st in zip(positions, sizes, strides)], 2)
    inside = F.eq(_combined([F.to_dtype(v, int64) for v in valid], 2), n)
    out = tuple(flat.shape[2:2 + n])
    lead = (batch, channels)
    flat = F.reshape(F.expand(flat, lead + tuple(flat.shape[2:])), lead + out + (-1,))
    inside = F.reshape(F.expand(inside, lead + tuple(inside.shape[2:])), lead + out + (-1,))
    image = F.reshape(x, lead + (-1,))
    windows = F.reshape(F.gather(image, 2, F.reshape(flat, lead + (-1,))), tuple(flat.shape))
    windows = F.where(inside, windows, _lowest(x.dtype))
    best = F.amax(windows, -1, True)
    taps = windows.shape[-1]
    order = F.arange(taps, device=x.device)
    hits = F.logical_and(F.logical_or(F.eq(windows, best), F.isnan(windows)), inside)
    first = F.amin(F.where(hits, order, taps), -1, True)
    last_nan = F.amax(F.where(F.isnan(windows), order, -1), -1, True)  # PyTorch's loop ends on the last NaN
    tap = F.where(F.isnan(best), last_nan, first)
    indices = F.squeeze(F.gather(flat, -1, F.clamp(tap, 0, taps - 1)), -1)
    return F.squeeze(best, -1), indices


def _scatter_to_indices(grad, input, indices, spatial: int):
    """Each output's gradient added onto the input element its index names (overlapping windows add up)."""
    lead = tuple(input.shape[:input.ndim - spatial])
    plane = F.zeros(lead + (math.prod(input.shape[input.ndim - spatial:]),), dtype=grad.dtype, device=grad.device)
    plane = F.scatter_add(plane, -1, F.reshape(indices, lead + (-1,)), F.reshape(grad, lead + (-1,)))
    return F.reshape(plane, tuple(input.shape))


def _batched_call(body, x, spatial: int):
    """body on x with a batch dim (unbatched (C, *spatial) input gets one, removed from both results)."""
    if x.ndim == spatial + 2:
        return body(x)
    values, indices = body(F.unsqueeze(x, 0))
    return F.squeeze(values, 0), F.squeeze(indices, 0)


def _check_input(op_name: str, x, spatial: int) -> None:
    in_shape = shape(x)
    require(len(in_shape) in (spatial + 1, spatial + 2) and all(in_shape[-spatial - 1:]), op_name,
            f"expected a {spatial + 1}-D (C, *spatial) or {spatial + 2}-D (N, C, *spatial) input with non-zero "
            f"channels and spatial sizes", x)


# -- max_pool{1,2,3}d_with_indices -----------------------------------------------------------------------------

def _max_pool_meta(op_name: str, n: int):
    def meta(x, kernel_size, stride, padding, dilation, ceil_mode):
        _check_input(op_name, x, n)
        out = tuple(_pool_output_size(*a, ceil_mode) for a in zip(shape(x)[-n:], kernel_size, stride, padding,
                                                                    dilation))
        require(all(o > 0 for o in out), op_name, f"calculated output size {out} is too small for "
                f"kernel_size={kernel_size}, padding={padding}, dilation={dilation}", x)
        result = shape(x)[:-n] + out
        return result, result
    return meta


def _strided_positions(size: int, k: int, s: int, p: int, d: int, out: int, device):
    """(1, 1, out, k) input positions of the (dilated) windows, and which of them are inside the input."""
    position = F.add(F.unsqueeze(F.sub(F.mul(F.arange(out, device=device), s), p), 1),
                     F.mul(F.arange(k, device=device), d))
    inside = F.logical_and(F.ge(position, 0), F.lt(position, size))
    return F.reshape(position, (1, 1, out, k)), F.reshape(inside, (1, 1, out, k))


def _max_pool_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode):
    n = len(kernel_size)

    def body(x):
        tables = [_strided_positions(size, k, s, p, d, _pool_output_size(size, k, s, p, d, ceil_mode), x.device)
                  for size, k, s, p, d in zip(x.shape[2:], kernel_size, stride, padding, dilation)]
        return _max_over_positions(x, [t[0] for t in tables], [t[1] for t in tables])
    return _batched_call(body, x, n)


def _pool_reference_positions(size, k, s, p, d, ceil_mode):
    out = _pool_output_size(size, k, s, p, d, ceil_mode)
    return [[o * s - p + t * d for t in range(k) if 0 <= o * s - p + t * d < size] for o in range(out)]


def _max_reference(x, n: int, position_lists):
    """Per output position: the largest element of its window (the first of ties; the last NaN) and its flat
    index. ``position_lists[d][o]`` lists dim d's input positions of output o, for every plane alike, or
    ``position_lists(plane)`` gives them per (n, c) plane."""
    x = np.asarray(x)
    lead = x.shape[:-n]
    sizes = x.shape[-n:]
    values, indices = None, None
    for plane in np.ndindex(*lead):
        lists = position_lists(plane) if callable(position_lists) else position_lists
        if values is None:
            out = tuple(len(p) for p in lists)
            values, indices = np.zeros(lead + out, x.dtype), np.zeros(lead + out, np.int64)
        for o in np.ndindex(*(len(p) for p in lists)):
            best, where = None, None
            for point in itertools.product(*(lists[d][o[d]] for d in range(n))):
                v = x[plane + point]
                if best is None or v > best or np.isnan(v):
                    best, where = v, point
            values[plane + o] = best
            indices[plane + o] = np.ravel_multi_index(where, sizes)
    return values, indices


def _max_pool_reference(n: int, values_only: bool = False):
    """The reference of an n-D max pooling: (values, indices), or the values alone."""
    def reference(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
        k = expand_attr(kernel_size, n)
        s = expand_attr(stride, n) if stride not in (None, (), []) else k
        lists = [_pool_reference_positions(size, *a, ceil_mode)
                 for size, *a in zip(x.shape[-n:], k, s, expand_attr(padding, n), expand_attr(dilation, n))]
        result = _max_reference(x, n, lists)
        return result[0] if values_only else result
    return reference


def _max_pool_samples(n: int):
    shapes = {1: ((2, 3, 9), (3, 8)), 2: ((2, 2, 6, 7), (2, 5, 5)), 3: ((1, 2, 4, 5, 4), (2, 4, 3, 5))}[n]

    def samples(make, dtype):
        yield Sample((make(shapes[0]), (2,) * n))
        yield Sample((make(shapes[0]), (3,) * n, (2,) * n, (1,) * n), {"dilation": (1,) * (n - 1) + (2,)},
                     note="padded, dilated")
        yield Sample((make(shapes[1], noncontiguous=True), (2,) * n, (2,) * n, (0,) * n, (1,) * n, True),
                     note="unbatched, ceil mode")
        if dtype.is_floating_point:
            ties = F.round(make(shapes[0], low=-2, high=2))
            yield Sample((ties, (2,) * n, (1,) * n), note="ties: the first maximum wins", gradcheck=False)
    return samples


def _max_pool_derivative(spatial: int):
    return {"input": lambda grads, input, results: _scatter_to_indices(grads[0], input, results[1], spatial)}


_MAX_POOL_TAIL = "(Tensor input, int[] kernel_size, int[]? stride=None, int[] padding=0, int[] dilation=1, " \
                 "bool ceil_mode=False)"
_MAX_POOL_DOC = ("the maximum of each (dilated) window of a {n}-D pooling and its flat index into the input's "
                 "spatial dims (for max_unpool); padding never wins; NaN propagates")
defop("max_pool1d_with_indices" + _MAX_POOL_TAIL, "nn", kind="composite", promotion=rules.with_indices,
      dtypes="numeric", meta=_max_pool_meta("max_pool1d_with_indices", 1), normalize=pool_normalize(1),
      composite=_max_pool_with_indices, reference=_max_pool_reference(1), samples=_max_pool_samples(1),
      outputs=("values", "indices"), derivative=_max_pool_derivative(1), method=False,
      doc=_MAX_POOL_DOC.format(n=1))
defop("max_pool2d_with_indices" + _MAX_POOL_TAIL, "nn", kind="composite", promotion=rules.with_indices,
      dtypes="numeric", meta=_max_pool_meta("max_pool2d_with_indices", 2), normalize=pool_normalize(2),
      composite=_max_pool_with_indices, reference=_max_pool_reference(2), samples=_max_pool_samples(2),
      outputs=("values", "indices"), derivative=_max_pool_derivative(2), method=False,
      doc=_MAX_POOL_DOC.format(n=2))
defop("max_pool3d_with_indices" + _MAX_POOL_TAIL, "nn", kind="composite", promotion=rules.with_indices,
      dtypes="numeric", meta=_max_pool_meta("max_pool3d_with_indices", 3), normalize=pool_normalize(3),
      composite=_max_pool_with_indices, reference=_max_pool_reference(3), samples=_max_pool_samples(3),
      outputs=("values", "indices"), derivative=_max_pool_derivative(3), method=False,
      doc=_MAX_POOL_DOC.format(n=3))


def _values_meta(with_indices_meta):
    def meta(*args):
        return with_indices_meta(*args)[0]
    return meta


def _max_pool1d(x, kernel_size, stride, padding, dilation, ceil_mode):
    """A max_pool2d over a height of one (the backends' 2-D kernels serve it)."""
    out = F.max_pool2d(F.unsqueeze(x, -2), (1,) + kernel_size, (1,) + stride, (0,) + padding, (1,) + dilation,
                       ceil_mode)
    return F.squeeze(out, -2)


defop("max_pool1d" + _MAX_POOL_TAIL, "nn", kind="composite", promotion=rules.same, dtypes="numeric",
      meta=_values_meta(_max_pool_meta("max_pool1d", 1)), normalize=pool_normalize(1), composite=_max_pool1d,
      reference=_max_pool_reference(1, values_only=True), samples=_max_pool_samples(1), method=False,
      doc="the maximum of each (dilated) window over (N, C, L) or (C, L) input")
defop("max_pool3d" + _MAX_POOL_TAIL, "nn", kind="composite", promotion=rules.same, dtypes="numeric",
      meta=_values_meta(_max_pool_meta("max_pool3d", 3)), normalize=pool_normalize(3),
      composite=lambda *args: F.max_pool3d_with_indices(*args)[0],
      reference=_max_pool_reference(3, values_only=True), samples=_max_pool_samples(3), method=False,
      doc="the maximum of each (dilated) window over (N, C, D, H, W) or (C, D, H, W) input")


# -- adaptive_max_pool{1,2,3}d ---------------------------------------------------------------------------------

def _adaptive_max_meta(op_name: str, n: int):
    def meta(x, output_size):
        _check_input(op_name, x, n)
        require(all(o > 0 for o in output_size), op_name, f"output_size must be positive, got {tuple(output_size)}", x)
        result = shape(x)[:-n] + tuple(output_size)
        return result, result
    return meta


def _bin_positions(size: int, out: int, device):
    """(1, 1, out, taps) positions of PyTorch's adaptive bins [floor(o size / out), ceil((o + 1) size / out))."""
    taps = max(-(-(o + 1) * size // out) - o * size // out for o in range(out))
    bins = F.arange(out, device=device)
    start = F.unsqueeze(F.floor_divide(F.mul(bins, size), out), 1)
    end = F.unsqueeze(F.neg(F.floor_divide(F.mul(F.add(bins, 1), -size), out)), 1)
    position = F.add(start, F.arange(taps, device=device))
    return F.reshape(position, (1, 1, out, taps)), F.reshape(F.lt(position, end), (1, 1, out, taps))


def _adaptive_max_pool(x, output_size):
    def body(x):
        tables = [_bin_positions(size, out, x.device) for size, out in zip(x.shape[2:], output_size)]
        return _max_over_positions(x, [t[0] for t in tables], [t[1] for t in tables])
    return _batched_call(body, x, len(output_size))


def _adaptive_max_reference(x, output_size):
    n = len(output_size)
    output_size = [x.shape[d - n] if o is None else o for d, o in enumerate(output_size)]
    lists = [[list(range(o * size // out, -(-(o + 1) * size // out))) for o in range(out)]
             for size, out in zip(x.shape[-n:], output_size)]
    return _max_reference(x, n, lists)


def _adaptive_max_samples(n: int):
    shapes = {1: ((2, 3, 7), (3, 5)), 2: ((2, 2, 5, 7), (2, 6, 4)), 3: ((1, 2, 4, 5, 3), (2, 3, 4, 5))}[n]

    def samples(make, dtype):
        yield Sample((make(shapes[0]), (3,) * n), note="overlapping bins")
        yield Sample((make(shapes[1], noncontiguous=True), (2,) * (n - 1) + (None,)), note="unbatched, None keeps")
        yield Sample((make(shapes[0]), (1,) * n), note="global maximum")
    return samples


_ADAPTIVE_DOC = "the maximum of each of PyTorch's adaptive bins for a {n}-D output_size, and its flat index"
defop("adaptive_max_pool1d(Tensor input, Any output_size)", "nn", kind="composite", promotion=rules.with_indices,
      dtypes="numeric", meta=_adaptive_max_meta("adaptive_max_pool1d", 1), normalize=_adaptive_normalize(1),
      composite=_adaptive_max_pool, reference=_adaptive_max_reference, samples=_adaptive_max_samples(1),
      outputs=("values", "indices"), derivative=_max_pool_derivative(1), method=False,
      doc=_ADAPTIVE_DOC.format(n=1))
defop("adaptive_max_pool2d(Tensor input, Any output_size)", "nn", kind="composite", promotion=rules.with_indices,
      dtypes="numeric", meta=_adaptive_max_meta("adaptive_max_pool2d", 2), normalize=_adaptive_normalize(2),
      composite=_adaptive_max_pool, reference=_adaptive_max_reference, samples=_adaptive_max_samples(2),
      outputs=("values", "indices"), derivative=_max_pool_derivative(2), method=False,
      doc=_ADAPTIVE_DOC.format(n=2))
defop("adaptive_max_pool3d(Tensor input, Any output_size)", "nn", kind="composite", promotion=rules.with_indices,
      dtypes="numeric", meta=_adaptive_max_meta("adaptive_max_pool3d", 3), normalize=_adaptive_normalize(3),
      composite=_adaptive_max_pool, reference=_adaptive_max_reference, samples=_adaptive_max_samples(3),
      outputs=("values", "indices"), derivative=_max_pool_derivative(3), method=False,
      doc=_ADAPTIVE_DOC.format(n=3))


# -- fractional_max_pool{2,3}d ----------------------------------------------------------------------------------

def _fractional_normalize(n: int):
    def normalize(op, args):
        args["kernel_size"] = at_least(op.name, "kernel_size", int_tuple(op.name, "kernel_size",
                                                                         args["kernel_size"], n), 1)
        args["output_size"] = at_least(op.name, "output_size", int_tuple(op.name, "output_size",
                                                                         args["output_size"], n), 1)
    return normalize


def _fractional_meta(op_name: str, n: int):
    def meta(x, kernel_size, output_size, random_samples):
        _check_input(op_name, x, n)
        sizes = shape(x)[-n:]
        for size, k, out in zip(sizes, kernel_size, output_size):
            require(out + k - 1 <= size, op_name, f"output_size {tuple(output_size)} plus kernel_size "
                    f"{tuple(kernel_size)} minus one must not exceed the input size {tuple(sizes)}", x)
        batch = shape(x)[0] if len(shape(x)) == n + 2 else 1
        require(shape(random_samples) == (batch, shape(x)[-n - 1], n), op_name, f"random_samples must have shape "
                f"(batch, channels, {n}) = {(batch, shape(x)[-n - 1], n)}", x, random_samples)
        result = shape(x)[:-n] + tuple(output_size)
        return result, result
    return meta


def _interval_starts(sample, size: int, pool: int, out: int):
    """PyTorch's pseudo-random window starts for one dim: (N, C, out) from a (N, C) sample in [0, 1);
    ``int((i + u) alpha) - int(u alpha)`` with alpha = (size - pool) / (out - 1), the last start at size - pool.
    Computed in the sample's dtype, as PyTorch's kernel does in the input's."""
    last = F.full(tuple(sample.shape) + (1,), size - pool, dtype=int64, device=sample.device)
    if out == 1:
        return last
    alpha = F.div(F.full((), size - pool, dtype=sample.dtype, device=sample.device), out - 1)
    steps = F.add(F.arange(out - 1, dtype=sample.dtype, device=sample.device), F.unsqueeze(sample, -1))
    starts = F.sub(F.to_dtype(F.mul(steps, alpha), int64), F.unsqueeze(F.to_dtype(F.mul(sample, alpha), int64), -1))
    return F.cat([starts, last], -1)


def _fractional_max_pool(x, kernel_size, output_size, random_samples):
    n = len(kernel_size)
    # 2-D draws its sample for the width first; 3-D in dim order (PyTorch's kernels)
    order = [1, 0] if n == 2 else [0, 1, 2]

    def body(x):
        positions, valid = [], []
        for d, (size, k, out) in enumerate(zip(x.shape[2:], kernel_size, output_size)):
            starts = _interval_starts(F.select(random_samples, -1, order[d]), size, k, out)
            position = F.add(F.unsqueeze(starts, -1), F.arange(k, device=x.device))
            positions.append(position)
            valid.append(F.ones((1, 1, out, k), dtype=bool_, device=x.device))
        return _max_over_positions(x, positions, valid)
    return _batched_call(body, x, n)


def _fractional_reference(x, kernel_size, output_size, random_samples):
    n = random_samples.shape[-1]
    kernel_size, output_size = expand_attr(kernel_size, n), expand_attr(output_size, n)
    order = [1, 0] if n == 2 else [0, 1, 2]
    samples = np.asarray(random_samples)
    batched = x.ndim == n + 2

    def starts(u, size, pool, out):
        if out == 1:
            return [size - pool]
        alpha = samples.dtype.type(size - pool) / samples.dtype.type(out - 1)
        return [int((samples.dtype.type(i) + u) * alpha) - int(u * alpha) for i in range(out - 1)] + [size - pool]

    def tables(plane):
        u = samples[plane if batched else (0,) + plane]
        return [[list(range(s, s + k)) for s in starts(u[order[d]], size, k, out)]
                for d, (size, k, out) in enumerate(zip(x.shape[-n:], kernel_size, output_size))]
    return _max_reference(x, n, tables)


def _fractional_samples(n: int):
    """Samples on a grid of 1/8 and sizes whose interval steps alpha are exact in half precision, where the
    op computes in the input's dtype as PyTorch does, and the reference in float64."""
    def samples(make, dtype):
        def u(*s):  # in the input's dtype, as PyTorch requires (an integer dtype gets zeros, and is refused)
            return F.to_dtype(F.div(F.floor(F.mul(make(s, low=0, high=1, dtype="float32"), 8)), 8), dtype)
        if n == 2:
            yield Sample((make((2, 2, 7, 6)), (2, 2), (3, 3), u(2, 2, 2)))
            yield Sample((make((2, 5, 5), noncontiguous=True), (3, 2), (2, 4), u(1, 2, 2)), note="unbatched")
            yield Sample((make((1, 1, 4, 4)), 2, 1, u(1, 1, 2)), note="a single window per dim")
        else:
            yield Sample((make((1, 2, 5, 6, 5)), (2, 2, 2), (3, 3, 2), u(1, 2, 3)))
            yield Sample((make((2, 4, 4, 5), noncontiguous=True), (2, 3, 2), 2, u(1, 2, 3)), note="unbatched")
    return samples


_FRACTIONAL_TAIL = "(Tensor input, int[] kernel_size, int[] output_size, Tensor random_samples)"
_FRACTIONAL_DOC = ("fractional max pooling (Graham, 2014): windows of kernel_size at pseudo-random starts fixed by "
                   "random_samples (N, C, {n}) in [0, 1), giving output_size; values and flat indices")
defop("fractional_max_pool2d" + _FRACTIONAL_TAIL, "nn", kind="composite", promotion=rules.with_indices,
      dtypes="float", meta=_fractional_meta("fractional_max_pool2d", 2), normalize=_fractional_normalize(2),
      composite=_fractional_max_pool, reference=_fractional_reference, samples=_fractional_samples(2),
      outputs=("values", "indices"), derivative=_max_pool_derivative(2), nondifferentiable_inputs=("random_samples",),
      method=False, doc=_FRACTIONAL_DOC.format(n=2))
defop("fractional_max_pool3d" + _FRACTIONAL_TAIL, "nn", kind="composite", promotion=rules.with_indices,
      dtypes="float", meta=_fractional_meta("fractional_max_pool3d", 3), normalize=_fractional_normalize(3),
      composite=_fractional_max_pool, reference=_fractional_reference, samples=_fractional_samples(3),
      outputs=("values", "indices"), derivative=_max_pool_derivative(3), nondifferentiable_inputs=("random_samples",),
      method=False, doc=_FRACTIONAL_DOC.format(n=3))


# -- max_unpool{2,3}d ------------------------------------------------------------------------------------------

def _unpool_normalize(n: int):
    """output_size (and max_unpool3d's stride and padding) -> n values; every index checked against the
    output plane: this reads the data, as PyTorch does."""
    def normalize(op, args):
        for name, low in (("output_size", 0), ("stride", 1), ("padding", 0)):
            if name in args:
                args[name] = at_least(op.name, name, int_tuple(op.name, name, args[name], n), low)
        indices = args["indices"]
        if indices.numel():
            note_value_read()
            low, high, plane = F.amin(indices).item(), F.amax(indices).item(), math.prod(args["output_size"])
            if low < 0 or high >= plane:
                raise IndexError(f"{op.name}: found an invalid max index {low if low < 0 else high} (the output "
                                 f"plane of {tuple(args['output_size'])} has {plane} elements)")
    return normalize


def _unpool_meta(op_name: str, n: int):
    def meta(x, indices, output_size, *rest):
        require(len(shape(x)) in (n + 1, n + 2), op_name, f"expected a {n + 1}-D or {n + 2}-D input", x)
        require(shape(indices) == shape(x), op_name, "indices must have the input's shape", x, indices)
        return shape(x)[:-n] + tuple(output_size)
    return meta


def _max_unpool(x, indices, output_size, *unused):
    """Zeros of output_size with each value written at its index (where several share one, any may win)."""
    n = len(output_size)
    lead = tuple(x.shape[:-n])
    plane = F.zeros(lead + (math.prod(output_size),), dtype=x.dtype, device=x.device)
    plane = F.scatter(plane, -1, F.reshape(indices, lead + (-1,)), F.reshape(x, lead + (-1,)))
    return F.reshape(plane, lead + tuple(output_size))


def _max_unpool_reference(x, indices, output_size, *unused):
    n = len(output_size)
    lead = x.shape[:-n]
    out = np.zeros(lead + (math.prod(output_size),), x.dtype)
    for plane in np.ndindex(*lead):
        out[plane][np.asarray(indices[plane]).ravel()] = np.asarray(x[plane]).ravel()
    return out.reshape(lead + tuple(output_size))


def _unpool_samples(n: int):
    """Indices from max pooling itself, paired with fresh values to put back."""
    def samples(make, dtype):
        pool = getattr(F, f"max_pool{n}d_with_indices")
        indices = pool(make((2, 2) + (4,) * n, dtype="float32"), (2,) * n).indices
        tail = ((2,) * n, (0,) * n) if n == 3 else ()
        yield Sample((make(tuple(indices.shape)), indices, (4,) * n) + tail)
        indices = pool(make((3,) + (5,) * n, dtype="float32"), (2,) * n, (2,) * n, (1,) * n).indices
        tail = ((2,) * n, (1,) * n) if n == 3 else ()
        yield Sample((make(tuple(indices.shape)), indices, (5,) * n) + tail, note="unbatched, padded")
    return samples


defop("max_unpool2d(Tensor input, Index indices, int[] output_size)", "nn", kind="composite",
      promotion=rules.passthrough, dtypes="numeric", meta=_unpool_meta("max_unpool2d", 2),
      normalize=_unpool_normalize(2), composite=_max_unpool, reference=_max_unpool_reference,
      samples=_unpool_samples(2), method=False,
      doc="the partial inverse of max_pool2d: zeros of output_size with each value put back at its index")
defop("max_unpool3d(Tensor input, Index indices, int[] output_size, int[] stride, int[] padding)", "nn",
      kind="composite", promotion=rules.passthrough, dtypes="numeric", meta=_unpool_meta("max_unpool3d", 3),
      normalize=_unpool_normalize(3), composite=_max_unpool, reference=_max_unpool_reference,
      samples=_unpool_samples(3), method=False,
      doc="the partial inverse of max_pool3d: zeros of output_size with each value put back at its index "
          "(stride and padding are PyTorch's, used only by its checks)")
