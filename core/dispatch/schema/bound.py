"""An op call's bound arguments, read and written by parameter name.

Declaration hooks (``normalize``, promotion rules) receive one of these instead of the positional list the
dispatcher keeps, so adding a parameter to a signature cannot silently shift what a hook reads.
"""
from __future__ import annotations

from typing import Any


class BoundArgs:
    """A name-keyed window onto the dispatcher's list of bound values; writes go through to the list."""

    __slots__ = ("op", "values")
    __iter__ = None  # no unpacking by position: a new parameter would shift what a hook reads

    def __init__(self, op, values: list) -> None:
        self.op = op
        self.values = values

    def _position(self, name: str) -> int:
        if not isinstance(name, str):
            raise TypeError(f"{self.op.name}: a declaration hook reads arguments by parameter name, not by "
                            f"position (got {name!r}; the parameters are {', '.join(self.op.param_index)})")
        try:
            return self.op.param_index[name]
        except KeyError:
            raise KeyError(f"{self.op.name} has no parameter {name!r} "
                           f"(it has {', '.join(self.op.param_index)})") from None

    def __getitem__(self, name: str) -> Any:
        return self.values[self._position(name)]

    def __setitem__(self, name: str, value: Any) -> None:
        self.values[self._position(name)] = value

    def __contains__(self, name: str) -> bool:
        return name in self.op.param_index

    @property
    def first_input(self) -> Any:
        """The value of the op's first parameter, whatever its name (input, self, tensor): for hooks shared by
        ops that name it differently."""
        return self.values[0]

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self.op.param_index else default

    def items(self):
        """(name, value) pairs in signature order."""
        return ((p.name, v) for p, v in zip(self.op.params, self.values))

    def __repr__(self) -> str:
        return f"BoundArgs({self.op.name}: {dict(self.items())})"
