"""Helpers for the conformance samples that several op modules declare."""
from __future__ import annotations


def unit_weights(make):
    """A ``make`` for weights in [-1, 1), as layer initialisations give: keeps half-precision sums representable."""
    return lambda *s, **kw: make(s, low=-1, high=1, **kw)
