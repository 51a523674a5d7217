"""Kernels for NumPy-compatible array libraries, built once per library: a helper, not a plugin.

The CPU backend (NumPy) and the CUDA backend (CuPy) compute with libraries that share one API, so
their kernels are one body of code: ``build_kernels(lib)`` closes every kernel over ``lib.xp`` and
the few hooks an :class:`ArrayLib` names (erf, scatter-add, strided views, the dtype table, ...),
and returns the ``Backend.kernels`` table, primitives plus composite overrides. Resolving the library
when the table is built keeps the per-call path what it would be with ``import numpy as np`` (no
lookup or branch per call), and the CPU conformance suite exercises the very code CUDA runs.

This package registers nothing and is not found through entry points: a backend plugin imports it,
builds its table and may replace entries with faster library-specific kernels (CUDA's fused ones).
"""
from __future__ import annotations

from typing import Callable

from . import (activations, attention, complex_views, conv, creation, decompositions, elementwise, fft, indexing,
               layers, linalg, losses, norm_backward, padding, pooling, random, recurrent, reduction, views)
from .elementwise import out_kernels
from .library import ArrayLib, strided_windows

_MODULES = (elementwise, reduction, views, creation, random, linalg, indexing, conv, pooling, activations, padding,
            layers, norm_backward, losses, decompositions, attention, recurrent, complex_views, fft)


def build_kernels(lib: ArrayLib) -> dict[str, Callable]:
    """Every shared kernel for ``lib``, by op name."""
    kernels: dict[str, Callable] = {}
    for module in _MODULES:
        table = module.build(lib)
        overlap = kernels.keys() & table.keys()
        assert not overlap, f"kernels defined twice: {overlap}"
        kernels.update(table)
    return kernels


__all__ = ["ArrayLib", "build_kernels", "out_kernels", "strided_windows"]
