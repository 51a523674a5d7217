"""An op call's bound arguments, read and written by parameter name.

Declaration hooks (``normalize``, promotion rules) receive one of these instead of the positional list the
dispatcher keeps, so adding a parameter to a signature cannot silently shift what a hook reads.
"""
from __future__ import annotations

from typing import Any


class BoundArgs:
    """A name-keyed window onto the dispatcher's list of bound values; writes go through to the list."""

    __slots__ = ("op", "values")

    def __init__(self, op, values: list) -> None:
        self.op = op
        self.values = values

    def _position(self, name: str) -> int:
        try:
            return self.op.param_index[name]
        except KeyError:
            raise KeyError(f"{self.op.name} has no parameter {name!r} "
                           f"(it has {', '.join(p.name for p in self.op.params)})") from None

    def __getitem__(self, name: str) -> Any:
        if not isinstance(name, str):
            return self.values[name]
        return self.values[self._position(name)]

    def __setitem__(self, name: str, value: Any) -> None:
        if not isinstance(name, str):
            self.values[name] = value
            return
        self.values[self._position(name)] = value

    def __contains__(self, name: str) -> bool:
        return name in self.op.param_index

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self.op.param_index else default

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self):
        return iter(self.values)

    def items(self):
        """(name, value) pairs in signature order."""
        return ((p.name, v) for p, v in zip(self.op.params, self.values))

    def __repr__(self) -> str:
        return f"BoundArgs({self.op.name}: {dict(self.items())})"
