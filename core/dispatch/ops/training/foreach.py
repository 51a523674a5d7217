"""Multi-tensor ops of gradient clipping: PyTorch's ``_foreach_norm``, ``_foreach_mul_``, ``_foreach_clamp_min_``
and ``_foreach_clamp_max_``, for ``ember.nn.utils.clip_grad_norm_`` and ``clip_grad_value_``.

Clipping the gradients of a model with forty parameters as per-tensor ops costs a hundred and more small
dispatches per training step; each of these does one kind of work for a whole list in one call, which a
backend runs as one loop. The three in-place ones write into the tensors of ``self`` and return None, as the
multi-tensor optimizer steps do; tensors of several floating dtypes may share a list (each keeps its own).
"""
from __future__ import annotations

import math

import numpy as np

from ...schema import Sample, defop
from ...schema.dtypes import as_dtype
from ...schema.errors import ArgumentError, DtypeError, describe
from ...schema.meta import numel, require, shape
from ..namespace import F


def _listed(value) -> tuple:
    """The tensors of a ``Tensor[]`` argument (the conformance suite asks promotion rules about one stand-in)."""
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


def _floating(op_name: str, tensors) -> None:
    for t in tensors:
        if not hasattr(t, "_dtype"):
            raise TypeError(f"{op_name}(): self must hold Tensors, not {type(t).__name__}")
        if not t._dtype.is_floating_point:
            raise DtypeError(f"{op_name}: expected floating point tensors, got {describe(t)}")


# -- _foreach_norm ------------------------------------------------------------------------------------

def _norm_promotion(rt, op, args):
    """Each norm in its tensor's dtype, or in ``dtype`` where one is asked for."""
    tensors = _listed(args["self"])
    _floating(op.name, tensors)
    wanted = args.get("dtype")
    if wanted is not None:
        wanted = as_dtype(wanted)
        if not wanted.is_floating_point:
            raise DtypeError(f"{op.name}: dtype must be a floating point dtype, got {wanted.name}")
    return None, tuple(wanted or t._dtype for t in tensors)


def _norm_normalize(op, args) -> None:
    ord = args["ord"]
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise ArgumentError(f"{op.name}: ord must be a number, got {ord!r}")
    args["ord"] = float(ord)


def _norm_meta(tensors, ord=2.0, dtype=None):
    if math.isinf(ord):
        for t in tensors:
            require(numel(shape(t)) > 0, "_foreach_norm", "cannot compute the infinity norm on an empty tensor "
                    "because the operation does not have an identity", t)
    return tuple(() for _ in tensors)


def _foreach_norm(tensors, ord=2.0, dtype=None):
    return tuple(F.norm(t, ord, None, False, dtype=dtype) for t in tensors)


def _norm_reference(tensors, ord=2.0, dtype=None):
    norms = []
    for t in tensors:
        x = np.abs(np.asarray(t, np.float64).reshape(-1))
        if ord == math.inf:
            norms.append(x.max(initial=0.0))
        elif ord == -math.inf:
            norms.append(x.min(initial=math.inf))
        elif ord == 0:
            norms.append(float(np.count_nonzero(x)))
        else:
            norms.append(np.sum(x ** ord) ** (1.0 / ord))
    return tuple(np.float64(n) for n in norms)


def _norm_samples(make, dtype):
    yield Sample(([make((3, 4)), make((0, 2)), make((5,)), make(())],), note="2-norms of several shapes, one empty")
    yield Sample(([make((4, 3), noncontiguous=True), make((2,))], math.inf), note="max norms, non-contiguous")
    yield Sample(([make((6,)), make((2, 2))], 1), note="1-norms")
    yield Sample(([make((3, 2)), make((4,))], 3.0), note="order 3")
    yield Sample(([make((3,))], 2), {"dtype": "float64"}, note="asked for in float64")


defop("_foreach_norm(Tensor[] self, Scalar ord=2, *, dtype? dtype=None)", "reduction", kind="composite",
      promotion=_norm_promotion, dtypes="float", normalize=_norm_normalize,
      meta=_norm_meta, composite=_foreach_norm,
      reference=_norm_reference, samples=_norm_samples, method=False, differentiable=False, outputs=("*",),
      tolerances={"float16": (2e-3, 1e-2), "bfloat16": (1e-2, 5e-2)},
      doc="each tensor's vector ord-norm (of all its elements) as a 0-d tensor, as linalg.vector_norm; half "
          "precision too")


# -- the in-place ones ----------------------------------------------------------------------------------

def _in_place_promotion(rt, op, args):
    """No compute dtype: every tensor of ``self`` is written in its own dtype."""
    tensors = _listed(args["self"])
    _floating(op.name, tensors)
    return None, tuple(t._dtype for t in tensors)


def _in_place_meta(tensors, *rest):
    return tuple(shape(t) for t in tensors)


def _mul_meta(tensors, other):
    if hasattr(other, "_dtype"):
        require(numel(shape(other)) == 1, "_foreach_mul_", "other must be a number or a one-element tensor",
                other)
    return _in_place_meta(tensors)


def _foreach_mul_(tensors, other):
    if hasattr(other, "_dtype") and shape(other) != ():
        other = F.reshape(other, ())
    for t in tensors:
        F.copy_(t, F.mul(t, other))


def _mul_reference(tensors, other):
    factor = np.asarray(other, np.float64).reshape(())
    return tuple(np.asarray(t) * factor for t in tensors)


def _foreach_clamp_min_(tensors, scalar):
    for t in tensors:
        F.copy_(t, F.clamp(t, scalar, None))


def _foreach_clamp_max_(tensors, scalar):
    for t in tensors:
        F.copy_(t, F.clamp(t, None, scalar))


def _each_of(make, noncontiguous: bool = False) -> list:
    return [make((3, 4), noncontiguous=noncontiguous), make((5,), noncontiguous=noncontiguous), make(())]


def _mul_samples(make, dtype):
    yield Sample((_each_of(make), make((), low=0.1, high=1.0)), note="by a 0-d tensor")
    yield Sample((_each_of(make, noncontiguous=True), make((1,), dtype="float64", low=0.1, high=1.0)),
                 note="non-contiguous, by a float64 tensor of shape (1,)")
    yield Sample(([make((2, 3)), make((0,))], 0.5), note="by a number, an empty tensor")


def _clamp_samples(make, dtype):
    yield Sample((_each_of(make), 1.5), note="a bound inside the values")
    yield Sample((_each_of(make, noncontiguous=True), -0.5), note="non-contiguous")
    if dtype.is_floating_point:
        yield Sample(([make.specials((3, 4)), make((2,))], 0.25), note="nan, inf and signed zeros")


_IN_PLACE = dict(kind="composite", promotion=_in_place_promotion, dtypes="float", method=False, differentiable=False,
                 mutates=("self",), outputs=("*",))

defop("_foreach_mul_(Tensor[] self, Tensor other)", "elementwise", meta=_mul_meta, composite=_foreach_mul_,
      reference=_mul_reference, samples=_mul_samples, tolerances={"float16": (1e-3, 1e-3), "bfloat16": (8e-3, 8e-3)},
      **_IN_PLACE, doc="each tensor times other (a number or one-element tensor), in place, in its own dtype")
defop("_foreach_clamp_min_(Tensor[] self, Scalar scalar)", "elementwise", meta=_in_place_meta,
      composite=_foreach_clamp_min_, samples=_clamp_samples, **_IN_PLACE,
      reference=lambda tensors, scalar: tuple(np.maximum(np.asarray(t), scalar) for t in tensors),
      doc="each tensor clamped from below at scalar, in place (NaN stays NaN)")
defop("_foreach_clamp_max_(Tensor[] self, Scalar scalar)", "elementwise", meta=_in_place_meta,
      composite=_foreach_clamp_max_, samples=_clamp_samples, **_IN_PLACE,
      reference=lambda tensors, scalar: tuple(np.minimum(np.asarray(t), scalar) for t in tensors),
      doc="each tensor clamped from above at scalar, in place (NaN stays NaN)")
