"""Random numbers on the device from Philox4x32-10, a counter-based generator: work-item i turns
counter (offset + i) and the 64-bit key (the seed) into four independent 32-bit words. A generator
is just (key, offset), so its state is 16 bytes and every draw is reproducible.
"""
from __future__ import annotations

import math
import struct

import numpy as np

from ..array import empty
from ..cltypes import NUMPY_DTYPE, STORAGE_CTYPE, store

_PHILOX = """
inline uint4 philox(ulong counter, ulong key) {
    uint c0 = (uint)counter, c1 = (uint)(counter >> 32), c2 = 0, c3 = 0;
    uint k0 = (uint)key, k1 = (uint)(key >> 32);
    for (int round = 0; round < 10; ++round) {
        const uint hi0 = mul_hi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
        const uint hi1 = mul_hi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
        c0 = hi1 ^ c1 ^ k0; c1 = lo1; c2 = hi0 ^ c3 ^ k1; c3 = lo0;
        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
    }
    return (uint4)(c0, c1, c2, c3);
}
"""

# Per distribution: (values per counter, C code computing v[0..] from the words w and args p0, p1, p2).
# Uniform draws are clamped to p2, the largest value of the output dtype below high: rounding
# low + u * (high - low), or rounding it to half precision, must not land on high itself.
_DRAWS = {
    ("uniform", "float"): (4, """
    const float u[4] = {(w.x >> 8) * 0x1p-24f, (w.y >> 8) * 0x1p-24f, (w.z >> 8) * 0x1p-24f, (w.w >> 8) * 0x1p-24f};
    for (int j = 0; j < 4; ++j) v[j] = min(p0 + u[j] * (p1 - p0), p2);"""),
    ("uniform", "double"): (2, """
    const double u[2] = {((ulong)(w.x >> 5) * 67108864.0 + (w.y >> 6)) * 0x1p-53,
                         ((ulong)(w.z >> 5) * 67108864.0 + (w.w >> 6)) * 0x1p-53};
    for (int j = 0; j < 2; ++j) v[j] = min(p0 + u[j] * (p1 - p0), p2);"""),
    ("normal", "float"): (4, """
    for (int j = 0; j < 4; j += 2) {
        const uint a = j ? w.z : w.x, b = j ? w.w : w.y;
        const float r = sqrt(-2.0f * log(1.0f - (a >> 8) * 0x1p-24f)), t = 6.283185307179586f * ((b >> 8) * 0x1p-24f);
        v[j] = (float)p0 + (float)p1 * r * cos(t); v[j + 1] = (float)p0 + (float)p1 * r * sin(t); }"""),
    ("normal", "double"): (2, """
    const double a = ((ulong)(w.x >> 5) * 67108864.0 + (w.y >> 6)) * 0x1p-53;
    const double b = ((ulong)(w.z >> 5) * 67108864.0 + (w.w >> 6)) * 0x1p-53;
    const double r = sqrt(-2.0 * log(1.0 - a)), t = 6.283185307179586 * b;
    v[0] = p0 + p1 * r * cos(t); v[1] = p0 + p1 * r * sin(t);"""),
    ("integers", "long"): (2, """
    const ulong span = (ulong)(p1 - p0);
    v[0] = p0 + (long)((((ulong)w.x << 32) | w.y) % span);
    v[1] = p0 + (long)((((ulong)w.z << 32) | w.w) % span);"""),
}
_KERNELS: dict = {}


def _kernel(runtime, kind: str, draw: str, out_dtype: np.dtype):
    key = (runtime.index, kind, draw, out_dtype)
    per, code = _DRAWS[(kind, draw)]
    kernel = _KERNELS.get(key)
    if kernel is None:
        arg = draw  # the distribution's parameters come in the type it computes in
        source = _PHILOX + f"""
__kernel void ember_random(__global {STORAGE_CTYPE[out_dtype]} *out, const long n, const ulong offset,
                           const ulong key, const {arg} p0, const {arg} p1, const {arg} p2)
{{
    const long i = get_global_id(0);
    if (i * {per} >= n) return;
    const uint4 w = philox(offset + i, key);
    {draw} v[{per}];
    {code}
    for (int j = 0; j < {per}; ++j) {{
        const long at = i * {per} + j;
        if (at < n) {{ {store(out_dtype, "out", "at", "v[j]")} }}
    }}
}}
"""
        arg_dtype = {"float": np.float32, "double": np.float64, "long": np.int64}[arg]
        kernel = _KERNELS[key] = runtime.programs.kernel(
            source, "ember_random", [None, np.int64, np.uint64, np.uint64, arg_dtype, arg_dtype, arg_dtype])
    return kernel, per


class PhiloxGenerator:
    """A seedable generator for one device: the seed is the Philox key, the offset the next counter."""
    _defaults: dict = {}
    _default_seed = 0

    def __init__(self, runtime, seed: int) -> None:
        self.runtime = runtime
        self.manual_seed(seed)

    @classmethod
    def default(cls, runtime) -> "PhiloxGenerator":
        generator = cls._defaults.get(runtime.index)
        if generator is None:
            generator = cls._defaults[runtime.index] = cls(runtime, cls._default_seed)
        return generator

    @classmethod
    def seed_defaults(cls, seed: int) -> None:
        cls._default_seed = int(seed)
        for generator in cls._defaults.values():
            generator.manual_seed(seed)

    def manual_seed(self, seed: int) -> None:
        self.initial_seed = int(seed)
        self.key = int(seed) % (2 ** 64)
        self.offset = 0

    def get_state(self) -> bytes:
        return struct.pack("<QQ", self.key, self.offset)

    def set_state(self, state: bytes) -> None:
        if len(state) != 16:
            raise ValueError(f"set_state: expected 16 bytes of Philox state (key, offset), got {len(state)}")
        self.key, self.offset = struct.unpack("<QQ", bytes(state))

    def draw(self, kind: str, draw: str, size, dtype, p0, p1, p2=0):
        out_dtype = NUMPY_DTYPE[dtype]
        out = empty(self.runtime, tuple(size), out_dtype)
        n = out.size
        kernel, per = _kernel(self.runtime, kind, draw, out_dtype)
        counters = math.ceil(n / per)
        self.runtime.launch(kernel, counters, out.buffer, n, self.offset, self.key, p0, p1, p2)
        self.offset = (self.offset + counters) % (2 ** 64)
        return out


def _precision(dtype) -> str:
    return "double" if NUMPY_DTYPE[dtype] == np.float64 else "float"


def _uniform(size, low, high, generator, dtype, device):
    target = NUMPY_DTYPE[dtype]
    below_high = float(np.nextafter(np.array(high, dtype=target), np.array(-np.inf, dtype=target)))
    return generator.draw("uniform", _precision(dtype), size, dtype, low, high, below_high)


def _normal(size, mean, std, generator, dtype, device):
    return generator.draw("normal", _precision(dtype), size, dtype, mean, std)


def _integers(size, low, high, generator, dtype, device):
    return generator.draw("integers", "long", size, dtype, low, high)


KERNELS = {"rand_uniform": _uniform, "rand_normal": _normal, "rand_int": _integers}
