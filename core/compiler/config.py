"""Settings of ``ember.compile``, under PyTorch's names (``torch._dynamo.config``)."""
from __future__ import annotations

#: Captures one compiled function may make (one per distinct guard key) before it runs eagerly instead.
recompile_limit: int = 8
#: PyTorch's older name for ``recompile_limit``; either may be set, the smaller applies.
cache_size_limit: int = 8
#: Run the function eagerly (with a logged warning) when capturing raises, instead of raising.
suppress_errors: bool = False


def limit() -> int:
    return min(recompile_limit, cache_size_limit)


#: ``mode="reduce-overhead"``: ordinary runs of a program (on a side stream) before it is captured as a device
#: graph, so that lazily made kernels, handles and workspaces exist before capture (PyTorch warms up once).
cudagraph_warmups: int = 1
#: CUDA's stream capture mode for those captures: "global", "thread_local" or "relaxed". Relaxed, because a
#: CuPy memory pool that must grow while capturing calls cudaMalloc, which the other modes refuse.
cudagraph_capture_error_mode: str = "relaxed"
