"""The DFT of a contiguous complex CLArray along one axis, on the device: Stockham radix-8 passes (after one
radix-2 or radix-4 pass where needed) for power-of-two lengths, Bluestein's chirp-z for the others
(a circular convolution of length m >= 2n - 1, a power of two, done with two such FFTs). Small signals along
the last dim run all their passes in one launch, a work-group each in local memory; others one launch a pass
over the whole batch. Twiddle tables and Bluestein's chirps are computed on the device once per (device,
length, dtype) and kept.
"""
from __future__ import annotations

import math

import numpy as np

from ember.dispatch import BackendError

from .. import strided
from ..array import CLArray, empty
from .fft_kernels import REAL, chirp_kernel, pass_kernel, phases_kernel, rows_kernel

_KEPT_BYTES = 64 << 20  # the most that twiddle tables and chirps kept on the devices take; the oldest go first
_tables: dict = {}  # key -> (arrays, bytes)
_ROW_LIMIT = 1 << 32  # the kernels count a row's work-items in 32 bits
# The most a signal and its copy take in local memory: within GPUs' local memory, and on CPU devices (PoCL)
# about where one work-group a signal stops beating a launch a pass (PoCL's CPU time, 64 to 512 signals: 1.1-1.3x
# less at 512 and 4096 points, about the same at 64 and 2048, 1.2x more at 8192 and 16384)
_LOCAL_SIGNAL_BYTES = 64 << 10


def transform(x: CLArray, axis: int, forward: bool, scale: float = 1.0) -> CLArray:
    """A new contiguous array: ``x`` (contiguous, offset 0, complex) transformed along ``axis`` (exponent sign
    -1 forward, +1 inverse, no normalization) and multiplied by ``scale``."""
    n = x.shape[axis]
    outer, inner = math.prod(x.shape[:axis]), math.prod(x.shape[axis + 1:])
    if n * inner >= _ROW_LIMIT:
        raise BackendError(f"fft: {x.runtime.name} transforms rows of fewer than 2**32 elements; got shape "
                           f"{x.shape}, dim {axis}, dtype {x.dtype}")
    if n == 1:
        return strided.run(x.runtime, "x0 * x1", [x, strided.Scalar(scale, REAL[x.dtype])], x.dtype)
    direction = -1.0 if forward else 1.0
    if n & (n - 1) == 0:
        return _power_of_two(x, n, outer, inner, direction, scale)
    return _bluestein(x, n, outer, inner, direction, scale)


def _radices(n: int) -> list[int]:
    """Radix-8 passes whose product is ``n`` (a power of two), after one radix-2 or radix-4 pass where log2(n) is
    no multiple of 3."""
    bits = n.bit_length() - 1
    return [1 << (bits % 3)] * (bits % 3 > 0) + [8] * (bits // 3)


def _power_of_two(x: CLArray, n: int, outer: int, inner: int, direction: float, scale: float) -> CLArray:
    """Signals along the last dim, small enough, each in one work-group's local memory; others pass by pass
    (where the signals' lanes lie side by side, work-items next to each other read neighbouring elements)."""
    runtime = x.runtime
    if inner > 1 or 2 * n * x.itemsize > min(runtime.local_bytes, _LOCAL_SIGNAL_BYTES):
        return _passes(x, n, outer, inner, direction, scale)
    import pyopencl as cl
    y = empty(runtime, x.shape, x.dtype)
    kernel, table = rows_kernel(runtime, x.dtype), twiddles(runtime, n, x.dtype)
    group = runtime.min_exact_group if runtime.is_cpu else runtime.covering_group(n // 4)
    runtime.launch_groups(kernel, outer, group, x.buffer, table.buffer, y.buffer, cl.LocalMemory(n * x.itemsize),
                          cl.LocalMemory(n * x.itemsize), n, _radices(n)[0], direction, scale)
    return y


def _passes(x: CLArray, n: int, outer: int, inner: int, direction: float, scale: float) -> CLArray:
    """One launch per Stockham pass over every signal, reading and writing global memory."""
    runtime = x.runtime
    kernel, table = pass_kernel(runtime, x.dtype), twiddles(runtime, n, x.dtype)
    radices = _radices(n)
    product = 1
    for step, radix in enumerate(radices):
        y = empty(runtime, x.shape, x.dtype)
        per_row = n // radix * inner
        last = step == len(radices) - 1
        runtime.launch_rows(kernel, per_row, outer, x.buffer, table.buffer, y.buffer, per_row, n, inner, product,
                            radix, n // (product * radix), direction, scale if last else 1.0)
        product *= radix
        x = y  # (the array read is returned to the pool: the in-order queue runs this pass before any reuse)
    return x


def _bluestein(x: CLArray, n: int, outer: int, inner: int, direction: float, scale: float) -> CLArray:
    """X[k] = w[k] sum_j (x[j] w[j]) conj(w[k - j]) with w[k] = exp(direction i pi k^2 / n): the chirp-z
    form of the DFT, whose convolution runs as FFTs of the power of two m >= 2n - 1."""
    runtime = x.runtime
    m = 1 << (2 * n - 2).bit_length()
    chirp, filter_spectrum = _chirps(runtime, n, m, direction, x.dtype)
    multiply = chirp_kernel(runtime, x.dtype)
    padded = empty(runtime, (outer, m, inner), x.dtype)
    runtime.launch_rows(multiply, m * inner, outer, x.buffer, chirp.buffer, padded.buffer, m * inner, n, m, inner,
                        n, 1.0)
    spectrum = _power_of_two(padded, m, outer, inner, -1.0, 1.0)
    runtime.launch_rows(multiply, m * inner, outer, spectrum.buffer, filter_spectrum.buffer, spectrum.buffer,
                        m * inner, m, m, inner, m, 1.0)
    convolved = _power_of_two(spectrum, m, outer, inner, 1.0, 1.0)
    out = empty(runtime, x.shape, x.dtype)
    runtime.launch_rows(multiply, n * inner, outer, convolved.buffer, chirp.buffer, out.buffer, n * inner, m, n,
                        inner, n, scale / m)
    return out


def _phases(runtime, dtype: np.dtype, count: int, n: int, m: int, square: bool, wrap: bool, sign: float):
    out = empty(runtime, (count,), dtype)
    runtime.launch(phases_kernel(runtime, dtype), count, out.buffer, count, n, m, int(square), int(wrap), sign)
    return out


def twiddles(runtime, n: int, dtype: np.dtype) -> CLArray:
    """exp(2 pi i t / n) for t < n (the passes flip the sign for forward transforms)."""
    return _kept((runtime.index, "twiddles", n, dtype),
                 lambda: _phases(runtime, dtype, n, n, n, square=False, wrap=False, sign=1.0))


def _chirps(runtime, n: int, m: int, direction: float, dtype: np.dtype) -> tuple[CLArray, CLArray]:
    """Bluestein's chirp w (n entries) and the forward FFT of its conjugate filter (m entries)."""
    def make():
        chirp = _phases(runtime, dtype, n, n, m, square=True, wrap=False, sign=direction)
        filter_ = _phases(runtime, dtype, m, n, m, square=True, wrap=True, sign=-direction)
        return chirp, _power_of_two(filter_, m, 1, 1, -1.0, 1.0)
    return _kept((runtime.index, "chirps", n, direction, dtype), make)


def _kept(key: tuple, make):
    """``make()``'s arrays, made once per ``key`` while they are among the latest made that fit _KEPT_BYTES."""
    found = _tables.get(key)
    if found is None:
        made = make()
        size = sum(a.size * a.itemsize for a in (made if isinstance(made, tuple) else (made,)))
        while _tables and sum(kept[1] for kept in _tables.values()) + size > _KEPT_BYTES:
            del _tables[next(iter(_tables))]
        found = _tables[key] = (made, size)
    return found[0]
