"""The three discrete Fourier transform primitives, exactly PyTorch's aten ``_fft_c2c``, ``_fft_r2c`` and
``_fft_c2r``: every complex backend implements them, and ``ember.fft`` and ``stft`` are composed of them.

Each transforms the dims in ``dim`` at once (an n-d DFT, e^(-2 pi i jk/n) forward, e^(+2 pi i jk/n) inverse) and
scales by ``normalization``: 0 none, 1 by 1/sqrt(n), 2 by 1/n, n the product of the signal sizes (for c2r, the
output's). r2c with ``onesided`` keeps the n//2 + 1 non-redundant bins of the last dim in ``dim``; c2r is its
inverse, given those bins and the signal length ``last_dim_size``.

Their derivatives are the adjoint transforms (torch's derivatives.yaml): c2c's is c2c the other way; r2c's pads the
kept bins with zeros and takes the real part of the inverse c2c; c2r's is r2c with the bins that stand for two
(their mirror images were dropped) doubled.
"""
from __future__ import annotations

import numpy as np

from ...schema import Sample, defop
from ...schema.errors import ArgumentError, describe
from ...schema.meta import shape
from .._shared import _with_size
from ..namespace import F
from ._shared import check_sizes, complex_out, real_in_complex_out, real_out, resized, signal_dim

#: ``normalization`` -> NumPy's ``norm`` for a forward transform (the reference)
_FORWARD_NORM = ("backward", "ortho", "forward")
_INVERSE_NORM = ("forward", "ortho", "backward")


# -- checks and shapes -------------------------------------------------------------------------------

def _normalize(op, args):
    """Dims wrapped and unique, at least one, each of non-zero length; a normalization PyTorch knows."""
    x = args["input"]
    dims = tuple(signal_dim(op.name, x, d) for d in args["dim"])
    if not dims:
        raise ArgumentError(f"{op.name}: expects at least one dim to transform ({describe(x)})")
    if len(set(dims)) != len(dims):
        raise ArgumentError(f"{op.name}: FFT dims must be unique, got dim={list(args['dim'])}")
    if args["normalization"] not in (0, 1, 2):
        raise ArgumentError(f"{op.name}: normalization must be 0 (none), 1 (by 1/sqrt(n)) or 2 (by 1/n), got "
                            f"{args['normalization']}")
    signal = [shape(x)[d] for d in dims]
    if "last_dim_size" in args:
        signal[-1] = args["last_dim_size"]
        bins = shape(x)[dims[-1]]
        if signal[-1] >= 1 and bins != signal[-1] // 2 + 1:
            raise ArgumentError(f"{op.name}: a signal of {signal[-1]} points has {signal[-1] // 2 + 1} bins in dim "
                                f"{dims[-1]}, got {bins} ({describe(x)})")
    check_sizes(op.name, signal)
    args["dim"] = dims


def _r2c_meta(input, dim, normalization, onesided):
    size = shape(input)[dim[-1]]
    return _with_size(shape(input), dim[-1], size // 2 + 1 if onesided else size)


def _c2r_meta(input, dim, normalization, last_dim_size):
    return _with_size(shape(input), dim[-1], last_dim_size)


# -- derivatives: the adjoint transforms --------------------------------------------------------------

def _r2c_derivative(grad, input, dim, normalization, onesided):
    """The dropped bins got no gradient: zeros there, then the adjoint of the full transform, real part."""
    if onesided:
        grad = resized(grad, dim[-1:], (input.shape[dim[-1]],))
    return F.real(F._fft_c2c(grad, dim, normalization, False))


def _c2r_derivative(grad, dim, normalization):
    """Each bin strictly between the zero frequency and the mirror of the last kept one stands for itself and its
    dropped conjugate mirror image, so its gradient counts twice."""
    last = dim[-1]
    bins = F._fft_r2c(grad, dim, normalization, True)
    doubled = grad.shape[last] - bins.shape[last]
    if doubled <= 0:
        return bins
    count, kind = bins.shape[last], dict(dtype=grad.dtype, device=grad.device)
    weights = F.cat([F.ones((1,), **kind), F.full((doubled,), 2.0, **kind), F.ones((count - 1 - doubled,), **kind)])
    return F.mul(bins, F.reshape(weights, (count,) + (1,) * (bins.ndim - 1 - last)))


# -- vmap: the batch dim leads, past which every transformed dim moves ------------------------------------------

def _batch_rule(call):
    x = call.values[0]
    if not call.is_batched(x) or any(call.is_batched(v) for v in call.values[1:]):
        return NotImplemented
    values = list(call.values)
    values[0] = call.physical(x)
    values[1] = tuple(d % max(x.dim(), 1) + 1 for d in values[1])
    return call.wrap(call.call(values))


# -- the reference and samples ------------------------------------------------------------------------

def _c2c_reference(x, dim, normalization, forward):
    transform = np.fft.fftn if forward else np.fft.ifftn
    return transform(x, axes=dim, norm=(_FORWARD_NORM if forward else _INVERSE_NORM)[normalization])


def _r2c_reference(x, dim, normalization, onesided):
    transform = np.fft.rfftn if onesided else np.fft.fftn
    return transform(x, axes=dim, norm=_FORWARD_NORM[normalization])


def _c2r_reference(x, dim, normalization, last_dim_size):
    sizes = [x.shape[d] for d in dim[:-1]] + [last_dim_size]
    return np.fft.irfftn(x, s=sizes, axes=dim, norm=_INVERSE_NORM[normalization])


def _c2c_samples(make, dtype):
    yield Sample((make((8,)), (0,), 0, True), note="1-d forward")
    yield Sample((make((3, 5)), (-1,), 2, False), note="odd length, inverse by 1/n")
    yield Sample((make((4, 3, 6), noncontiguous=True), (0, 2), 1, True), note="2 of 3 dims, ortho")
    yield Sample((make((0, 4)), (1,), 0, True), note="empty batch")


def _r2c_samples(make, dtype):
    yield Sample((make((8,)), (0,), 0, True), note="onesided, even")
    yield Sample((make((2, 7)), (1,), 1, True), note="onesided, odd, ortho")
    yield Sample((make((3, 4, 5)), (0, 1), 2, False), note="two-sided, by 1/n")
    yield Sample((make((4, 6), noncontiguous=True), (1, 0), 0, True), note="last dim first")


def _c2r_samples(make, dtype):
    yield Sample((make((5,)), (0,), 0, 8), note="even signal")
    yield Sample((make((2, 4)), (1,), 2, 7), note="odd signal, by 1/n")
    yield Sample((make((3, 4, 3)), (0, 2), 1, 4), note="2-d, ortho")


_COMMON = dict(method=False, normalize=_normalize, batch=_batch_rule, jvp="linear",
               tolerances={"float32": (1e-4, 1e-4), "complex64": (1e-4, 1e-4)})

defop("_fft_c2c(Tensor input, int[] dim, int normalization, bool forward)", "linalg",
      promotion=complex_out, meta=lambda input, *rest: shape(input), dtypes="float+complex",
      derivative={"input": lambda grad, dim, normalization, forward: F._fft_c2c(grad, dim, normalization,
                                                                                not forward)},
      reference=_c2c_reference, samples=_c2c_samples,
      doc="the complex-to-complex DFT over dim (forward: sign -1; else the inverse, sign +1)", **_COMMON)
defop("_fft_r2c(Tensor input, int[] dim, int normalization, bool onesided)", "linalg",
      promotion=real_in_complex_out, meta=_r2c_meta, derivative={"input": _r2c_derivative}, dtypes="float",
      reference=_r2c_reference, samples=_r2c_samples,
      doc="the DFT of a real signal over dim; onesided keeps the n//2 + 1 non-redundant bins of the last dim",
      **_COMMON)
defop("_fft_c2r(Tensor input, int[] dim, int normalization, int last_dim_size)", "linalg",
      promotion=real_out, meta=_c2r_meta, derivative={"input": _c2r_derivative}, dtypes="float+complex",
      reference=_c2r_reference, samples=_c2r_samples,
      doc="the inverse of the onesided r2c: a real signal of last_dim_size points in the last dim of dim, from "
          "its n//2 + 1 bins", **_COMMON)
