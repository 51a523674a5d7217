"""Gradient-scaling ops for ``ember.amp.GradScaler``: the inf/nan check with the unscale, and the scale update.

PyTorch declares both in place (``_amp_foreach_non_finite_check_and_unscale_``, ``_amp_update_scale_``).
Ember's schema lets an op write only into its first input, so these are functional: they return the
unscaled gradients with a found-inf flag, and the new scale with the new growth tracker; the scaler copies
the gradients back into ``p.grad`` and rebinds its state. Both stay on the device, so a training step reads
one number to the host per device (the flag, in ``GradScaler.step``), not one per parameter.
"""
from __future__ import annotations

import numpy as np

from ...schema.dtypes import float32
from ...schema.errors import DtypeError, describe
from ...schema.meta import numel, require, shape
from ...schema import Sample, defop
from ..namespace import F

_UNSCALE = "_amp_foreach_non_finite_check_and_unscale"
_UPDATE = "_amp_update_scale"


def _each(value) -> tuple:
    """The tensors of a ``Tensor[]`` argument (the conformance suite asks promotion rules about one stand-in)."""
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


def _require_floating(op_name: str, what: str, tensors) -> None:
    for t in tensors:
        if not hasattr(t, "_dtype"):
            raise TypeError(f"{op_name}(): {what} must be a Tensor, not {type(t).__name__}")
        if not t._dtype.is_floating_point:
            raise DtypeError(f"{op_name}: {what} must be floating point, got {describe(t)}")


def _opmath(dtype):
    """Where one gradient is multiplied: half precision in float32 and rounded once, as PyTorch does."""
    return float32 if dtype.is_floating_point and dtype.itemsize < 4 else dtype


# -- the inf/nan check and unscale of one device's gradients ---------------------------------------

def _non_finite_check_and_unscale(grads, inv_scale):
    inv_scale = F.reshape(inv_scale, ())
    unscaled = []
    for g in grads:
        compute = _opmath(g.dtype)
        product = F.mul(g if compute is g.dtype else F.to_dtype(g, compute), inv_scale)
        unscaled.append(product if product.dtype is g.dtype else F.to_dtype(product, g.dtype))
    all_finite = F.all(F.stack([F.all(F.isfinite(g)) for g in grads]))
    return (*unscaled, F.to_dtype(F.logical_not(all_finite), float32))


def _unscale_promotion(rt, op, args):
    grads = _each(args["grads"])
    _require_floating(op.name, "gradients", grads)
    _require_floating(op.name, "inv_scale", _each(args["inv_scale"]))
    return None, (*(g._dtype for g in grads), float32)  # each gradient keeps its dtype; found_inf is float32


def _unscale_meta(grads, inv_scale):
    require(numel(shape(inv_scale)) == 1, _UNSCALE, "inv_scale must be a one-element tensor", inv_scale)
    return (*(shape(g) for g in grads), ())


def _unscale_reference(grads, inv_scale):
    found_inf = any(not np.isfinite(g).all() for g in grads)
    return (*(g * inv_scale.reshape(()) for g in grads), np.float32(found_inf))


def _unscale_samples(make, dtype):
    inv = make((), dtype="float32", low=0.01, high=1.0)
    yield Sample(([make((3, 4)), make((5,)), make(())], inv), note="finite gradients of several shapes")
    if dtype.is_floating_point:
        yield Sample(([make((2, 3)), make.specials((3, 4)), make((2,))], inv), note="inf and nan in one gradient")
    yield Sample(([make((4, 2), noncontiguous=True), make((0, 3))], make((1,), dtype="float32", low=0.5, high=1.0)),
                 note="non-contiguous and empty gradients, inv_scale of shape (1,)")
    yield Sample(([make((3,))], make((), dtype="float32", low=1.0, high=1.5)), note="one gradient, inv_scale 1")


defop("_amp_foreach_non_finite_check_and_unscale(Tensor[] grads, Tensor inv_scale)", "nn", kind="composite",
      promotion=_unscale_promotion, dtypes="float", meta=_unscale_meta, composite=_non_finite_check_and_unscale, reference=_unscale_reference,
      samples=_unscale_samples, method=False, differentiable=False, outputs=("*",),
      tolerances={"float16": (1e-3, 1e-3), "bfloat16": (8e-3, 8e-3)},
      doc="each gradient times inv_scale, in its own dtype, and found_inf: a 0-d float32 1.0 where any "
          "gradient holds an inf or nan (checked before the multiplication), else 0.0; one call per device")


# -- the scale update ----------------------------------------------------------------------------

def _update_scale(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    found = F.ne(F.reshape(found_inf, scale.shape), 0)
    successful = F.add(growth_tracker, 1)
    grow = F.logical_and(F.logical_not(found), F.eq(F.reshape(successful, scale.shape), growth_interval))
    grown = F.mul(scale, growth_factor)
    grown = F.where(F.isfinite(grown), grown, scale)  # a scale that would overflow stays where it is
    new_scale = F.where(found, F.mul(scale, backoff_factor), F.where(grow, grown, scale))
    restart = F.reshape(F.logical_or(found, grow), growth_tracker.shape)
    return new_scale, F.where(restart, F.zeros_like(growth_tracker), successful)


def _update_promotion(rt, op, args):
    _require_floating(op.name, "scale", _each(args["scale"]))
    _require_floating(op.name, "found_inf", _each(args["found_inf"]))
    return None, (args["scale"]._dtype, args["growth_tracker"]._dtype)


def _update_meta(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    if growth_tracker._dtype.is_floating_point or growth_tracker._dtype.kind == "bool":
        raise DtypeError(f"{_UPDATE}: growth_tracker must be an integer tensor, got {describe(growth_tracker)}")
    for name, t in (("scale", scale), ("growth_tracker", growth_tracker), ("found_inf", found_inf)):
        require(numel(shape(t)) == 1, _UPDATE, f"{name} must be a one-element tensor", t)
    return shape(scale), shape(growth_tracker)


def _update_reference(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    """PyTorch's rule: back off and restart the count on an inf; grow after growth_interval clean steps."""
    if found_inf.item():
        return scale * backoff_factor, np.zeros_like(growth_tracker)
    successful = growth_tracker + 1
    if successful.item() != growth_interval:
        return scale, successful
    grown = scale * growth_factor
    return (grown if np.isfinite(grown).all() else scale), np.zeros_like(growth_tracker)


def _update_samples(make, dtype):
    def tracker(value: int):
        return make((), dtype="int32", low=value, high=value + 1)

    def flag(value: float):
        return make((), dtype="float32", low=value, high=value)

    scale = make((), low=1.0, high=4.0)
    yield Sample((scale, tracker(3), flag(1.0), 2.0, 0.5, 5), note="inf found: back off")
    yield Sample((scale, tracker(3), flag(0.0), 2.0, 0.5, 5), note="clean step: count it")
    yield Sample((scale, tracker(4), flag(0.0), 2.0, 0.5, 5), note="growth_interval clean steps: grow")
    yield Sample((make((1,), low=1.0, high=4.0), tracker(0), flag(0.0), 3.0, 0.25, 1), note="interval 1, shape (1,)")
    yield Sample((scale, tracker(1), flag(2.0), 2.0, 0.5, 2), note="infs found on two devices")
    yield Sample((scale, tracker(6), flag(0.0), 2.0, 0.5, 5), note="past a lowered growth_interval: counts on")


defop("_amp_update_scale(Tensor scale, Index growth_tracker, Tensor found_inf, float growth_factor, "
      "float backoff_factor, int growth_interval)", "nn", kind="composite", promotion=_update_promotion,
      dtypes="float", meta=_update_meta, composite=_update_scale, reference=_update_reference,
      samples=_update_samples, method=False, differentiable=False, outputs=("scale", "growth_tracker"),
      tolerances={"float16": (1e-3, 1e-3), "bfloat16": (8e-3, 8e-3)},
      doc="GradScaler's scale update: on found_inf, scale * backoff_factor and the tracker restarts; else "
          "the tracker counts clean steps and at growth_interval the scale grows by growth_factor (if finite)")
