"""Is a name really there, or only a placeholder that raises ``NotImplementedError``?

A function is a *stub* when its bytecode is one straight line (no branch, loop or return)
that ends by raising and loads ``NotImplementedError``: every call raises it. That covers a
body that is only ``raise NotImplementedError(...)`` (with or without a docstring or a
formatted message) and leaves out a real function that raises it on one branch only. The
code is inspected, never run, so a report cannot trigger side effects.
"""
from __future__ import annotations

import dis
import inspect
from types import CodeType
from typing import Any

_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs) | frozenset(getattr(dis, "hasjump", ()))


def code_always_raises_not_implemented(code: CodeType) -> bool:
    instructions = [i for i in dis.get_instructions(code) if i.opname not in ("CACHE", "NOP")]
    if not instructions or instructions[-1].opname != "RAISE_VARARGS" or instructions[-1].arg == 0:
        return False
    if any(i.opcode in _JUMPS or i.opname.startswith(("RETURN", "YIELD")) for i in instructions):
        return False
    return any(i.opname in ("LOAD_GLOBAL", "LOAD_NAME") and i.argval == "NotImplementedError"
               for i in instructions)


def _code_of(obj: Any) -> CodeType | None:
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, property):
        obj = obj.fget
    obj = inspect.unwrap(obj) if callable(obj) else obj
    obj = getattr(obj, "__func__", obj)  # bound methods
    code = getattr(obj, "__code__", None)
    return code if isinstance(code, CodeType) else None


def is_stub(obj: Any) -> bool:
    """True for a function, method or property whose every call raises NotImplementedError."""
    code = _code_of(obj)
    return code is not None and code_always_raises_not_implemented(code)


def stubbed_members(cls: type, reference: Any) -> list[str]:
    """Members of ``cls`` that are stubs where ``reference`` (PyTorch's class) has a real member.

    PyTorch's own abstract methods (``Module.forward``, ``Optimizer.step``) raise
    NotImplementedError too; a class that inherits such a method unchanged is as complete
    as PyTorch's, so only members PyTorch implements count against it.
    """
    found = []
    for name in dir(cls):
        if name.startswith("__") and name != "__init__":
            continue
        try:
            ours, theirs = inspect.getattr_static(cls, name), inspect.getattr_static(reference, name)
        except AttributeError:
            continue
        if is_stub(ours) and not is_stub(theirs):
            found.append(name)
    return found
