"""The OpenCL C of Ember's FFT: seven small kernels per complex dtype, specialized on nothing else (sizes,
radix, direction and scale are arguments), so that a cold PoCL compiles few sources.

A complex element is a ``float2``/``double2`` pair (``cltypes``). The kernels work on contiguous arrays seen
as (rows, length, inner): the transformed axis in the middle, the dims before it as rows (axis 1 of the
launch) and those after it as ``inner`` lanes, so any axis is transformed where it lies, without a transpose.
"""
from __future__ import annotations

import numpy as np

from ..cltypes import STORAGE_CTYPE
from ._source import LONG, cached

REAL = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}
COMPLEX = {real: complex_ for complex_, real in REAL.items()}

# A work-item's place in a (rows, length, inner) array: its row is axis 1 of the launch, and axis 0 counts
# ``length * inner`` items a row, split with 32-bit divisions (64-bit ones are many times slower on PoCL).
_OPEN_ROW = """
    const uint t = get_global_id(0);
    EMBER_GUARD(t, per_row)
    const ulong row = get_global_id(1);
    const uint lane = t % inner, k = t / inner;"""


def _preamble(dtype: np.dtype) -> str:
    pair, real = STORAGE_CTYPE[dtype], STORAGE_CTYPE[REAL[dtype]]
    return f"""
typedef {pair} T2;
typedef {real} R;
inline T2 cmul(T2 a, T2 b) {{ return (T2)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }}
inline T2 turn(T2 v, R direction) {{ return (T2)(-v.y, v.x) * direction; }}  /* direction * i * v */
"""


def _build(runtime, name: str, dtype: np.dtype, params: list[tuple[str, object]], body: str, extra_key=()):
    """The cached kernel ``name`` for ``dtype`` with ``params`` ((declaration, scalar dtype or None)) and
    ``body``."""
    def build():
        declarations = ", ".join(declaration for declaration, _ in params)
        source = f"{_preamble(dtype)}\n__kernel void {name}({declarations})\n{{{body}\n}}\n"
        return source, name, [scalar for _, scalar in params]
    return cached(runtime, ("fft", name, dtype) + extra_key, build)


def _longs(*names: str) -> list[tuple[str, object]]:
    return [(f"const long {name}", LONG) for name in names]


def _buffers(*names: str, const: bool = True) -> list[tuple[str, object]]:
    return [(f"__global {'const ' if const else ''}T2 *{name}", None) for name in names]


def _reals(dtype: np.dtype, *names: str) -> list[tuple[str, object]]:
    return [(f"const R {name}", REAL[dtype]) for name in names]


def _dft4(values: tuple[str, str, str, str], outputs: tuple[str, str, str, str], scale: str) -> str:
    """C block storing the 4-point DFT (exponent sign ``direction``) of ``values`` to ``outputs``."""
    v0, v1, v2, v3 = values
    o0, o1, o2, o3 = outputs
    return f"""{{
            const T2 p = {v0} + {v2}, m = {v0} - {v2}, c = {v1} + {v3}, d = turn({v1} - {v3}, direction);
            {o0} = (p + c){scale}; {o1} = (m + d){scale}; {o2} = (p - c){scale}; {o3} = (m - d){scale};
        }}"""


def _butterfly(scaled: bool) -> str:
    """C statements for butterfly ``k`` of a radix-2, 4 or 8 Stockham pass: it reads src[0], src[step_in], ...
    (elements k, k + span, ... of its signal), multiplies them by the twiddles exp(direction 2 pi i q w / length)
    of its place q = k mod s (s: the product of the radices of the passes before; ``table`` holds
    exp(2 pi i t / length)), and writes their DFT to dst[0], dst[step_out], ... (elements j, j + s, ...): the next
    pass's order, natural after the last. The 8-point DFT is a radix-2 step (sums and twiddled differences of
    elements 4 apart) and two 4-point DFTs, of the even outputs and the odd ones."""
    scale = " * scale" if scaled else ""
    out = [f"dst[{r} * step_out]" for r in range(8)]
    return f"""
    const T2 flip = (T2)(1, direction);
    const T2 u0 = src[0];
    const T2 u1 = cmul(src[step_in], table[w] * flip);
    if (radix == 2) {{
        dst[0] = (u0 + u1){scale};
        dst[step_out] = (u0 - u1){scale};
    }} else {{
        const T2 u2 = cmul(src[2 * step_in], table[2 * w] * flip);
        const T2 u3 = cmul(src[3 * step_in], table[3 * w] * flip);
        if (radix == 4) {_dft4(("u0", "u1", "u2", "u3"), tuple(out[:4]), scale)} else {{
            const T2 u4 = cmul(src[4 * step_in], table[4 * w] * flip);
            const T2 u5 = cmul(src[5 * step_in], table[5 * w] * flip);
            const T2 u6 = cmul(src[6 * step_in], table[6 * w] * flip);
            const T2 u7 = cmul(src[7 * step_in], table[7 * w] * flip);
            const T2 a0 = u0 + u4, a1 = u1 + u5, a2 = u2 + u6, a3 = u3 + u7, d1 = u1 - u5, d3 = u3 - u7;
            const R half_root = (R)0.70710678118654752440;  /* exp(direction 2 pi i / 8) = (1 + direction i) / sqrt 2 */
            const T2 b0 = u0 - u4, b1 = (d1 + turn(d1, direction)) * half_root, b2 = turn(u2 - u6, direction);
            const T2 b3 = (turn(d3, direction) - d3) * half_root;
            {_dft4(("a0", "a1", "a2", "a3"), (out[0], out[2], out[4], out[6]), scale)}
            {_dft4(("b0", "b1", "b2", "b3"), (out[1], out[3], out[5], out[7]), scale)}
        }}
    }}"""


def pass_kernel(runtime, dtype: np.dtype):
    """One radix-2, 4 or 8 pass of a Stockham autosort FFT (no bit reversal: each pass reads ``x`` and
    writes ``y`` in a new order, the last one in natural order): one work-item per butterfly of every signal."""
    params = (_buffers("x", "table") + _buffers("y", const=False)
              + _longs("per_row", "length", "inner", "p", "radix", "tw_step") + _reals(dtype, "direction", "scale"))
    body = _OPEN_ROW + f"""
    const uint s = (uint)p, span = (uint)length / (uint)radix;
    const uint q = k & (s - 1), j = (k - q) * (uint)radix + q, w = q * (uint)tw_step;
    const ulong base = row * (ulong)length * (ulong)inner + lane;
    __global const T2 *src = x + base + (ulong)k * (ulong)inner;
    __global T2 *dst = y + base + (ulong)j * (ulong)inner;
    const ulong step_in = (ulong)span * (ulong)inner, step_out = (ulong)s * (ulong)inner;
    {_butterfly(scaled=True)}"""
    return _build(runtime, "ember_fft_pass", dtype, params, body)


def rows_kernel(runtime, dtype: np.dtype):
    """A whole power-of-two FFT of each signal in local memory, for signals along the last dim (``inner`` 1):
    one work-group per row reads it once, runs every Stockham pass between two local buffers, and writes it
    once, where the passes kernel reads and writes the whole array once a pass."""
    params = (_buffers("x", "table") + _buffers("y", const=False)
              + [("__local T2 *ping", None), ("__local T2 *pong", None)]
              + _longs("length", "first_radix") + _reals(dtype, "direction", "scale"))
    body = f"""
    const uint lid = get_local_id(0), group = get_local_size(0), n = (uint)length;
    const ulong base = (ulong)get_group_id(0) * (ulong)length;
    for (uint t = lid; t < n; t += group) ping[t] = x[base + t];
    barrier(CLK_LOCAL_MEM_FENCE);
    __local T2 *from = ping, *to = pong;
    uint radix = (uint)first_radix;
    for (uint s = 1; s < n; s *= radix, radix = 8) {{
        const uint span = n / radix, tw_step = n / (s * radix), step_in = span, step_out = s;
        for (uint k = lid; k < span; k += group) {{
            const uint q = k & (s - 1), j = (k - q) * radix + q, w = q * tw_step;
            __local const T2 *src = from + k;
            __local T2 *dst = to + j;
            {_butterfly(scaled=False)}
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
        __local T2 *swap = from; from = to; to = swap;
    }}
    for (uint t = lid; t < n; t += group) y[base + t] = from[t] * scale;"""
    return _build(runtime, "ember_fft_rows", dtype, params, body)


def phases_kernel(runtime, dtype: np.dtype):
    """Unit phases exp(sign i pi num / n), computed in double where the device has it, so that float32
    transforms keep pocketfft's accuracy: num = 2t (the twiddle table) or t^2 mod 2n (Bluestein's chirp). Over
    ``count`` = m >= 2n - 1 items with ``wrap``, item t > m - n holds the phase of m - t and those between n and
    m - n hold 0: the chirp filter whose circular convolution is Bluestein's linear one."""
    wide = "double" if runtime.fp64 else "float"
    params = (_buffers("out", const=False) + _longs("count", "n", "m", "square", "wrap")
              + _reals(dtype, "sign"))
    body = f"""
    const ulong t = get_global_id(0);
    EMBER_GUARD(t, count)
    const ulong k = (t < (ulong)n || !wrap) ? t : (ulong)m - t;
    if (wrap && t >= (ulong)n && t <= (ulong)(m - n)) {{ out[t] = (T2)(0, 0); return; }}
    const ulong num = square ? (k * k) % (2 * (ulong)n) : 2 * k;
    const {wide} turn = ({wide})num / ({wide})n;
    out[t] = (T2)((R)cospi(turn), sign * (R)sinpi(turn));"""
    return _build(runtime, "ember_fft_phases", dtype, params, body, (runtime.fp64,))


def chirp_kernel(runtime, dtype: np.dtype):
    """``dst[r, k, l] = src[r, k, l] * w[k] * scale`` for k < ``valid``, else 0, with rows of ``src_length``
    read and of ``dst_length`` written: Bluestein's chirp before (zero padding) and after (cropping) its
    convolution, and the product of spectra in it (in place)."""
    params = (_buffers("src", "w") + _buffers("dst", const=False)
              + _longs("per_row", "src_length", "dst_length", "inner", "valid") + _reals(dtype, "scale"))
    body = _OPEN_ROW + """
    T2 value = (T2)(0, 0);
    if (k < (uint)valid) value = cmul(src[(row * (ulong)src_length + k) * (ulong)inner + lane], w[k]) * scale;
    dst[(row * (ulong)dst_length + k) * (ulong)inner + lane] = value;"""
    return _build(runtime, "ember_fft_chirp", dtype, params, body)


def hermitian_kernel(runtime, dtype: np.dtype):
    """The full ``length`` spectrum of a real signal from its first ``given`` entries (Hermitian symmetry:
    X[k] = conj(X[length - k])); entries past the ones given are 0, as pocketfft's c2r reads them."""
    params = _buffers("src") + _buffers("dst", const=False) + _longs("per_row", "given", "length", "inner")
    body = _OPEN_ROW + """
    const uint mirrored = k > (uint)length / 2;
    const uint at = mirrored ? (uint)length - k : k;
    T2 value = at < (uint)given ? src[(row * (ulong)given + at) * (ulong)inner + lane] : (T2)(0, 0);
    if (mirrored) value.y = -value.y;
    dst[(row * (ulong)length + k) * (ulong)inner + lane] = value;"""
    return _build(runtime, "ember_fft_hermitian", dtype, params, body)


# Real signals of even length n along the last dim are transformed as complex ones of n / 2 points (the even
# samples as real parts, the odd ones as imaginary: the same buffer read as pairs), with one pass before
# (c2r) or after (r2c) to separate or combine the two halves' spectra with the twiddles of n (``table``).
_OPEN_SIGNAL = """
    const uint k = get_global_id(0);
    EMBER_GUARD(k, count)
    const ulong row = get_global_id(1);"""


def real_spectrum_kernel(runtime, dtype: np.dtype):
    """X[k], k <= n / 2, from Z (n / 2 points, the transform of the pairs): X[k] = E[k] + exp(-2 pi i k / n) O[k]
    with E = (Z[k] + conj(Z[-k])) / 2 and O = (Z[k] - conj(Z[-k])) / 2i the spectra of the even and odd samples."""
    params = (_buffers("z", "table") + _buffers("spectrum", const=False) + _longs("count", "points")
              + _reals(dtype, "scale"))
    body = _OPEN_SIGNAL + """
    const uint m = (uint)points;
    const T2 a = z[row * m + (k % m)], b = z[row * m + ((m - k) % m)];
    const T2 even = (T2)(a.x + b.x, a.y - b.y) * (R)0.5, half_difference = (T2)(a.x - b.x, a.y + b.y) * (R)0.5;
    const T2 odd = (T2)(half_difference.y, -half_difference.x);
    const T2 twiddle = table[k] * (T2)(1, -1);
    spectrum[row * (ulong)count + k] = (even + cmul(twiddle, odd)) * scale;"""
    return _build(runtime, "ember_fft_real_spectrum", dtype, params, body)


def pairs_spectrum_kernel(runtime, dtype: np.dtype):
    """Z[k], k < n / 2, whose inverse transform holds a real signal's even samples as real parts and its odd
    ones as imaginary parts, from the signal's spectrum X (its first n / 2 + 1 entries, rows of ``given``):
    Z[k] = (X[k] + conj(X[m - k])) + i exp(2 pi i k / n) (X[k] - conj(X[m - k])). The imaginary parts of X[0]
    and X[n / 2] are ignored, as pocketfft's c2r ignores them."""
    params = (_buffers("spectrum", "table") + _buffers("z", const=False) + _longs("count", "given")
              + _reals(dtype, "scale"))
    body = _OPEN_SIGNAL + """
    const ulong at = row * (ulong)given;
    T2 a = spectrum[at + k], b = spectrum[at + count - k];
    if (k == 0) { a.y = 0; b.y = 0; }
    const T2 sum = (T2)(a.x + b.x, a.y - b.y), difference = (T2)(a.x - b.x, a.y + b.y);
    const T2 turned = cmul(difference, table[k]);
    z[row * (ulong)count + k] = (T2)(sum.x - turned.y, sum.y + turned.x) * scale;"""
    return _build(runtime, "ember_fft_pairs_spectrum", dtype, params, body)
