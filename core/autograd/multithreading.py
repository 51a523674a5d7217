"""``set_multithreading_enabled``: PyTorch's switch for running backward on a worker thread per device.

Ember's engine runs every backward on the calling thread, one node after another, whatever the switch says;
the setting is kept (and restored on leaving a ``with`` block) so that programs that set it run unchanged and
can read it back with ``is_multithreading_enabled``.
"""
from __future__ import annotations

import functools
from typing import Callable

_enabled = True


def is_multithreading_enabled() -> bool:
    """The current setting (True unless ``set_multithreading_enabled(False)`` is in effect)."""
    return _enabled


class set_multithreading_enabled:
    """``set_multithreading_enabled(mode)``: sets the switch at once; as a ``with`` block or a decorator,
    restores the previous value on leaving."""

    def __init__(self, mode: bool) -> None:
        global _enabled
        if not isinstance(mode, bool):
            raise TypeError(f"set_multithreading_enabled: mode must be a bool, got {type(mode).__name__}")
        self.mode, self.prev = mode, _enabled
        _enabled = mode

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> None:
        global _enabled
        _enabled = self.prev

    def clone(self) -> "set_multithreading_enabled":
        return self.__class__(self.mode)

    def __call__(self, fn: Callable) -> Callable:
        global _enabled
        _enabled = self.prev  # as a decorator the switch applies only while fn runs

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper
