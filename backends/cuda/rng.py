"""A seedable, checkpointable generator on the device: cuRAND's Philox4x32-10 with an explicit offset.

A counter-based generator is fully described by its seed and how far it has advanced, so the state
is those two numbers (16 bytes), which ``get_state``/``set_state`` save and restore exactly: before
every draw the generator is placed at its offset, and the offset then moves past what was drawn.
Numbers are generated on the device, on the current CuPy stream; nothing passes through the host.
"""
from __future__ import annotations

import struct

import numpy as np

_STATE = struct.Struct("<QQ")  # seed, offset
_MASK64 = (1 << 64) - 1


def _round4(n: int) -> int:
    """Philox produces 4 values per counter step: advancing in whole steps keeps draws disjoint."""
    return (n + 3) & ~3


class CudaGenerator:
    """Philox4x32-10 on device ``index``. Offsets count 32-bit values drawn since the seed was set."""

    def __init__(self, cupy, index: int, seed: int) -> None:
        self._cupy = cupy
        self.index = index
        self._handle = None
        self._handle_seed = None
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> None:
        self.initial_seed = int(seed)
        self.offset = 0

    # -- state ----------------------------------------------------------------------------------------
    def get_state(self) -> bytes:
        return _STATE.pack(self.initial_seed & _MASK64, self.offset)

    def set_state(self, state: bytes) -> None:
        state = bytes(state)
        if len(state) != _STATE.size:
            raise ValueError(f"set_state: expected {_STATE.size} bytes of cuda generator state (seed and offset), "
                             f"got {len(state)}")
        self.initial_seed, self.offset = _STATE.unpack(state)

    # -- drawing --------------------------------------------------------------------------------------
    def _positioned(self, values: int) -> int:
        """The cuRAND generator, on the current stream, at this generator's offset; reserves ``values``."""
        from cupy.cuda import curand
        if self._handle is None:
            with self._cupy.cuda.Device(self.index):
                self._handle = curand.createGenerator(curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
        handle = self._handle
        curand.setStream(handle, self._cupy.cuda.get_current_stream().ptr)
        if self._handle_seed != self.initial_seed:
            curand.setPseudoRandomGeneratorSeed(handle, self.initial_seed & _MASK64)
            self._handle_seed = self.initial_seed
        curand.setGeneratorOffset(handle, self.offset)
        self.offset += _round4(values)
        return handle

    def _empty(self, dtype, count: int):
        """A flat buffer of ``count`` elements on this generator's device."""
        with self._cupy.cuda.Device(self.index):
            return self._cupy.empty(count, dtype=dtype)

    def uniform(self, size, dtype):
        """Values in [0, 1): cuRAND gives (0, 1], so 1 - u."""
        from cupy.cuda import curand
        dtype = np.dtype(dtype)
        n = int(np.prod(size, dtype=np.int64))
        out = self._empty(dtype, n)
        if n:
            double = dtype == np.float64
            handle = self._positioned(2 * n if double else n)
            (curand.generateUniformDouble if double else curand.generateUniform)(handle, out.data.ptr, n)
            self._cupy.subtract(1, out, out=out)
        return out.reshape(size)

    def normal(self, size, dtype):
        """Standard normal values; cuRAND makes them in pairs (Box-Muller), so an odd count draws one extra."""
        from cupy.cuda import curand
        dtype = np.dtype(dtype)
        n = int(np.prod(size, dtype=np.int64))
        even = n + (n & 1)
        out = self._empty(dtype, even)
        if n:
            double = dtype == np.float64
            handle = self._positioned(2 * even if double else even)
            (curand.generateNormalDouble if double else curand.generateNormal)(handle, out.data.ptr, even, 0.0, 1.0)
        return out[:n].reshape(size)

    def integers(self, low: int, high: int, size):
        """int64 in [low, high): 64 random bits per value, reduced modulo the span (bias below 2**-30
        for spans under 2**34)."""
        from cupy.cuda import curand
        cupy = self._cupy
        n = int(np.prod(size, dtype=np.int64))
        bits = self._empty(np.uint32, 2 * n)
        if n:
            curand.generate(self._positioned(2 * n), bits.data.ptr, 2 * n)
        span = np.uint64(high - low)
        values = cupy.remainder(bits.view(np.uint64), span).astype(np.int64) + np.int64(low)
        return values.reshape(size)

    def __del__(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            try:
                from cupy.cuda import curand
                curand.destroyGenerator(handle)
            except Exception:  # interpreter shutdown: the driver may already be gone
                pass
