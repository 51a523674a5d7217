"""The transforms active now, innermost last: each ``vmap`` call and each forward-AD level is one, numbered in
the order they were entered, so that a tensor knows which transform it belongs to (``BatchedTensor._level``,
the tangent tables) and nested transforms tell theirs apart."""
from __future__ import annotations

import itertools
from contextlib import contextmanager
from typing import Callable, Iterator

_numbers = itertools.count(1)
active: list = []  # the modes of the transforms entered and not yet left, innermost last


@contextmanager
def entered(make_mode: Callable) -> Iterator:
    """Enter a transform: ``make_mode(level)`` gives its dispatch mode, pushed for the block."""
    mode = make_mode(next(_numbers))
    active.append(mode)
    try:
        with mode:
            yield mode
    finally:
        active.remove(mode)


def vmap_sizes() -> dict[int, int]:
    """Level -> batch size of every vmap being run now."""
    return {mode.level: mode.size for mode in active if hasattr(mode, "size")}


def forward_active() -> bool:
    """Whether a forward-AD level is entered (ember.func.jvp, ember.autograd.forward_ad.dual_level)."""
    return any(not hasattr(mode, "size") for mode in active)
