"""Graph-safe random numbers: Philox draws whose seed and offset a captured graph reads from device memory.

cuRAND's host API takes the offset as a host value, so a draw captured into a CUDA graph would repeat the
same numbers at every replay. While a capture runs, a ``CudaGenerator`` draws through ``philox_bits``
instead: the kernel reads ``(seed, offset)`` from a two-word device buffer and adds the draw's place inside
the graph (``intra``); at the end of the capture one more kernel (``philox_advance``) adds everything the
graph draws to the device offset, so every replay starts where the previous one ended, on the device.

``OffsetBook`` is the host side (no CuPy; tested on the CPU): it hands out places inside a graph, and per
replay says whether the device buffer must be rewritten first (eager draws or a new seed since the device
last advanced it) and advances the host offset by what the graph drew, so ``get_state`` stays exact.
"""
from __future__ import annotations

from .kernel_sources import ModuleSource


def round4(n: int) -> int:
    """Philox produces 4 values per counter step: advancing in whole steps keeps draws disjoint."""
    return (n + 3) & ~3


# Philox4x32-10 (Salmon et al., SC'11): counter (c0..c3) = 128-bit counter, key (k0, k1) = the 64-bit seed.
PHILOX_SOURCE = ModuleSource("graph_safe_philox", r"""
#define EMBER_PHILOX_M0 0xD2511F53u
#define EMBER_PHILOX_M1 0xCD9E8D57u
#define EMBER_PHILOX_W0 0x9E3779B9u
#define EMBER_PHILOX_W1 0xBB67AE85u

__device__ __forceinline__ void ember_philox_round(unsigned int* c, unsigned int k0, unsigned int k1) {
    unsigned int hi0 = __umulhi(EMBER_PHILOX_M0, c[0]), lo0 = EMBER_PHILOX_M0 * c[0];
    unsigned int hi1 = __umulhi(EMBER_PHILOX_M1, c[2]), lo1 = EMBER_PHILOX_M1 * c[2];
    unsigned int n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;
    c[0] = n0; c[1] = lo1; c[2] = n2; c[3] = lo0;
}

// out[0:n] = the Philox stream of key state[0] from value state[1] + intra on (both in 32-bit values;
// offsets are multiples of 4, so value v is word v % 4 of counter v / 4).
extern "C" __global__ void ember_philox_bits(const unsigned long long* state, unsigned long long intra,
                                             unsigned int* out, long long n) {
    long long block = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (block * 4 >= n) return;
    unsigned long long seed = state[0];
    unsigned long long counter = (state[1] + intra) / 4 + (unsigned long long)block;
    unsigned int c[4] = {(unsigned int)counter, (unsigned int)(counter >> 32), 0u, 0u};
    unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
    for (int r = 0; r < 10; ++r) {
        if (r) { k0 += EMBER_PHILOX_W0; k1 += EMBER_PHILOX_W1; }
        ember_philox_round(c, k0, k1);
    }
    for (int j = 0; j < 4; ++j) {
        long long at = block * 4 + j;
        if (at < n) out[at] = c[j];
    }
}

// The last node of every graph that draws: the next replay starts after this one's values.
extern "C" __global__ void ember_philox_advance(unsigned long long* state, unsigned long long by) {
    if (blockIdx.x == 0 && threadIdx.x == 0) state[1] += by;
}

// Set the device state from the host's (a kernel with the values as arguments: never a host read).
extern "C" __global__ void ember_philox_set(unsigned long long* state, unsigned long long seed,
                                            unsigned long long offset) {
    if (blockIdx.x == 0 && threadIdx.x == 0) { state[0] = seed; state[1] = offset; }
}
""", ("--std=c++14",))

SOURCES = (PHILOX_SOURCE,)


class OffsetBook:
    """Host bookkeeping of one generator's graph-safe state (see the module docstring).

    ``mirror`` is what the device buffer holds when every queued replay has run, as far as the host knows:
    (seed, offset), or None before the buffer was ever written."""

    def __init__(self) -> None:
        self.mirror: tuple[int, int] | None = None
        self.capturing = False
        self.drawn = 0  # values reserved by the capture in progress

    # -- capture -------------------------------------------------------------------------------------------
    def begin(self, seed: int, offset: int) -> bool:
        """A capture starts; True where the device buffer must first be set to (seed, offset)."""
        if self.capturing:
            raise RuntimeError("cuda generator: a capture is already drawing from this generator")
        self.capturing, self.drawn = True, 0
        return self._stale(seed, offset)

    def reserve(self, values: int) -> int:
        """The place inside the graph of a draw of ``values`` 32-bit values."""
        intra = self.drawn
        self.drawn += round4(values)
        return intra

    def end(self) -> int:
        """The capture is over: how many values each replay of its graph draws (the device increment)."""
        self.capturing = False
        drawn, self.drawn = self.drawn, 0
        return drawn

    # -- replay --------------------------------------------------------------------------------------------
    def before_replay(self, seed: int, offset: int) -> bool:
        """True where the device buffer must be set to (seed, offset) before the replay: the host drew eagerly,
        was re-seeded or had its state set since the device last advanced."""
        return self._stale(seed, offset)

    def after_replay(self, seed: int, offset: int, drawn: int) -> int:
        """The host offset after a replay that drew ``drawn`` values (the device added them itself)."""
        offset += drawn
        self.mirror = (seed, offset)
        return offset

    def _stale(self, seed: int, offset: int) -> bool:
        if self.mirror == (seed, offset):
            return False
        self.mirror = (seed, offset)
        return True


__all__ = ["OffsetBook", "PHILOX_SOURCE", "SOURCES", "round4"]
