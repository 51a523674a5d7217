"""``ember.cuda``'s graph API without a GPU: clean errors where CUDA cannot run, the backend hook's contract,
the graph-safe random offsets' host bookkeeping, and the graph-safe Philox kernel compiling with NVRTC.

What runs only on a GPU (CuPy stream capture, ``cupy.cuda.Graph`` launches, the private ``MemoryPool``, the
Philox kernel's numbers) is ``backends/cuda/graphs.py``, ``rng.py``'s capture branches and the kernel itself.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.backends.cuda import nvrtc, translation
from ember.backends.cuda.graph_rng import PHILOX_SOURCE, OffsetBook, round4
from ember.backends.cuda.graphs import CudaGraphs
from ember.compiler.device_graph import graphs_of
from ember.dispatch import DeviceError, DeviceGraphs, DeviceRuntime

NO_CUDA = not ember.cuda.is_available()


# -- the public API where CUDA is unavailable -----------------------------------------------------------------

@pytest.mark.skipif(not NO_CUDA, reason="checks the errors raised where CUDA is unavailable")
@pytest.mark.parametrize("call", [
    lambda: ember.cuda.CUDAGraph(),
    lambda: ember.cuda.graph_pool_handle(),
    lambda: ember.cuda.make_graphed_callables(lambda x: x * 2, (ember.ones(2),)),
])
def test_graph_api_raises_why_cuda_is_unavailable(call):
    with pytest.raises(DeviceError) as caught:
        call()
    message = str(caught.value)
    assert "cuda" in message and ember.cuda.unavailable_reason() in message, message


@pytest.mark.skipif(not NO_CUDA, reason="checks the errors raised where CUDA is unavailable")
def test_graph_context_raises_before_running_the_body():
    ran = []
    with pytest.raises(DeviceError, match="cuda"):
        with ember.cuda.graph(ember.cuda.CUDAGraph()):
            ran.append(True)
    assert not ran


def test_graph_api_names_are_exported():
    for name in ("CUDAGraph", "graph", "graph_pool_handle", "make_graphed_callables"):
        assert name in ember.cuda.__all__ and callable(getattr(ember.cuda, name))


# -- the backend hook -------------------------------------------------------------------------------------------

def test_cuda_implements_the_whole_device_graphs_contract():
    assert issubclass(CudaGraphs, DeviceGraphs)
    assert not CudaGraphs.__abstractmethods__  # every method of the contract is there


def test_device_runtimes_have_no_graphs_unless_they_say_so():
    assert DeviceRuntime.device_graphs(None) is None  # the contract's default: an optional hook
    for name, state in ember.backends.available().items():
        if name != "cuda" and state == "available":  # no device graphs: programs replay op by op there
            assert graphs_of(ember.device(name)) is None, name


def test_capture_error_mode_is_checked():
    graphs = CudaGraphs(cupy=None)
    with pytest.raises(ValueError, match="capture_error_mode"):
        graphs.begin_capture(0, None, "strict")


# -- graph-safe random offsets (host side) ----------------------------------------------------------------------

class _SimulatedGenerator:
    """The host side of a CudaGenerator with NumPy standing in for the device buffer: what ``capture_begin``,
    ``_graph_bits``, ``capture_end``, ``before_replay`` and ``replayed`` do, minus the launches."""

    def __init__(self, seed: int) -> None:
        self.seed, self.offset = seed, 0
        self.book = OffsetBook()
        self.device = np.zeros(2, dtype=np.uint64)  # (seed, offset), as the kernels read it
        self.graph_draws: list[tuple[int, int]] = []  # (intra, count) captured
        self.drawn_ranges: list[tuple[int, int]] = []  # [start, end) of every value drawn, eager or replayed

    def eager(self, count: int) -> None:
        self.drawn_ranges.append((self.offset, self.offset + count))
        self.offset += round4(count)

    def capture(self, counts: list[int]) -> int:
        if self.book.begin(self.seed, self.offset):
            self.device[:] = (self.seed, self.offset)
        self.graph_draws = [(self.book.reserve(n), n) for n in counts]
        return self.book.end()

    def replay(self, drawn: int) -> None:
        if self.book.before_replay(self.seed, self.offset):
            self.device[:] = (self.seed, self.offset)
        base = int(self.device[1])
        self.drawn_ranges += [(base + intra, base + intra + n) for intra, n in self.graph_draws]
        self.device[1] += np.uint64(drawn)  # the graph's last kernel
        self.offset = self.book.after_replay(self.seed, self.offset, drawn)


def test_replays_never_repeat_a_draw_and_the_host_offset_follows():
    g = _SimulatedGenerator(seed=3)
    g.eager(10)  # warm-up draws before the capture
    drawn = g.capture([7, 16, 1])
    assert drawn == round4(7) + 16 + round4(1)
    for k in range(5):
        g.replay(drawn)
        if k == 2:
            g.eager(5)  # an eager draw between replays: the next replay must move the device state first
    starts = sorted(g.drawn_ranges)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(starts, starts[1:]))  # disjoint
    assert g.offset == int(g.device[1])  # host and device agree after the last replay
    assert g.offset == round4(10) + 5 * drawn + round4(5)


def test_the_device_state_is_rewritten_only_when_the_host_moved():
    book = OffsetBook()
    assert book.begin(1, 0) is True  # never written
    book.reserve(4)
    drawn = book.end()
    assert book.before_replay(1, 0) is False  # the capture wrote it: replay 1 starts there
    offset = book.after_replay(1, 0, drawn)
    assert book.before_replay(1, offset) is False  # the device advanced itself
    assert book.before_replay(2, offset) is True  # re-seeded
    assert book.before_replay(2, offset) is False
    assert book.before_replay(2, offset + 8) is True  # eager draws moved the host


def test_a_second_capture_on_one_generator_is_refused_while_one_runs():
    book = OffsetBook()
    book.begin(0, 0)
    with pytest.raises(RuntimeError, match="already"):
        book.begin(0, 0)


@pytest.mark.skipif(nvrtc.unavailable_reason() is not None, reason=f"needs NVRTC: {nvrtc.unavailable_reason()}")
def test_graph_safe_philox_kernel_compiles_with_nvrtc():
    (unit,) = translation.units(PHILOX_SOURCE)
    nvrtc.toolchain().compile(unit.code, "sm_80", unit.options, "ember_graph_rng")


def _philox4x32_10(counter: tuple, key: tuple, constants: dict) -> tuple:
    """The kernel's rounds in Python, line for line, with the constants read from the kernel's source."""
    mask = 0xFFFFFFFF
    c, k0, k1 = list(counter), key[0], key[1]
    m0, m1, w0, w1 = (constants[n] for n in ("M0", "M1", "W0", "W1"))
    for r in range(10):
        if r:
            k0, k1 = (k0 + w0) & mask, (k1 + w1) & mask
        p0, p1 = m0 * c[0], m1 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 & mask, (p0 >> 32) ^ c[3] ^ k1, p0 & mask]
    return tuple(c)


def test_graph_safe_philox_constants_give_random123_known_answers():
    import re
    constants = {m.group(1): int(m.group(2), 16)
                 for m in re.finditer(r"#define EMBER_PHILOX_(\w+) (0x[0-9A-Fa-f]+)u", PHILOX_SOURCE.code)}
    # Random123's kat_vectors for philox4x32_10
    assert _philox4x32_10((0, 0, 0, 0), (0, 0), constants) == (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)
    ones = 0xFFFFFFFF
    assert _philox4x32_10((ones,) * 4, (ones, ones), constants) == (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)


@pytest.mark.skipif(NO_CUDA, reason="needs CUDA")
def test_cuda_graph_captures_and_replays():
    static_x = ember.zeros(4, device="cuda")
    static_x * 2 + 1  # warm-up outside the capture, as PyTorch asks
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g):
        static_y = static_x * 2 + 1
    for k in range(2):
        static_x.copy_(ember.arange(4.0, device="cuda") + k)
        g.replay()
        np.testing.assert_array_equal(static_y.cpu().numpy(), (np.arange(4.0) + k) * 2 + 1)
    assert isinstance(g.pool(), type(ember.cuda.graph_pool_handle()))
