"""A seedable, checkpointable generator on the device: cuRAND's Philox4x32-10 with an explicit offset.

A counter-based generator is fully described by its seed and how far it has advanced, so the state
is those two numbers (16 bytes), which ``get_state``/``set_state`` save and restore exactly: before
every draw the generator is placed at its offset, and the offset then moves past what was drawn.
Numbers are generated on the device, on the current CuPy stream; nothing passes through the host.

While a CUDA graph is captured the generator is graph safe (``graph_rng.py``): draws read the seed and
offset from a device buffer that each replay advances on the device, so replays never repeat a draw; the
host offset still advances by what each replay draws (``replayed``), so ``get_state`` stays exact. Such
draws come from Ember's own Philox kernel, not cuRAND's: the same seed gives other numbers than eagerly.
"""
from __future__ import annotations

import struct
import weakref

import numpy as np

from .graph_rng import SOURCES as _GRAPH_SOURCES, OffsetBook

_STATE = struct.Struct("<QQ")  # seed, offset
_MASK64 = (1 << 64) - 1


def _round4(n: int) -> int:
    """Philox produces 4 values per counter step: advancing in whole steps keeps draws disjoint."""
    return (n + 3) & ~3


#: every live generator, so that a capture can make those of its device graph safe
LIVE: "weakref.WeakSet[CudaGenerator]" = weakref.WeakSet()
_kernels: dict = {}  # cupy module -> (bits, advance, set) kernels of graph_rng, compiled on first capture


def _graph_kernels(cupy):
    found = _kernels.get(id(cupy))
    if found is None:
        module = _GRAPH_SOURCES[0].build(cupy)
        found = _kernels[id(cupy)] = tuple(module.get_function(name) for name in
                                           ("ember_philox_bits", "ember_philox_advance", "ember_philox_set"))
    return found


class CudaGenerator:
    """Philox4x32-10 on device ``index``. Offsets count 32-bit values drawn since the seed was set."""

    def __init__(self, cupy, index: int, seed: int) -> None:
        self._cupy = cupy
        self.index = index
        self._handle = None
        self._handle_seed = None
        self._book = OffsetBook()
        self._device_state = None  # (seed, offset) on the device, for graph-safe draws
        self.manual_seed(seed)
        LIVE.add(self)

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

    # -- graph capture (graph_rng.py) -----------------------------------------------------------------
    def capture_begin(self) -> None:
        """Called before a capture starts on this generator's device: draws become graph safe."""
        cupy = self._cupy
        if self._device_state is None:
            with cupy.cuda.Device(self.index):
                self._device_state = cupy.zeros(2, dtype=np.uint64)
        if self._book.begin(self.initial_seed & _MASK64, self.offset):
            self._set_device_state()

    def capture_end(self) -> int:
        """Called before the capture ends: queues the device-side advance; returns what each replay draws."""
        drawn = self._book.end()
        if drawn:
            self._launch(1, (self._device_state, np.uint64(drawn)))
        return drawn

    def before_replay(self) -> None:
        if self._book.before_replay(self.initial_seed & _MASK64, self.offset):
            self._set_device_state()

    def replayed(self, drawn: int) -> None:
        """A replay that draws ``drawn`` values was queued: the host offset moves past them."""
        self.offset = self._book.after_replay(self.initial_seed & _MASK64, self.offset, drawn)

    def _set_device_state(self) -> None:
        self._launch(2, (self._device_state, np.uint64(self.initial_seed & _MASK64), np.uint64(self.offset)))

    def _launch(self, which: int, args: tuple, blocks: int = 1, threads: int = 1) -> None:
        with self._cupy.cuda.Device(self.index):
            _graph_kernels(self._cupy)[which]((blocks,), (threads,), args)

    def _graph_bits(self, count: int):
        """``count`` uint32 values from the device-side state, at their place in the graph being captured."""
        intra = self._book.reserve(count)
        out = self._empty(np.uint32, _round4(count))
        if count:
            steps = _round4(count) // 4
            threads = 128
            self._launch(0, (self._device_state, np.uint64(intra), out, np.int64(count)),
                         (steps + threads - 1) // threads, threads)
        return out[:count]

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
        if self._book.capturing:
            return self._graph_uniform(n, dtype).reshape(size)
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
        if self._book.capturing:
            u = self._graph_uniform(even, np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32))
            half = even // 2
            radius = self._cupy.sqrt(-2.0 * self._cupy.log1p(-u[:half]))  # 1 - u in (0, 1]
            angle = (2.0 * np.pi) * u[half:]
            pairs = self._cupy.concatenate([radius * self._cupy.cos(angle), radius * self._cupy.sin(angle)])
            return pairs[:n].astype(dtype, copy=False).reshape(size)
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
        if self._book.capturing:
            bits = self._graph_bits(2 * n)
        else:
            bits = self._empty(np.uint32, 2 * n)
            if n:
                curand.generate(self._positioned(2 * n), bits.data.ptr, 2 * n)
        span = np.uint64(high - low)
        values = cupy.remainder(bits.view(np.uint64), span).astype(np.int64) + np.int64(low)
        return values.reshape(size)

    def _graph_uniform(self, n: int, dtype):
        """[0, 1) from graph-safe bits: 24 random bits per float32 (and smaller), 53 per float64."""
        if dtype == np.float64:
            words = self._graph_bits(2 * n).view(np.uint64)
            return (words >> np.uint64(11)).astype(np.float64) * (2.0 ** -53)
        words = self._graph_bits(n)
        return ((words >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24)).astype(dtype, copy=False)

    def __del__(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            try:
                from cupy.cuda import curand
                curand.destroyGenerator(handle)
            except Exception:  # interpreter shutdown: the driver may already be gone
                pass
