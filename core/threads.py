"""``ember.set_num_threads`` / ``get_num_threads``: the threads Ember's CPU kernels compute with.

Ember's CPU work runs in two thread pools: the BLAS library under NumPy (matrix products, reached through
threadpoolctl) and numba's pool (the fused and parallel loops of the CPU backend). Setting the number
sets both, as PyTorch's setting governs its intra-op pool.
"""
from __future__ import annotations

_requested: list[int] = []


def set_num_threads(int: int, /) -> None:  # noqa: A002  (PyTorch's parameter name, positional only)
    """Use ``int`` threads for intra-op parallelism on the CPU (numba's pool is capped at its own maximum,
    ``NUMBA_NUM_THREADS``)."""
    num = int
    if not isinstance(num, type(1)) or isinstance(num, bool) or num < 1:
        raise ValueError(f"set_num_threads: expected a positive integer number of threads, got {num!r}")
    import numba
    import threadpoolctl
    threadpoolctl.threadpool_limits(limits=num)  # applies now and stays until changed again
    numba.set_num_threads(min(num, numba.config.NUMBA_NUM_THREADS))
    _requested[:] = [num]


def get_num_threads() -> int:
    """The number of threads set by ``set_num_threads``; before any call, the size of numba's pool (which
    numba sizes to the machine's cores, like PyTorch's default)."""
    if _requested:
        return _requested[0]
    import numba
    return numba.get_num_threads()
