"""Shared pieces of the complex-capable elementwise ops: conjugation that is free on real values, arithmetic with a
real number that keeps each part's special values (composites), and PyTorch's own refusals of complex operands.

PyTorch's derivatives of complex functions are conjugate Wirtinger derivatives: for holomorphic f the gradient is
``grad * conj(f'(z))``. Real tensors are their own conjugates, and the CPU hot path is measured, so ``conj``
costs one dtype test there and no op call.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from ...schema.errors import UnsupportedDtypeError, describe_all
from ..namespace import F


def is_complex(value: Any) -> bool:
    """A complex tensor or a Python complex number."""
    dtype = getattr(value, "_dtype", None)
    return value.__class__ is complex if dtype is None else dtype.kind == "complex"


def conj(value: Any) -> Any:
    """The complex conjugate of a tensor or Python number; real values (and None) are returned as they are."""
    dtype = getattr(value, "_dtype", None)
    if dtype is None:
        return value.conjugate() if value.__class__ is complex else value
    return F.conj_physical(value) if dtype.kind == "complex" else value


def times_i(z, sign: int = 1):
    """i z (sign 1) or -i z (sign -1), exactly: a product with 1j would make NaN of an infinite part's zero."""
    return F.complex(F.mul(F.imag(z), -sign), F.mul(F.real(z), sign))


def shifted(z, c: float):
    """z + c for a real number c, the imaginary part (and the sign of its zero, across a branch cut) untouched."""
    return F.complex(F.add(F.real(z), c), F.imag(z))


def scaled(z, c: float):
    """z * c for a real number c, part by part: (inf + 0j) * 0.5 stays inf + 0j."""
    return F.complex(F.mul(F.real(z), c), F.mul(F.imag(z), c))


def or_complex(complex_composite: Callable) -> Callable:
    """A decorator of a real composite (a formula's, say): calls with a complex operand run ``complex_composite``
    instead, where the real one's comparisons and extrema have no complex meaning. A wrapper, as ``floating`` and
    ``in_opmath`` are: the composite underneath is still the formula's (``inspect.unwrap``)."""
    def decorate(real_composite: Callable) -> Callable:
        @functools.wraps(real_composite)
        def composite(*args, **kwargs):
            if any(is_complex(a) for a in args):
                return complex_composite(*args, **kwargs)
            return real_composite(*args, **kwargs)
        return composite
    return decorate


def refusing_complex(rule: Callable, sentence: str) -> Callable:
    """``rule`` (a promotion rule) that first refuses complex operands with PyTorch's own sentence for the op
    ("maximum not implemented for complex tensors."), where PyTorch has one instead of the generic refusal."""
    def promotion(rt, op, args):
        if rt is not None and rt.kind == "complex":
            operands = [args[p.name] for p in op.params if p.is_tensor]
            raise UnsupportedDtypeError(f"{op.name}: {sentence} ({describe_all(operands)})")
        return rule(rt, op, args)
    promotion.__name__ = f"{getattr(rule, '__name__', 'rule')}_refusing_complex"
    return promotion


__all__ = ["conj", "is_complex", "or_complex", "refusing_complex", "scaled", "shifted", "times_i"]
