"""Sizes that follow the dynamic axes: how an exported graph stays valid for other batch sizes and lengths.

A captured graph holds plain integers: ``x.view(B * T, C)`` is recorded as ``view(x, (128, 32))``. To find
which integers follow a dynamic axis, the exporter captures the model again with the dynamic axes at other
sizes and compares: an integer that moves with the axes is written as a ``SymbolicSize``, a small polynomial in
the axes' symbols (``batch * seq``, ``seq - 1``, ``3 * batch``), fitted to the captures and confirmed on
one more capture with every axis moved at once. The ONNX graph computes a ``SymbolicSize`` from the inputs' shapes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class SymbolicSize:
    """``sum(coef * prod(symbols))`` over ``terms``: a tuple of (symbols, coef) pairs; symbols is a sorted
    tuple of names (repeated for powers), ``()`` for the constant term."""
    terms: tuple

    @staticmethod
    def of(symbol: str) -> "SymbolicSize":
        return SymbolicSize(((((symbol,), 1),)))

    def evaluate(self, sizes: dict) -> int:
        return sum(coef * math.prod(sizes[s] for s in symbols) for symbols, coef in self.terms)

    @property
    def symbols(self) -> set:
        return {s for symbols, _ in self.terms for s in symbols}

    def __str__(self) -> str:
        parts = []
        for symbols, coef in self.terms:
            product = "*".join(symbols)
            if not product:
                parts.append(str(coef))
            elif coef == 1:
                parts.append(product)
            else:
                parts.append(f"{coef}*{product}")
        return " + ".join(parts).replace("+ -", "- ") or "0"

    __repr__ = __str__


@dataclass(frozen=True)
class Unfitted:
    """A size that follows the dynamic axes in no form ``fit`` knows; ``name`` labels it in the graph."""
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass
class Probe:
    """One capture: the size of every symbol in it."""
    sizes: dict


class NotFitted(ValueError):
    """An integer that changes with the dynamic axes in a way no ``SymbolicSize`` of the fitted family describes."""


def fit(values: list, probes: list) -> int | SymbolicSize:
    """The integer or ``SymbolicSize`` that takes ``values[i]`` at ``probes[i]``.

    ``probes[0]`` is the export's own sizes, ``probes[1:-1]`` move one symbol each, ``probes[-1]`` moves all
    of them; the last one only confirms the fit. Families tried: constant; ``a*s + b`` in one symbol; a
    monomial ``c * s1 * s2 ...`` over several.
    """
    base, single = values[0], values[1:-1]
    if all(v == base for v in values):
        return base
    moved = [i for i, v in enumerate(single) if v != base]
    names = [next(iter(set(p.sizes) - _unchanged(probes[0], p))) for p in probes[1:-1]]
    candidate = None
    if len(moved) == 1:
        i = moved[0]
        s = names[i]
        slope = Fraction(single[i] - base, probes[i + 1].sizes[s] - probes[0].sizes[s])
        offset = base - slope * probes[0].sizes[s]
        if slope.denominator == 1 and offset.denominator == 1:
            terms = ((((s,), int(slope)),) + ((((), int(offset)),) if offset else ()))
            candidate = SymbolicSize(terms)
    elif moved:
        symbols = tuple(sorted(names[i] for i in moved))
        coef = Fraction(base, math.prod(probes[0].sizes[s] for s in symbols))
        if coef.denominator == 1:
            candidate = SymbolicSize(((symbols, int(coef)),))
    if candidate is None or any(candidate.evaluate(p.sizes) != v for p, v in zip(probes, values)):
        raise NotFitted(f"values {values} at sizes {[p.sizes for p in probes]}")
    return candidate


def _unchanged(base: Probe, probe: Probe) -> set:
    return {s for s in base.sizes if probe.sizes[s] == base.sizes[s]}


def fit_tree(trees: list, probes: list, where: str):
    """``fit`` applied to every integer of parallel nested tuples/lists (one tree per probe); other leaves must
    be equal in all of them. ``where`` names the place for errors."""
    first = trees[0]
    if isinstance(first, (list, tuple)) and not hasattr(first, "_fields"):
        if any(not isinstance(t, (list, tuple)) or len(t) != len(first) for t in trees):
            raise NotFitted(f"{where}: {trees}")
        return type(first)(fit_tree([t[i] for t in trees], probes, where) for i in range(len(first)))
    if isinstance(first, int) and not isinstance(first, bool) and all(
            isinstance(t, int) and not isinstance(t, bool) for t in trees):
        return fit(trees, probes)
    if any(not _same(t, first) for t in trees[1:]):
        raise NotFitted(f"{where}: {trees}")
    return first


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001  values without a plain equality (arrays): compare by identity
        return a is b


def probe_sizes(size: int, moves: int, low: int = 2, high: int | None = None) -> list | None:
    """``moves`` other sizes for an axis now of ``size``, within ``[low, high]``: smaller ones where possible
    (models cap lengths at a block size), larger ones otherwise; None where the range holds too few."""
    smaller = [n for n in range(size - 1, low - 1, -1)][:moves]
    larger = [n for n in range(size + 1, size + 1 + moves) if high is None or n <= high]
    picks = (smaller + larger)[:moves] if size > 2 else (larger + smaller)[:moves]
    return picks if len(picks) == moves else None


__all__ = ["SymbolicSize", "Unfitted", "Probe", "NotFitted", "fit", "fit_tree", "probe_sizes"]
