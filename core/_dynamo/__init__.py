"""``ember._dynamo``: the names programs reach under ``torch._dynamo`` (``reset``, ``explain``, ``config``,
``disable``), all served by ``ember.compiler``."""
from __future__ import annotations

from ..compiler import config, is_compiling
from ..compiler.api import disable, reset
from ..compiler.explain import explain

__all__ = ["config", "disable", "explain", "is_compiling", "reset"]
