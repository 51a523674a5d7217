"""A template Ember backend: every primitive op, on NumPy, in one module, and nothing else.

Start a backend for your device by copying this package: rename the device type, replace each
NumPy call with your array library's, and keep the kernel signatures. Everything that is not a
primitive (softmax, conv2d, layer_norm, the losses, the optimizers' arithmetic) runs from its
definition in Ember's core in terms of these kernels, so a backend works as soon as the
primitives do; override a composite only where the conformance report says it is slow
(add its name to ``KERNELS``; see docs/backends.md).

Check it with ``python -m ember.conformance --backend template``.

What every kernel can rely on: the dispatcher has already bound the arguments, checked shapes,
devices and dtypes, wrapped dims to be non-negative, and cast every promoted tensor input to the
op's computation dtype. Kernels take native arrays (here NumPy arrays) and plain Python values,
and return native arrays of the output dtype, never NumPy scalars.
"""
from __future__ import annotations

import json
import math

import ml_dtypes
import numpy as np
import scipy.fft
from scipy import special

import ember.dispatch as ed
from ember.dispatch import Backend, backend_hooks

DEVICE_TYPE = "template"

#: Ember dtype -> this device's element type.
NATIVE = {ed.bool_: np.dtype(np.bool_), ed.uint8: np.dtype(np.uint8), ed.int8: np.dtype(np.int8),
          ed.int16: np.dtype(np.int16), ed.int32: np.dtype(np.int32), ed.int64: np.dtype(np.int64),
          ed.float16: np.dtype(np.float16), ed.bfloat16: np.dtype(ml_dtypes.bfloat16),
          ed.float32: np.dtype(np.float32), ed.float64: np.dtype(np.float64),
          ed.complex64: np.dtype(np.complex64), ed.complex128: np.dtype(np.complex128)}
_HALF = {NATIVE[ed.float16], NATIVE[ed.bfloat16]}  # computed in float32, stored in their own dtype


def _array(x) -> np.ndarray:
    """NumPy turns 0-d results into scalars; Ember kernels always return arrays."""
    return np.asarray(x)


def _is_integral(a: np.ndarray) -> bool:
    return a.dtype.kind in "biu"


def _in_float32(fn):
    """Run ``fn`` in float32 on half-precision inputs (more accurate, and NumPy lacks some loops)."""
    def kernel(*arrays):
        if arrays[0].dtype in _HALF:
            return _array(fn(*(x.astype(np.float32) for x in arrays))).astype(arrays[0].dtype)
        return _array(fn(*arrays))
    return kernel


# -- elementwise ------------------------------------------------------------------------------------
# Binary kernels get two arrays of one dtype (Python numbers arrive as 0-d arrays) that broadcast.

def _unary(fn):
    return lambda a: _array(fn(a))


def _binary(fn):
    return lambda a, b: _array(fn(a, b))


def _integral_copy_or(fn):
    """floor and ceil leave integers alone (NumPy would answer in float64)."""
    return lambda a: a.copy() if _is_integral(a) else _array(fn(a))


def _round(a, decimals):
    if _is_integral(a) and decimals >= 0:
        return a.copy()
    return _array(np.round(a, decimals))  # half to even, as in PyTorch


def _times_alpha(b, alpha):
    """alpha * b in b's dtype: integer alphas wrap (alpha=-1 on uint8 is 255), as in PyTorch."""
    return b if alpha == 1 else _array(b * np.asarray(alpha).astype(b.dtype))


def _add(a, b, alpha):
    return _array(np.add(a, _times_alpha(b, alpha)))


def _sub(a, b, alpha):
    return _array(np.subtract(a, _times_alpha(b, alpha)))


def _no_integer_zero_divisor(op: str, b) -> None:
    if _is_integral(b) and not np.all(b):
        raise ZeroDivisionError(f"{op}: integer division by zero")


def _div(a, b, rounding_mode):
    if rounding_mode is None:
        return _array(np.true_divide(a, b))
    if rounding_mode == "floor":
        return _floor_divide(a, b, "div")
    if not _is_integral(a):  # "trunc"
        return _array(np.trunc(np.true_divide(a, b)))
    _no_integer_zero_divisor("div", b)
    quotient = np.floor_divide(a, b)  # floor differs from trunc when the signs differ and b does not divide a
    inexact = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
    return _array(quotient + inexact.astype(quotient.dtype))


def _floor_divide(a, b, op="floor_divide"):
    _no_integer_zero_divisor(op, b)
    return _array(np.floor_divide(a, b))


def _remainder(a, b):
    _no_integer_zero_divisor("remainder", b)
    return _array(np.remainder(a, b))  # takes the sign of the divisor, as in PyTorch


def _pow(a, b):
    if _is_integral(a) and np.any(b < 0):
        raise ValueError("pow: integers to negative integer powers are not allowed")
    return _array(np.power(a, b))


ELEMENTWISE = {
    "abs": _unary(np.abs), "neg": _unary(np.negative), "sign": _unary(np.sign),
    "exp": _unary(np.exp), "expm1": _unary(np.expm1), "log": _unary(np.log), "log1p": _unary(np.log1p),
    "sqrt": _unary(np.sqrt), "sin": _unary(np.sin), "cos": _unary(np.cos), "tan": _unary(np.tan),
    "tanh": _unary(np.tanh), "erf": _in_float32(special.erf),
    "floor": _integral_copy_or(np.floor), "ceil": _integral_copy_or(np.ceil), "round": _round,
    "isnan": _unary(np.isnan), "logical_not": _unary(np.logical_not),
    "add": _add, "sub": _sub, "mul": _binary(np.multiply), "div": _div, "floor_divide": _floor_divide,
    "remainder": _remainder, "pow": _pow, "maximum": _binary(np.maximum), "minimum": _binary(np.minimum),
    "eq": _binary(np.equal), "ne": _binary(np.not_equal), "lt": _binary(np.less), "le": _binary(np.less_equal),
    "gt": _binary(np.greater), "ge": _binary(np.greater_equal), "logical_and": _binary(np.logical_and),
    "logical_or": _binary(np.logical_or), "logical_xor": _binary(np.logical_xor),
    "where": lambda condition, a, b: _array(np.where(condition, a, b)),
}


# -- reductions and scans ---------------------------------------------------------------------------
# ``dim`` is None (everything), a tuple of dims (sum, amax, amin) or one dim; a 0-d input accepts dim 0.

def _axis(a, dim):
    return None if a.ndim == 0 else dim


def _accumulate(ufunc):
    """sum and prod; the input is already in the accumulation dtype (int64 for integers)."""
    def kernel(a, dim, keepdim, dtype):
        work = np.float32 if a.dtype in _HALF else a.dtype
        return _array(ufunc.reduce(a, axis=_axis(a, dim), keepdims=keepdim, dtype=work)).astype(a.dtype)
    return kernel


def _extremum(fn):
    return lambda a, dim, keepdim: _array(fn(a, axis=_axis(a, dim), keepdims=keepdim))  # NaN propagates


def _arg_extremum(fn):
    """argmax and argmin: the first position of the extremum (NaN counts as it), as int64."""
    def kernel(a, dim, keepdim):
        if _axis(a, dim) is None:
            flat = _array(fn(a.reshape(-1))).astype(np.int64)
            return flat.reshape((1,) * a.ndim) if keepdim else flat
        return _array(fn(a, axis=dim, keepdims=keepdim)).astype(np.int64)
    return kernel


def _scan(fn):
    """cumsum and cumprod along one dim."""
    def kernel(a, dim, dtype):
        if a.ndim == 0:
            return a.copy()
        work = np.float32 if a.dtype in _HALF else a.dtype
        return fn(a, axis=dim, dtype=work).astype(a.dtype)
    return kernel


REDUCTIONS = {
    "sum": _accumulate(np.add), "prod": _accumulate(np.multiply),
    "amax": _extremum(np.max), "amin": _extremum(np.min),
    "argmax": _arg_extremum(np.argmax), "argmin": _arg_extremum(np.argmin),
    "cumsum": _scan(np.cumsum), "cumprod": _scan(np.cumprod),
}


# -- views, copies and joins ------------------------------------------------------------------------
# View kernels must return arrays that share memory with their input: writes through either show in
# both. The dispatcher has checked that a view is possible (``view`` of a non-contiguous input is refused).

def _view(a, size):
    return np.reshape(a, size, copy=False)


def _slice(a, dim, start, end, step):
    return a[(slice(None),) * dim + (slice(start, end, step),)]


def _expand(a, size):
    """Size-1 dims repeated with stride 0; writable, like PyTorch's (NumPy's broadcast_to is read-only)."""
    shape_and_strides = np.broadcast_to(a, size)
    return np.lib.stride_tricks.as_strided(a, size, shape_and_strides.strides, writeable=True)


def _unfold(a, dim, size, step):
    if a.ndim == 0:  # the single window of shape (size,), as PyTorch unfolds a 0-d tensor
        return _unfold(a.reshape(1), 0, size, step)[0]
    windows = np.lib.stride_tricks.sliding_window_view(a.reshape(a.shape or (1,)), size, axis=dim,
                                                       writeable=True)
    return windows[(slice(None),) * dim + (slice(None, None, step),)]


def _diagonal(a, offset, dim1, dim2):
    """From the diagonal's first element, one step along both dims per element."""
    corner, size, strides = ed.diagonal_view(a.shape, a.strides, offset, dim1, dim2)
    return np.lib.stride_tricks.as_strided(a[corner], size, strides, writeable=True)


def _cast(a, native: np.dtype):
    """``a`` as ``native``, C-style (floats truncate, ints wrap); complex to real keeps the real part, as
    PyTorch's casts do."""
    if a.dtype.kind == "c" and native.kind != "c":
        a = a.real
    return a.astype(native)


def _copy_(dst, src):
    np.copyto(dst, src.real if src.dtype.kind == "c" and dst.dtype.kind != "c" else src, casting="unsafe")
    return dst


# Complex elements are stored as (real, imaginary) pairs of their component type, so the complex views are a
# reinterpretation of the same bytes: a trailing axis of one element seen as two reals, and back.
_COMPONENT = {NATIVE[dt]: NATIVE[dt.to_real()] for dt in ed.COMPLEX_DTYPES}
_PAIRED = {component: native for native, component in _COMPONENT.items()}


def _view_as_real(a):
    return a[..., None].view(_COMPONENT[a.dtype])  # any layout: the new axis has the element's own size


def _view_as_complex(a):
    return a.view(_PAIRED[a.dtype])[..., 0]  # the op has checked that the pair axis is the last, of stride 1


VIEWS = {
    "view": _view, "permute": lambda a, dims: np.transpose(a, dims), "expand": _expand, "slice": _slice,
    "unfold": _unfold, "diagonal": _diagonal, "clone": lambda a: a.copy(),
    "to_dtype": lambda a, dtype: _cast(a, NATIVE[dtype]),
    "copy_": _copy_, "cat": lambda tensors, dim: np.concatenate(tensors, axis=dim),
    "view_as_real": _view_as_real, "view_as_complex": _view_as_complex,
}


# -- discrete Fourier transforms --------------------------------------------------------------------
# ``dim`` is the tuple of transformed dims; ``normalization`` scales by 1 (0), 1/sqrt(n) (1) or 1/n (2), n the
# product of the signal sizes. SciPy's pocketfft keeps single precision (numpy.fft would answer in complex128).

_NORM_FORWARD = ("backward", "ortho", "forward")  # the ``norm`` that scales a forward transform by each
_NORM_INVERSE = ("forward", "ortho", "backward")  # ... and an inverse transform


def _resized(a, dim: int, size: int, native):
    """Zeros of ``a``'s shape with ``dim`` of ``size``: the transform of an empty batch (SciPy refuses it)."""
    return np.zeros(a.shape[:dim] + (size,) + a.shape[dim + 1:], native)


def _fft_c2c(a, dim, normalization, forward):
    if a.size == 0:
        return np.zeros(a.shape, a.dtype)
    if forward:
        return _array(scipy.fft.fftn(a, axes=dim, norm=_NORM_FORWARD[normalization]))
    return _array(scipy.fft.ifftn(a, axes=dim, norm=_NORM_INVERSE[normalization]))


def _fft_r2c(a, dim, normalization, onesided):
    """A real signal's transform: only the non-negative frequencies of the last dim when ``onesided``."""
    native = np.result_type(a.dtype, np.complex64)
    last = dim[-1]
    if a.size == 0:
        return _resized(a, last, a.shape[last] // 2 + 1 if onesided else a.shape[last], native)
    if onesided:
        return _array(scipy.fft.rfftn(a, axes=dim, norm=_NORM_FORWARD[normalization]))
    return _array(scipy.fft.fftn(a.astype(native), axes=dim, norm=_NORM_FORWARD[normalization]))


def _fft_c2r(a, dim, normalization, last_dim_size):
    """The inverse of a onesided transform: a real signal whose last transformed dim has ``last_dim_size``."""
    if a.size == 0:
        return _resized(a, dim[-1], last_dim_size, a.real.dtype)
    sizes = [a.shape[d] for d in dim[:-1]] + [last_dim_size]
    return _array(scipy.fft.irfftn(a, s=sizes, axes=dim, norm=_NORM_INVERSE[normalization]))


FFT = {"_fft_c2c": _fft_c2c, "_fft_r2c": _fft_r2c, "_fft_c2r": _fft_c2r}


# -- linear algebra and indexing --------------------------------------------------------------------
# Index tensors arrive as int64 and already bounds-checked and non-negative.

def _where_indices(indices) -> tuple:
    """An ``Index?[]`` list as a NumPy key: None takes the whole dim."""
    return tuple(slice(None) if i is None else i for i in indices)


def _index(a, indices):
    out = a[_where_indices(indices)]
    return out.copy() if all(i is None for i in indices) else out  # basic indexing alone gives a view


def _index_put_(a, indices, values, accumulate):
    if accumulate:
        key = _where_indices(indices)
        # repeated positions add up; values broadcast first (NumPy 2.4's add.at adds wrong values otherwise)
        np.add.at(a, key, np.broadcast_to(values, a[key].shape))
    else:
        a[_where_indices(indices)] = values
    return a


def _at_least_1d(a):
    return a.reshape(a.shape or (1,))


def _gather(a, dim, index):
    """out[i][j] = a[index[i][j]][j] (dim 0); ``index`` may be smaller than ``a`` off dim, or longer along it."""
    if index.size == 0:  # an empty index may have any shape and rank (PyTorch's rule): nothing to read
        return np.empty(index.shape, a.dtype)
    source, idx = _at_least_1d(a), _at_least_1d(index)
    window = tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(idx.shape))
    return np.take_along_axis(source[window], idx, axis=dim).reshape(index.shape)


def _scatter(accumulate: bool):
    """out = copy of a, then out[index[i][j]][j] = (or +=) src[i][j] (dim 0); a 0-d src is one value."""
    def kernel(a, dim, index, src):
        if index.size == 0:  # an empty index may have any shape and rank (PyTorch's rule): nothing to write
            return a.copy()
        out, idx = _at_least_1d(a).copy(), _at_least_1d(index)
        position = list(np.indices(idx.shape, sparse=True))
        position[dim] = idx
        if src.ndim:
            src = _at_least_1d(src)[tuple(slice(0, n) for n in idx.shape)]
        if accumulate:
            np.add.at(out, tuple(position), src)
        else:
            out[tuple(position)] = src
        return out.reshape(a.shape)
    return kernel


def _sort(a, dim, descending, stable):
    """Always stable; NaN sorts as the largest value. Returns (values, int64 indices)."""
    if a.ndim == 0:
        return a.copy(), np.zeros((), np.int64)
    key = a.astype(np.float32) if a.dtype in _HALF else a  # NumPy cannot sort bfloat16
    if descending:  # a stable ascending sort of the reversed input, read backwards, keeps ties in order
        order = a.shape[dim] - 1 - np.flip(np.argsort(np.flip(key, dim), axis=dim, kind="stable"), dim)
    else:
        order = np.argsort(key, axis=dim, kind="stable")
    return np.take_along_axis(a, order, dim), order.astype(np.int64)


INDEXING = {
    "matmul": _in_float32(np.matmul), "argwhere": lambda a: np.argwhere(a).astype(np.int64),
    "index": _index, "index_put_": _index_put_, "gather": _gather,
    "scatter": _scatter(accumulate=False), "scatter_add": _scatter(accumulate=True), "sort": _sort,
}


# -- creation and random numbers --------------------------------------------------------------------
# ``device`` is the device index (None here: one device). ``generator`` is a TemplateGenerator.

def _full(size, value, dtype, device):
    return np.full(size, np.asarray(value).astype(NATIVE[dtype]), dtype=NATIVE[dtype])  # values wrap C-style


def _arange(start, end, step, dtype, device):
    count = max(0, math.ceil((end - start) / step))
    if all(isinstance(v, int) for v in (start, end, step)):
        values = start + np.arange(count, dtype=np.int64) * step  # exact for integers
    else:
        values = start + np.arange(count, dtype=np.float64) * step
    return values.astype(NATIVE[dtype])


def _draw_dtype(dtype):
    return np.float64 if dtype is ed.float64 else np.float32


def _rand_uniform(size, low, high, generator, dtype, device):
    draw = generator.numpy.random(size, dtype=_draw_dtype(dtype)) * (high - low) + low
    out = _array(draw).astype(NATIVE[dtype])
    # rounding to the output dtype can land on ``high`` itself; the interval is [low, high)
    below_high = np.nextafter(np.asarray(high, NATIVE[dtype]), np.asarray(-np.inf, NATIVE[dtype]))
    return np.minimum(out, below_high)


def _rand_normal(size, mean, std, generator, dtype, device):
    draw = generator.numpy.standard_normal(size, dtype=_draw_dtype(dtype)) * std + mean
    return _array(draw).astype(NATIVE[dtype])


def _rand_int(size, low, high, generator, dtype, device):
    return generator.numpy.integers(low, high, size, dtype=np.int64).astype(NATIVE[dtype])


CREATION = {
    "empty": lambda size, dtype, device: np.empty(size, NATIVE[dtype]), "full": _full, "arange": _arange,
    "rand_uniform": _rand_uniform, "rand_normal": _rand_normal, "rand_int": _rand_int,
}

#: op name -> kernel: exactly the primitives (``python -m ember.dispatch --kind primitive``).
KERNELS = {**ELEMENTWISE, **REDUCTIONS, **VIEWS, **FFT, **INDEXING, **CREATION}


class TemplateGenerator:
    """One random stream: seedable, and its state saved and restored as bytes (checkpoints hold it)."""

    def __init__(self, seed: int) -> None:
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> None:
        self.initial_seed = int(seed)
        self.numpy = np.random.Generator(np.random.PCG64(self.initial_seed))

    def get_state(self) -> bytes:
        return json.dumps(self.numpy.bit_generator.state).encode()

    def set_state(self, state: bytes) -> None:
        self.numpy.bit_generator.state = json.loads(bytes(state).decode())


class TemplateBackend(Backend):
    """The device: capabilities, storage and generators. A device with several units would return their
    number from ``device_count`` and 0 from ``default_index``, and take the index in every hook."""

    device_type = DEVICE_TYPE
    kernels = KERNELS

    def __init__(self) -> None:
        self._generator = TemplateGenerator(0)

    def unavailable_reason(self) -> str | None:
        return None  # e.g. "no device found" when the driver sees none: Ember then skips the backend

    def default_index(self) -> int | None:
        return None  # one device, spelled "template"

    def supported_dtypes(self, index: int | None) -> frozenset:
        return frozenset(NATIVE)  # a device without, say, float64 leaves it out; Ember refuses it then

    # Device memory is separate from the host's: copies in and out, never shared arrays.
    def from_numpy(self, array, dtype, index):
        return np.array(array, dtype=NATIVE[dtype], copy=True)

    def to_numpy(self, native):
        return native.copy()

    def strides(self, native) -> tuple[int, ...]:
        return tuple(s // native.itemsize for s in native.strides)

    def storage_id(self, native) -> int:
        while getattr(native, "base", None) is not None:  # views (and stride tricks) lead to the allocation
            native = native.base
        return id(native)

    def manual_seed(self, seed: int) -> None:
        self._generator.manual_seed(seed)

    def default_generator(self, index):
        return self._generator

    def new_generator(self, index):
        return TemplateGenerator(int(np.random.SeedSequence().entropy % 2 ** 63))


# The plugin's two pluggy hooks (the API version it targets, and its backend), found by these names.
ember_plugin_api_version, ember_register_backend = backend_hooks(TemplateBackend)
