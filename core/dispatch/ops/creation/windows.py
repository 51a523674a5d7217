"""Window functions for spectral analysis (Hann, Hamming, Blackman, Bartlett, Kaiser) and the other creation
ops PyTorch has beside arange/linspace: logspace, range (inclusive end) and scalar_tensor.

A periodic window of length L is the symmetric window of length L + 1 without its last point (the form
spectral analysis wants); each is computed in the requested floating dtype from ``arange``, on any backend.
"""
from __future__ import annotations

import math

import numpy as np

from ...schema import rules
from ...schema.dtypes import get_default_dtype
from ...schema import Sample, defop
from ..namespace import F
from ...schema.errors import ArgumentError

_TAIL = "*, dtype? dtype=None, device? device=None"


def _float_promotion(rt, op, args):
    """The requested dtype, else the default float dtype: windows and range are floating by default."""
    dt = rules.requested_dtype(args) or get_default_dtype()
    return dt, dt


def _window_normalize(op, args):
    """(dtypes="float" has the dispatcher refuse integer dtypes.)"""
    if args["window_length"] < 0:
        raise ArgumentError(f"{op.name}: requires non-negative window_length, got "
                            f"window_length={args['window_length']}")


def _positions(window_length: int, periodic: bool, dtype, device):
    """n = 0..L-1 and the symmetric length N - 1 they are scaled by (N = L + 1 when periodic)."""
    return F.arange(window_length, dtype=dtype, device=device), window_length - (0 if periodic else 1)


def _cosine_sum(window_length, periodic, coefficients, dtype, device):
    """sum_k (-1)^k a_k cos(2 pi k n / (N - 1)): the Hann, Hamming and Blackman family."""
    dtype = dtype or get_default_dtype()
    if window_length <= 1:
        return F.ones((window_length,), dtype=dtype, device=device)
    n, span = _positions(window_length, periodic, dtype, device)
    out = F.full((window_length,), coefficients[0], dtype=dtype, device=device)
    for k, a in enumerate(coefficients[1:], start=1):
        out = F.add(out, F.mul(F.cos(F.mul(n, 2 * math.pi * k / span)), -a if k % 2 else a))
    return out


def _np_window(symmetric):
    """The reference: NumPy's symmetric window, one point longer and cut when periodic."""
    def reference(window_length, periodic=True, *args, dtype=None, device=None):
        if window_length <= 1:
            return np.ones(window_length)
        return symmetric(window_length + 1, *args)[:-1] if periodic else symmetric(window_length, *args)
    return reference


def _window_samples(*extra):
    def samples(make, dtype):
        yield Sample((8,), {"dtype": dtype}, note="periodic")
        yield Sample((7, False, *extra), {"dtype": dtype}, note="symmetric")
        yield Sample((1,), {"dtype": dtype}, note="one point")
        yield Sample((0,), {"dtype": dtype}, note="empty")
    return samples


def _window(signature: str, composite, reference, doc: str, samples=_window_samples()):
    defop(signature, "creation", kind="composite", promotion=_float_promotion, dtypes="float",
          normalize=_window_normalize, meta=lambda window_length, *rest, **kw: (window_length,),
          composite=composite, reference=reference, samples=samples, method=False, differentiable=False,
          tolerances={"float16": (2e-3, 2e-3), "bfloat16": (1e-2, 1e-2)}, doc=doc)


_window(f"hann_window(int window_length, bool periodic=True, {_TAIL})",
        lambda L, periodic=True, dtype=None, device=None: _cosine_sum(L, periodic, (0.5, 0.5), dtype, device),
        _np_window(np.hanning), "the Hann window 0.5 - 0.5 cos(2 pi n / (N - 1))")
_window(f"hamming_window(int window_length, bool periodic=True, float alpha=0.54, float beta=0.46, {_TAIL})",
        lambda L, periodic=True, alpha=0.54, beta=0.46, dtype=None, device=None:
        _cosine_sum(L, periodic, (alpha, beta), dtype, device),
        _np_window(lambda n, alpha=0.54, beta=0.46: alpha - beta * np.cos(2 * np.pi * np.arange(n) / (n - 1))),
        "the Hamming window alpha - beta cos(2 pi n / (N - 1))", samples=_window_samples(0.5, 0.4))
_window(f"blackman_window(int window_length, bool periodic=True, {_TAIL})",
        lambda L, periodic=True, dtype=None, device=None: _cosine_sum(L, periodic, (0.42, 0.5, 0.08), dtype, device),
        _np_window(np.blackman), "the Blackman window 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))")


def _bartlett(window_length, periodic=True, dtype=None, device=None):
    dtype = dtype or get_default_dtype()
    if window_length <= 1:
        return F.ones((window_length,), dtype=dtype, device=device)
    n, span = _positions(window_length, periodic, dtype, device)
    return F.sub(1, F.abs(F.sub(F.mul(n, 2 / span), 1)))


_window(f"bartlett_window(int window_length, bool periodic=True, {_TAIL})", _bartlett, _np_window(np.bartlett),
        "the triangular Bartlett window 1 - |2n / (N - 1) - 1|")


def _kaiser(window_length, periodic=True, beta=12.0, dtype=None, device=None):
    dtype = dtype or get_default_dtype()
    if window_length <= 1:
        return F.ones((window_length,), dtype=dtype, device=device)
    n, span = _positions(window_length, periodic, dtype, device)
    ratio = F.sub(F.mul(n, 2 / span), 1)
    argument = F.mul(F.sqrt(F.clamp(F.sub(1, F.mul(ratio, ratio)), 0, None)), beta)
    return F.div(F.i0(argument), F.i0(F.full((), beta, dtype=dtype, device=device)))


_window(f"kaiser_window(int window_length, bool periodic=True, float beta=12.0, {_TAIL})", _kaiser,
        _np_window(lambda n, beta=12.0: np.kaiser(n, beta)),
        "the Kaiser window I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta)", samples=_window_samples(5.0))


# -- logspace, range, scalar_tensor ---------------------------------------------------------------

def _logspace(start, end, steps, base=10.0, dtype=None, device=None):
    dtype = dtype or get_default_dtype()
    compute = dtype if dtype.is_inexact else get_default_dtype()
    out = F.pow(base, F.linspace(start, end, steps, dtype=compute, device=device))
    return out if compute is dtype else F.to_dtype(F.round(out), dtype)


def _logspace_reference(start, end, steps, base=10.0, dtype=None, device=None):
    out = np.logspace(start, end, steps, base=base)
    return out if dtype is None or dtype.is_inexact else np.round(out)


def _logspace_samples(make, dtype):
    yield Sample((0, 2, 3), {"dtype": dtype})
    yield Sample((-1.0, 1.0, 5, 2.0), {"dtype": dtype}, note="base 2")
    yield Sample((1, 1, 1), {"dtype": dtype}, note="one step")
    yield Sample((0, 1, 0), {"dtype": dtype}, note="no steps")


defop(f"logspace(Scalar start, Scalar end, int steps, float base=10.0, {_TAIL})", "creation", kind="composite",
      promotion=_float_promotion, dtypes="numeric+complex", meta=lambda start, end, steps, *rest: (max(steps, 0),),
      normalize=lambda op, args: _nonnegative_steps(args["steps"]), composite=_logspace,
      reference=_logspace_reference, samples=_logspace_samples, method=False, differentiable=False,
      tolerances={"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2), "float32": (1e-5, 1e-5)},
      doc="steps values from base**start to base**end, evenly spaced in the exponent")


def _nonnegative_steps(steps: int) -> None:
    if steps < 0:
        raise ArgumentError(f"logspace: number of steps must be non-negative, got {steps}")


def _range_count(start, end, step) -> int:
    if step == 0:
        raise ArgumentError("range: step must be nonzero")
    if not all(math.isfinite(v) for v in (start, end, step)):
        raise ArgumentError(f"range: unsupported range: {start} -> {end} (step {step}): bounds must be finite")
    if (end - start) * step < 0:
        raise ArgumentError(f"range: upper bound and larger bound inconsistent with step sign "
                            f"(start={start}, end={end}, step={step})")
    return int(math.floor((end - start) / step)) + 1


def _range(start, end, step=1, dtype=None, device=None):
    dtype = dtype or get_default_dtype()
    count = _range_count(start, end, step)
    compute = dtype if dtype.is_floating_point else None
    return F.to_dtype(F.add(F.mul(F.arange(count, dtype=compute, device=device), step), start), dtype)


def _range_samples(make, dtype):
    yield Sample((1, 4), {"dtype": dtype}, note="the end included")
    yield Sample((0, 9, 3), {"dtype": dtype})
    yield Sample((5, 1, -2), {"dtype": dtype}, note="descending")
    yield Sample((2, 2), {"dtype": dtype}, note="one value")


defop(f"range(Scalar start, Scalar end, Scalar step=1, {_TAIL})", "creation", kind="composite",
      promotion=_float_promotion, dtypes="numeric",
      meta=lambda start, end, step=1, *rest: (_range_count(start, end, step),), composite=_range,
      reference=lambda start, end, step=1, dtype=None, device=None:
      start + step * np.arange(_range_count(start, end, step)),
      samples=_range_samples, method=False, differentiable=False,
      doc="deprecated (use arange): start, start + step, ... up to and including end, in the default float "
          "dtype unless dtype= says otherwise")


defop(f"scalar_tensor(Scalar s, {_TAIL})", "creation", kind="composite", promotion=_float_promotion,
      meta=lambda s, *rest: (), method=False, differentiable=False,
      composite=lambda s, dtype=None, device=None: F.full((), s, dtype=dtype or get_default_dtype(), device=device),
      reference=lambda s, dtype=None, device=None: np.asarray(s),
      samples=lambda make, dtype: (Sample((v,), {"dtype": dtype}) for v in (3, 1.5, True)),
      doc="a 0-d tensor holding s, in the default float dtype unless dtype= says otherwise")
