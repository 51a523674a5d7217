"""PyTorch's module paths for the lazy layers and uninitialized parameters.

PyTorch defines ``LazyLinear`` in ``torch.nn.modules.linear``, ``LazyConv2d`` in ``...conv`` and so on; Ember
keeps them together in ``ember.nn.modules.lazy``, which builds on those modules, so they cannot import it
back at load time. Each of them instead finds its lazy names there when first asked (a module ``__getattr__``).
"""
from __future__ import annotations

from typing import Callable


def lazy_attributes(module_name: str, names: tuple[str, ...]) -> Callable[[str], object]:
    """A module-level ``__getattr__`` that looks ``names`` up in ``ember.nn.modules.lazy``."""
    def __getattr__(name: str):
        if name in names:
            from .modules import lazy
            return getattr(lazy, name)
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
    return __getattr__
