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
