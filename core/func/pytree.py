"""Nested containers of tensors (tuples, lists, dicts, named tuples) as flat lists and back: how the function
transforms walk a function's inputs and outputs, as ``torch.utils._pytree`` does for torch.func."""
from __future__ import annotations


class TreeSpec:
    """The shape of a nested container: its type, its keys (dicts) and its children's specs; a leaf has none."""

    __slots__ = ("kind", "keys", "children")

    def __init__(self, kind, keys=None, children=()) -> None:
        self.kind, self.keys, self.children = kind, keys, tuple(children)

    @property
    def is_leaf(self) -> bool:
        return self.kind is None

    @property
    def num_leaves(self) -> int:
        return 1 if self.is_leaf else sum(child.num_leaves for child in self.children)

    def __eq__(self, other) -> bool:
        return (isinstance(other, TreeSpec) and self.kind is other.kind and self.keys == other.keys
                and self.children == other.children)

    def __repr__(self) -> str:
        if self.is_leaf:
            return "*"
        return f"{self.kind.__name__}({', '.join(map(repr, self.children))})"


LEAF = TreeSpec(None)


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def tree_flatten(tree) -> tuple[list, TreeSpec]:
    """The leaves of ``tree`` in order, and its spec."""
    leaves: list = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree, leaves: list) -> TreeSpec:
    if isinstance(tree, (tuple, list)):
        return TreeSpec(type(tree), None, [_flatten(x, leaves) for x in tree])
    if isinstance(tree, dict):
        keys = list(tree)
        return TreeSpec(type(tree), keys, [_flatten(tree[k], leaves) for k in keys])
    leaves.append(tree)
    return LEAF


def tree_unflatten(leaves, spec: TreeSpec):
    """The container of ``spec`` holding ``leaves``."""
    it = iter(leaves)
    return _build(spec, it)


def _build(spec: TreeSpec, it):
    if spec.is_leaf:
        return next(it)
    items = [_build(child, it) for child in spec.children]
    if spec.keys is not None:
        return spec.kind(zip(spec.keys, items))
    if spec.kind is tuple or spec.kind is list:
        return spec.kind(items)
    if issubclass(spec.kind, tuple) and hasattr(spec.kind, "_fields"):
        return spec.kind(*items)
    return spec.kind(items)


def broadcast_prefix(prefix, tree, name: str = "in_dims") -> list:
    """One value of ``prefix`` per leaf of ``tree``: ``prefix`` is a tree whose leaves stand for whole
    subtrees of ``tree`` (``in_dims=(0, None)`` for ``(x, {"a": y, "b": z})``)."""
    out: list = []
    _broadcast(prefix, tree, out, name)
    return out


def _broadcast(prefix, tree, out: list, name: str) -> None:
    if not isinstance(prefix, (tuple, list, dict)):
        out.extend([prefix] * tree_flatten(tree)[1].num_leaves)
        return
    if isinstance(prefix, dict):
        if not isinstance(tree, dict) or set(prefix) != set(tree):
            raise ValueError(f"vmap: {name} {prefix!r} does not match the structure of the inputs it applies to")
        for key in tree:
            _broadcast(prefix[key], tree[key], out, name)
        return
    if not isinstance(tree, (tuple, list)) or len(prefix) != len(tree):
        raise ValueError(f"vmap: {name} {prefix!r} does not match the structure of the inputs it applies to "
                         f"({type(tree).__name__} of {len(tree) if isinstance(tree, (tuple, list)) else 1})")
    for p, t in zip(prefix, tree):
        _broadcast(p, t, out, name)


__all__ = ["TreeSpec", "tree_flatten", "tree_unflatten", "broadcast_prefix"]
