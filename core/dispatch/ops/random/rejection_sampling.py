"""Hoermann's transformed rejection (1993): the proposal loop that the binomial (BTRS) and Poisson (PTRS)
samplers share; each sampler brings its hat's constants and its acceptance test."""
from __future__ import annotations

from typing import Callable

from ..namespace import F


def transformed_rejection(a, b, c, pending, accept: Callable, generator):
    """One accepted proposal per ``pending`` element (zero elsewhere), in ``a``'s shape and dtype.

    Each round draws two uniforms per element, ``u - 1/2`` then ``v``, and proposes
    ``k = floor((2 a / us + b) u + c)`` with ``us = 1/2 - |u|``; ``accept(k, us, v)`` says where to keep it.
    Rejected elements draw again until none is pending.
    """
    result = F.zeros_like(a)
    size, dtype, device = tuple(a.shape), a.dtype, a.device
    while F.any(pending).item():
        u = F.sub(F.rand_uniform(size, generator=generator, dtype=dtype, device=device), 0.5)
        v = F.rand_uniform(size, generator=generator, dtype=dtype, device=device)
        us = F.sub(0.5, F.abs(u))
        k = F.floor(F.add(F.mul(F.add(F.div(F.mul(a, 2.0), us), b), u), c))
        accepted = F.logical_and(pending, accept(k, us, v))
        result = F.where(accepted, k, result)
        pending = F.logical_and(pending, F.logical_not(accepted))
    return result
