"""Loaded containers are plain data: no attribute a file sets on a dict can shadow the dict's own methods.

``nn.Module.state_dict()`` keeps version information in an OrderedDict's ``_metadata`` attribute, and PyTorch
restores a pickled OrderedDict's attributes; Ember restores them too, but refuses a name such as ``items``,
``keys`` or ``get`` that would hide a method (or a dunder), so code iterating a loaded state dict gets dict
behaviour, whatever the file says.
"""
from __future__ import annotations

from .errors import CheckpointError


def shadowing(kind: type, names) -> list[str]:
    """The attribute names that would hide a method of ``kind``, or are dunders."""
    return [name for name in names
            if not isinstance(name, str) or name.startswith("__") or callable(getattr(kind, name, None))]


def check_attributes(kind: type, names, where: str) -> None:
    bad = shadowing(kind, names)
    if bad:
        raise CheckpointError(f"the {kind.__name__} at {where} carries attributes {bad!r}, which would shadow its "
                              f"own methods after loading; a loaded container must be plain data")


def check_plain(obj, what: str) -> None:
    """Walk the containers of an unpickled object tree (iteratively: pickles nest deeper than the stack) and
    refuse any dict subclass instance whose attributes shadow its methods."""
    seen: set[int] = set()
    stack = [obj]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, dict):
            attributes = getattr(item, "__dict__", None)
            if attributes:
                check_attributes(type(item), attributes, what)
                stack.extend(attributes.values())
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
