"""torch.fft's helpers beside the transforms: the sample frequencies of a transform's bins (``fftfreq``,
``rfftfreq``) and the reordering that puts the zero frequency in the middle (``fftshift``) and back
(``ifftshift``). ATen's names, ``fft_``-prefixed; ``ember.fft`` gives them torch.fft's.
"""
from __future__ import annotations

import math

import numpy as np

from ...schema import Sample, defop, rules
from ...schema.dtypes import SCALAR_TYPE_NAMES, get_default_dtype
from ...schema.errors import ArgumentError, DtypeError
from ...schema.meta import shape
from ..namespace import F
from ._shared import signal_dim, torch_name

_TAIL = "*, dtype? dtype=None, device? device=None"


# -- fftfreq, rfftfreq -----------------------------------------------------------------------------------

def _frequency_promotion(rt, op, args):
    """The requested dtype, else the default float; PyTorch's message for an integer or bool one."""
    dt = rules.requested_dtype(args) or get_default_dtype()
    if dt.kind not in ("float", "complex"):
        raise DtypeError(f"{op.name}: {torch_name(op.name)} requires a floating point or complex dtype, got "
                         f"{SCALAR_TYPE_NAMES[dt]} ({dt.name})")
    return dt, dt


def _rfft_bins(n: int) -> int:
    """n // 2 + 1, with C's division as PyTorch computes it (so a small negative n gives no error there)."""
    return int(n / 2) + 1


#: op -> its output's length for a signal of n points
_SIZES = {"fft_fftfreq": lambda n: n, "fft_rfftfreq": _rfft_bins}


def _frequency_normalize(op, args):
    size = _SIZES[op.name](args["n"])
    if size < 0:
        raise ArgumentError(f"{op.name}: Trying to create tensor with negative dimension {size}: [{size}]")


def _fftfreq(n, d=1.0, dtype=None, device=None):
    """[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d n): each bin's frequency in cycles per unit of d."""
    dtype = dtype or get_default_dtype()
    real = dtype.to_real()
    counts = F.cat([F.arange((n + 1) // 2, dtype=real, device=device),
                    F.arange(-(n // 2), 0, dtype=real, device=device)])
    return F.to_dtype(_per_unit(counts, n, d), dtype)


def _rfftfreq(n, d=1.0, dtype=None, device=None):
    """[0, 1, ..., n // 2] / (d n): the frequencies of rfft's bins."""
    dtype = dtype or get_default_dtype()
    return F.to_dtype(_per_unit(F.arange(_rfft_bins(n), dtype=dtype.to_real(), device=device), n, d), dtype)


def _per_unit(counts, n: int, d: float):
    """Bin counts as frequencies: times 1 / (n d), as PyTorch scales them (infinite for n d = 0, as in C++: so
    rfftfreq(0) is [nan], as PyTorch's)."""
    return F.mul(counts, 1.0 / (n * d) if n * d else math.inf)


def _frequency_samples(make, dtype):
    yield Sample((8,), {"dtype": dtype}, note="even")
    yield Sample((7, 0.25), {"dtype": dtype}, note="odd, spacing 0.25")
    yield Sample((1,), {"dtype": dtype}, note="one point")
    yield Sample((0,), {"dtype": dtype}, note="empty")


def _frequency_reference(numpy_function, size):
    """NumPy's frequencies; for n = 0 PyTorch's (NumPy divides by zero): 0 times infinity for each bin."""
    def reference(n, d=1.0, dtype=None, device=None):
        return numpy_function(n, d) if n else np.full(size(0), np.nan)
    return reference


def _frequencies(op_name: str, composite, numpy_function):
    name, size = op_name.removeprefix("fft_"), _SIZES[op_name]
    defop(f"{op_name}(int n, float d=1.0, {_TAIL})", "creation", kind="composite", promotion=_frequency_promotion,
          dtypes="float+complex", normalize=_frequency_normalize, meta=lambda n, *rest: (size(n),),
          composite=composite, reference=_frequency_reference(numpy_function, size), samples=_frequency_samples,
          method=False, differentiable=False,
          doc=f"torch.fft.{name}: the sample frequencies of {name.removesuffix('freq')}'s bins for a signal of n "
              f"points spaced d apart")


_frequencies("fft_fftfreq", _fftfreq, np.fft.fftfreq)
_frequencies("fft_rfftfreq", _rfftfreq, np.fft.rfftfreq)


# -- fftshift, ifftshift -----------------------------------------------------------------------------------

def _shift_normalize(op, args):
    """Dims wrapped (every dim by default), each named once."""
    x, dim = args["input"], args["dim"]
    dims = range(len(shape(x))) if dim is None else (dim,) if isinstance(dim, int) else dim
    args["dim"] = tuple(signal_dim(op.name, x, d) for d in dims)


def _shift(half_rounded_up: bool):
    """roll each dim by half its size: n // 2 moves the zero frequency to the middle, (n + 1) // 2 back."""
    def shift(input, dim):
        return F.roll(input, [(input.shape[d] + half_rounded_up) // 2 for d in dim], list(dim))
    return shift


def _shift_samples(make, dtype):
    yield Sample((make((5, 4)),), note="every dim")
    yield Sample((make((3, 7)), (-1,)), note="odd last dim")
    yield Sample((make((2, 6, 3), noncontiguous=True), (0, 1)), note="two dims")


def _shift_op(op_name: str, half_rounded_up: bool, numpy_function):
    defop(f"{op_name}(Tensor input, int[]? dim=None)", "indexing", kind="composite", promotion=rules.passthrough,
          dtypes="all+complex", normalize=_shift_normalize, meta=lambda input, dim: shape(input),
          composite=_shift(half_rounded_up), method=False, samples=_shift_samples,
          reference=lambda x, dim=None: numpy_function(x, axes=dim),
          doc=f"torch.fft.{op_name.removeprefix('fft_')}: each of dim rolled by half its length"
              f"{', rounded up (undoes fftshift)' if half_rounded_up else ' (the zero frequency to the middle)'}")


_shift_op("fft_fftshift", False, np.fft.fftshift)
_shift_op("fft_ifftshift", True, np.fft.ifftshift)
