"""``ember.sparse.check_sparse_tensor_invariants``: whether constructors check index values.

Ember checks by default, unlike PyTorch: a kernel handed an index outside the size would read outside
its buffers on a device, and Ember never crashes or answers wrongly on bad input. The checks read the
indices' extremes to the host (one synchronization per constructor call). ``check_invariants=False`` on a
constructor, or this context manager with ``enable=False``, skips them for indices known to be valid.
"""
from __future__ import annotations

_enabled = [True]


class check_sparse_tensor_invariants:
    """As a context manager (or decorator), switch index-value checks of sparse constructors on or off
    for its block; ``enable()``/``disable()``/``is_enabled()`` set and read the global default."""

    @staticmethod
    def is_enabled() -> bool:
        return _enabled[0]

    @staticmethod
    def enable() -> None:
        _enabled[0] = True

    @staticmethod
    def disable() -> None:
        _enabled[0] = False

    def __init__(self, enable: bool = True) -> None:
        self.state = enable
        self.saved: list[bool] = []

    def __enter__(self) -> "check_sparse_tensor_invariants":
        self.saved.append(_enabled[0])
        _enabled[0] = self.state
        return self

    def __exit__(self, *exc) -> None:
        _enabled[0] = self.saved.pop()

    def __call__(self, function):
        def checked(*args, **kwargs):
            with check_sparse_tensor_invariants(self.state):
                return function(*args, **kwargs)
        checked.__name__ = getattr(function, "__name__", "checked")
        checked.__doc__ = function.__doc__
        return checked


def wanted(check_invariants: bool | None) -> bool:
    """A constructor's ``check_invariants=`` argument, or the global default where it is None."""
    return _enabled[0] if check_invariants is None else bool(check_invariants)
