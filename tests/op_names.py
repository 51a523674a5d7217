"""A dispatch mode that records which ops a piece of code calls: the fast-path tests assert on those names."""
from ember.utils._python_dispatch import TorchDispatchMode


class OpNames(TorchDispatchMode):
    """Records the name of every op called inside it, in order."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.name())
        return func(*args, **(kwargs or {}))
