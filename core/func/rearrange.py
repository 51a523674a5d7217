"""``ember.func.rearrange``: einops' ``rearrange`` patterns (``"b (h w) c -> b c h w"``), as torch.func has them.

A pattern names each input dim (a group in parentheses is one dim made of several axes, ``1`` or ``()`` a dim
of size 1, ``...`` the dims not named) and says, after ``->``, how the same axes make the output's dims. The
input is reshaped to its single axes, permuted to the output's order and reshaped to the output's groups.
"""
from __future__ import annotations

import math
import re

from ..dispatch.ops import F
from ..tensor import Tensor

_TOKEN = re.compile(r"\.\.\.|\(|\)|[A-Za-z_][A-Za-z0-9_]*|\d+|\S")
_ELLIPSIS = "…"  # "..." inside parentheses: its axes make one dim
_DIMS = "…dims"  # "..." on its own: its axes are dims of their own


def _groups(side: str, pattern: str) -> list[list[str]]:
    """One list of axis names per dim of a pattern's side (``...`` as one group of its own)."""
    groups: list[list[str]] = []
    current: list[str] | None = None
    for token in _TOKEN.findall(side):
        if token == "(":
            if current is not None:
                raise ValueError(f"rearrange: nested parentheses in {pattern!r}")
            current = []
        elif token == ")":
            if current is None:
                raise ValueError(f"rearrange: unbalanced parentheses in {pattern!r}")
            groups.append(current)
            current = None
        elif token == "...":
            (current if current is not None else groups).append(_ELLIPSIS if current is not None else [_DIMS])
        elif token.isdigit():
            if token != "1":
                raise ValueError(f"rearrange: only 1 may stand for a dim by its size, got {token} in {pattern!r}")
            if current is None:
                groups.append([])
        elif token.isidentifier():
            (current.append(token) if current is not None else groups.append([token]))
        else:
            raise ValueError(f"rearrange: unexpected {token!r} in {pattern!r}")
    if current is not None:
        raise ValueError(f"rearrange: unbalanced parentheses in {pattern!r}")
    return groups


def _expand_ellipsis(groups: list[list[str]], count: int) -> list[list[str]]:
    """``...`` as ``count`` axes of its own (a top-level ``...``: as many dims)."""
    names = [f"{_ELLIPSIS}{i}" for i in range(count)]
    out = []
    for group in groups:
        if group == [_DIMS]:
            out.extend([name] for name in names)
        else:
            out.append([a for name in group for a in (names if name == _ELLIPSIS else [name])])
    return out


def rearrange(tensor, pattern: str, **axes_lengths: int) -> Tensor:
    """``tensor`` (or a list of tensors, stacked first) rearranged by ``pattern`` (see the module docstring)."""
    if isinstance(tensor, (list, tuple)):
        tensor = F.stack(list(tensor))
    left, arrow, right = pattern.partition("->")
    if not arrow:
        raise ValueError(f"rearrange: the pattern needs '->', got {pattern!r}")
    lhs, rhs = _groups(left, pattern), _groups(right, pattern)
    named = [g for g in lhs if g != [_DIMS]]
    if sum(g == [_DIMS] or _ELLIPSIS in g for g in lhs) > 1:
        raise ValueError(f"rearrange: '...' may appear once on each side of {pattern!r}")
    has_ellipsis = any(g == [_DIMS] for g in lhs)
    rest = tensor.dim() - len(named)
    if rest < 0 or (rest and not has_ellipsis):
        raise ValueError(f"rearrange: the pattern's left side {left.strip()!r} names {len(named)} dims, but the "
                         f"tensor has {tensor.dim()} (shape {tuple(tensor.shape)})")
    lhs, rhs = _expand_ellipsis(lhs, rest), _expand_ellipsis(rhs, rest)
    axes_in = [a for g in lhs for a in g]
    axes_out = [a for g in rhs for a in g]
    if len(set(axes_in)) != len(axes_in) or sorted(axes_in) != sorted(axes_out):
        raise ValueError(f"rearrange: both sides of {pattern!r} must name the same axes, each once "
                         f"(left {sorted(set(axes_in))}, right {sorted(set(axes_out))})")
    sizes = dict(axes_lengths)
    for group, size in zip(lhs, tensor.shape):
        unknown = [a for a in group if a not in sizes]
        known = math.prod(sizes[a] for a in group if a in sizes)
        if len(unknown) > 1:
            raise ValueError(f"rearrange: cannot tell the sizes of {unknown} in a dim of size {size}; give them")
        if unknown:
            if known == 0 or size % known:
                raise ValueError(f"rearrange: a dim of size {size} cannot be split by {known}")
            sizes[unknown[0]] = size // known
        elif known != size:
            raise ValueError(f"rearrange: the axes {group or ['1']} make {known}, but the dim has size {size}")
    single = F.reshape(tensor, tuple(sizes[a] for a in axes_in))
    order = [axes_in.index(a) for a in axes_out]
    if order != list(range(len(order))):
        single = F.permute(single, order)
    return F.reshape(single, tuple(math.prod(sizes[a] for a in g) for g in rhs))
