"""Pointwise losses: one loss per element of the (broadcast) input and target, then reduced.

mse_loss, l1_loss, smooth_l1_loss, huber_loss, binary_cross_entropy_with_logits and kl_div, with the
signatures of PyTorch's aten ops: reduction is 'none', 'mean' or 'sum'. What PyTorch does in Python
stays in ``ember.nn.functional`` (the deprecated size_average/reduce, kl_div's 'batchmean', per-element
``weight=`` of the regression losses, the broadcast warning).

They are ops so that autocast sees them: PyTorch runs every one in float32 under autocast. Each is a
composite of a handful of Ember ops, which autograd differentiates as they stand; float16 and bfloat16
inputs compute in float32 and round once, as PyTorch's kernels accumulate, but for
binary_cross_entropy_with_logits, which takes PyTorch's composite steps in their own dtype.
"""
from __future__ import annotations

import numpy as np

from ...schema import rules
from ...schema.dtypes import int64
from ...schema.errors import ArgumentError, DtypeError, describe, describe_all
from ...schema.meta import broadcast_shapes, shape
from ...schema import Sample, defop
from ..namespace import F
from ..elementwise.opmath import in_opmath
from .losses import check_reduction, check_weights, reduced, reference_reduced
from ._shared import _refuse_weight_grad


def _pair_meta(op_name: str):
    """Input and target broadcast together; the loss has their shape, or is a scalar once reduced."""
    def meta(input, target, reduction="mean", *options):
        out = broadcast_shapes(op_name, shape(input), shape(target))
        return out if reduction == "none" else ()
    return meta


def _reduction_normalize(op, args) -> None:
    check_reduction(op.name, args["reduction"])


def _pair_samples(*options: dict):
    """Shapes, layouts and reductions every pointwise loss is checked on, then each of ``options``."""
    def samples(make, dtype):
        yield Sample((make((4, 5)), make((4, 5))), {"reduction": "none"}, note="none")
        yield Sample((make((3, 1)), make((4,))), {"reduction": "sum"}, note="target broadcast against the input")
        yield Sample((make((2, 3, 4), noncontiguous=True), make((2, 3, 4))), {"reduction": "none"},
                     note="non-contiguous")
        yield Sample((make(()), make(())), {"reduction": "none"}, note="0-d")
        yield Sample((make((0, 3)), make((0, 3))), {"reduction": "sum"}, note="empty")
        if dtype.is_floating_point:  # l1_loss takes integers, but not their mean
            yield Sample((make((4, 5)), make((4, 5))), note="mean")
            yield Sample((make((0, 3)), make((0, 3))), note="empty: nan mean")
        for option in options:
            yield Sample((make((3, 4)), make((3, 4))), option, note=", ".join(f"{k}={v}" for k, v in option.items()))
    return samples


def _pointwise_loss(signature: str, composite, reference, samples, doc: str, opmath: bool = True,
                    **fields) -> None:
    """``opmath=False``: the composite takes its steps in the input's dtype, each rounded, as PyTorch's composite
    of the same steps does (so that half precision overflows where PyTorch's does)."""
    name = signature.partition("(")[0]
    fields.setdefault("normalize", _reduction_normalize)
    fields.setdefault("meta", _pair_meta(name))
    fields.setdefault("promotion", rules.same)
    fields.setdefault("dtypes", "float")
    fields.setdefault("autocast", "float32")
    defop(signature, "nn", kind="composite", composite=in_opmath(composite) if opmath else composite,
          reference=reference, samples=samples, method=False, doc=doc, **fields)


# -- mse_loss and l1_loss -----------------------------------------------------------------------------------

def _mse_loss(input, target, reduction="mean"):
    difference = F.sub(input, target)
    return reduced(F.mul(difference, difference), reduction)


def _l1_loss(input, target, reduction="mean"):
    """|input - target|; the slope at equality is 0, as in PyTorch."""
    return reduced(F.abs(F.sub(input, target)), reduction)


def _l1_promotion(rt, op, args):
    """PyTorch's l1_loss is sub, abs and sum, so integer inputs work unless averaged, and their sum is int64;
    complex inputs give a real loss (the distance |input - target|)."""
    if rt.is_inexact or args["reduction"] == "none":
        return rt, rt.to_real()
    return rt, int64


def _l1_normalize(op, args) -> None:
    input, target, reduction = args["input"], args["target"], args["reduction"]
    check_reduction(op.name, reduction)
    floating = any(isinstance(v, (float, complex)) or (hasattr(v, "_data") and v.dtype.kind not in ("bool", "int"))
                   for v in (input, target))
    if reduction == "mean" and not floating:
        raise DtypeError(f"{op.name}: reduction='mean' needs floating point inputs, got {describe(input)} and "
                         f"{describe(target)}; use reduction='sum' or 'none', or convert them with .float()")


_pointwise_loss("mse_loss(Tensor input, Tensor target, str reduction='mean')", _mse_loss,
                lambda x, t, reduction="mean": reference_reduced((x - t) ** 2, reduction), _pair_samples(),
                doc="(input - target) ** 2, reduced")
_pointwise_loss("l1_loss(Tensor input, Tensor target, str reduction='mean')", _l1_loss,
                lambda x, t, reduction="mean": reference_reduced(np.abs(x - t), reduction), _pair_samples(),
                promotion=_l1_promotion, dtypes="numeric+complex", normalize=_l1_normalize,
                doc="|input - target|, reduced; integer inputs are accepted with reduction 'none' or 'sum'")


# -- smooth_l1_loss and huber_loss -------------------------------------------------------------------------

def _smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    """0.5 * d ** 2 / beta where |d| < beta, else |d| - 0.5 * beta (d = input - target); beta=0 is l1_loss."""
    distance = F.abs(F.sub(input, target))
    if beta == 0:
        return reduced(distance, reduction)
    quadratic = F.div(F.mul(F.mul(distance, distance), 0.5), beta)
    return reduced(F.where(F.lt(distance, beta), quadratic, F.sub(distance, 0.5 * beta)), reduction)


def _huber_loss(input, target, reduction="mean", delta=1.0):
    """0.5 * d ** 2 where |d| < delta, else delta * (|d| - 0.5 * delta): smooth_l1_loss times delta."""
    distance = F.abs(F.sub(input, target))
    quadratic = F.mul(F.mul(distance, distance), 0.5)
    return reduced(F.where(F.lt(distance, delta), quadratic, F.mul(F.sub(distance, 0.5 * delta), delta)), reduction)


def _threshold_normalize(threshold: str, allowed, wording: str):
    def normalize(op, args) -> None:
        check_reduction(op.name, args["reduction"])
        if not allowed(args[threshold]):
            raise ArgumentError(f"{op.name} does not support {wording} values for {threshold} (got {threshold}="
                                f"{args[threshold]}).")
    return normalize


def _huber_reference(x, t, reduction="mean", delta=1.0):
    d = np.abs(x - t)
    return reference_reduced(np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)), reduction)


def _smooth_l1_reference(x, t, reduction="mean", beta=1.0):
    if beta == 0:
        return reference_reduced(np.abs(x - t), reduction)
    return reference_reduced(_huber_reference(x, t, "none", beta) / beta, reduction)


_pointwise_loss("smooth_l1_loss(Tensor input, Tensor target, str reduction='mean', float beta=1.0)", _smooth_l1_loss,
                _smooth_l1_reference, _pair_samples({"beta": 0.5}, {"beta": 0.0}, {"beta": 4.0, "reduction": "sum"}),
                normalize=_threshold_normalize("beta", lambda beta: beta >= 0, "negative"),
                doc="0.5 * d ** 2 / beta where |d| < beta, else |d| - 0.5 * beta, for d = input - target; "
                    "beta=0 is l1_loss")
_pointwise_loss("huber_loss(Tensor input, Tensor target, str reduction='mean', float delta=1.0)", _huber_loss,
                _huber_reference, _pair_samples({"delta": 0.5}, {"delta": 4.0, "reduction": "sum"}),
                normalize=_threshold_normalize("delta", lambda delta: delta > 0, "non-positive"),
                doc="0.5 * d ** 2 where |d| < delta, else delta * (|d| - 0.5 * delta), for d = input - target")


# -- kl_div --------------------------------------------------------------------------------------------------

def _xlogx(t):
    """t * log(t), defined as 0 where t is 0 (log is taken of 1 there, so no NaN leaks into gradients)."""
    zero = F.eq(t, 0)
    return F.where(zero, 0, F.mul(t, F.log(F.where(zero, 1, t))))


def _kl_div(input, target, reduction="mean", log_target=False):
    """target * (log(target) - input), input holding log-probabilities (and target too when log_target)."""
    if log_target:
        losses = F.mul(F.exp(target), F.sub(target, input))
    else:
        losses = F.sub(_xlogx(target), F.mul(target, input))
    return reduced(losses, reduction)


def _kl_div_reference(x, t, reduction="mean", log_target=False):
    if log_target:
        return reference_reduced(np.exp(t) * (t - x), reduction)
    zero = t == 0
    return reference_reduced(np.where(zero, 0.0, t * np.log(np.where(zero, 1, t))) - t * x, reduction)


def _kl_div_samples(make, dtype):
    def probs(shape_):
        return make(shape_, low=0.05, high=1)
    yield Sample((make((4, 5)), probs((4, 5))), {"reduction": "none"}, note="none")
    yield Sample((make((4, 5)), probs((4, 5))), note="mean")
    yield Sample((make((3, 1)), probs((4,))), {"reduction": "sum"}, note="target broadcast against the input")
    yield Sample((make((2, 3, 4), noncontiguous=True), make((2, 3, 4), low=-4, high=0)),
                 {"reduction": "none", "log_target": True}, note="log_target, non-contiguous")
    yield Sample((make((0, 3)), probs((0, 3))), {"reduction": "sum"}, note="empty")
    if dtype.is_floating_point:  # floor makes exact zeros
        zeros = F.floor(make((3, 4), low=0, high=2))
        yield Sample((make((3, 4)), F.mul(probs((3, 4)), zeros)), {"reduction": "none"}, gradcheck=False,
                     note="zero targets contribute 0 (t log t is not differentiable from below at 0)")


def _kl_div_promotion(rt, op, args):
    """PyTorch refuses integral inputs and targets alike (promotion alone would accept a float input with an
    integer target)."""
    operands = [args["input"], args["target"]]
    if any(getattr(v, "_dtype", None) is not None and not v._dtype.is_floating_point for v in operands):
        raise DtypeError(f"kl_div: Integral inputs not supported. ({describe_all(operands)})")
    return rules.same(rt, op, args)


_pointwise_loss("kl_div(Tensor input, Tensor target, str reduction='mean', *, bool log_target=False)", _kl_div,
                _kl_div_reference, _kl_div_samples, promotion=_kl_div_promotion,
                doc="pointwise KL divergence target * (log(target) - input) of log-probabilities input (and target "
                    "when log_target); a zero target contributes 0")


# -- binary_cross_entropy_with_logits ------------------------------------------------------------------------

def _bce_with_logits(input, target, weight=None, pos_weight=None, reduction="mean"):
    """(1 - t) * x - (1 + (pos_weight - 1) * t) * logsigmoid(x): binary cross-entropy of sigmoid(x) without
    ever forming the sigmoid, so finite for every logit. PyTorch's steps in PyTorch's order: in half precision
    each rounds, and overflows, where PyTorch's does."""
    log_sigmoid = F.logsigmoid(input)
    if pos_weight is not None:
        log_sigmoid = F.mul(log_sigmoid, F.add(F.mul(F.sub(pos_weight, 1), target), 1))
    losses = F.sub(F.mul(F.sub(1, target), input), log_sigmoid)
    if weight is not None:
        losses = F.mul(losses, weight)
    return reduced(losses, reduction)


def _bce_with_logits_normalize(op, args) -> None:
    weight, pos_weight = args["weight"], args["pos_weight"]
    check_reduction(op.name, args["reduction"])
    _refuse_weight_grad(op.name, weight)
    _refuse_weight_grad(op.name, pos_weight, "pos_weight")


def _bce_with_logits_meta(x, target, weight=None, pos_weight=None, reduction="mean"):
    check_weights("binary_cross_entropy_with_logits", x, target, weight=weight, pos_weight=pos_weight)
    return shape(x) if reduction == "none" else ()


def _bce_with_logits_reference(x, t, weight=None, pos_weight=None, reduction="mean"):
    log_sigmoid = -np.logaddexp(0, -x)
    if pos_weight is not None:
        log_sigmoid = log_sigmoid * (1 + (pos_weight - 1) * t)
    losses = (1 - t) * x - log_sigmoid
    return reference_reduced(losses if weight is None else losses * weight, reduction)


def _bce_with_logits_samples(make, dtype):
    def probs(shape_):
        return make(shape_, low=0, high=1)

    def weights(shape_, low=0.1, high=2.0):
        return make(shape_, low=low, high=high)
    yield Sample((make((4, 5)), probs((4, 5))), note="mean")
    yield Sample((make((3, 4)), probs((3, 4)), weights((3, 4)), weights((4,), 0.5, 3.0), "none"),
                 note="weight and pos_weight")
    yield Sample((make((2, 3, 4), noncontiguous=True), probs((2, 3, 4)), None, weights((4,), 0.5, 3.0), "sum"),
                 note="pos_weight per class, sum")
    yield Sample((make((3, 4)), probs((3, 4)), weights((3, 1))), {"reduction": "none"}, note="broadcast weight")
    yield Sample((make((6,), low=-100, high=100), probs((6,))), {"reduction": "none"}, note="large logits")
    yield Sample((make((0, 3)), probs((0, 3))), {"reduction": "sum"}, note="empty")


_pointwise_loss("binary_cross_entropy_with_logits(Tensor input, Tensor target, Tensor? weight=None, "
                "Tensor? pos_weight=None, str reduction='mean')", _bce_with_logits, _bce_with_logits_reference,
                _bce_with_logits_samples, meta=_bce_with_logits_meta, normalize=_bce_with_logits_normalize,
                nondifferentiable_inputs=("weight", "pos_weight"), opmath=False,
                doc="binary cross-entropy of sigmoid(input) against target, computed from the logits (stable for "
                    "every logit); pos_weight weighs the positive term, broadcast along the last dim")


# -- poisson_nll_loss and gaussian_nll_loss ---------------------------------------------------------------------

_HALF_LOG_2PI = 0.5 * float(np.log(2 * np.pi))


def _poisson_nll_loss(input, target, log_input=True, full=False, eps=1e-8, reduction="mean"):
    """exp(input) - target * input for log-rates, input - target * log(input + eps) for rates; ``full`` adds
    Stirling's approximation of log(target!) where target > 1."""
    if log_input:
        losses = F.sub(F.exp(input), F.mul(target, input))
    else:
        losses = F.sub(input, F.mul(target, F.log(F.add(input, eps))))
    if full:
        counted = F.gt(target, 1)
        safe = F.where(counted, target, 1.0)  # keeps log's gradient finite where the term is masked off
        stirling = F.add(F.sub(F.mul(safe, F.log(safe)), safe), F.mul(F.log(F.mul(safe, 2 * np.pi)), 0.5))
        losses = F.add(losses, F.where(counted, stirling, 0.0))
    return reduced(losses, reduction)


def _poisson_nll_reference(x, t, log_input=True, full=False, eps=1e-8, reduction="mean"):
    losses = np.exp(x) - t * x if log_input else x - t * np.log(x + eps)
    if full:
        safe = np.where(t > 1, t, 1.0)
        losses = losses + np.where(t > 1, safe * np.log(safe) - safe + 0.5 * np.log(2 * np.pi * safe), 0)
    return reference_reduced(losses, reduction)


def _poisson_nll_meta(input, target, log_input=True, full=False, eps=1e-8, reduction="mean"):
    return _pair_meta("poisson_nll_loss")(input, target, reduction)


def _poisson_nll_samples(make, dtype):
    def counts(shape_):
        return make(shape_, low=0, high=6)
    yield Sample((make((4, 5), low=-2, high=2), counts((4, 5))), note="log-rates, mean")
    yield Sample((make((3, 4), low=0.1, high=4), counts((3, 4)), False, True), {"reduction": "none"},
                 note="rates, full")
    yield Sample((make((2, 3), low=-2, high=2, noncontiguous=True), counts((2, 3)), True, True, 1e-8, "sum"),
                 note="log-rates, full, sum")


_pointwise_loss("poisson_nll_loss(Tensor input, Tensor target, bool log_input=True, bool full=False, float eps=1e-8, "
                "str reduction='mean')", _poisson_nll_loss, _poisson_nll_reference, _poisson_nll_samples,
                meta=_poisson_nll_meta, grad_domain={"input": {"low": 0.1, "high": 4}},
                doc="negative log-likelihood of target under a Poisson distribution with rate exp(input) (log_input) "
                    "or input; full adds the Stirling term of log(target!)")


def _gaussian_nll_meta(input, target, var, full=False, eps=1e-6, reduction="mean"):
    out = broadcast_shapes("gaussian_nll_loss", shape(input), shape(target), shape(var))
    return out if reduction == "none" else ()


def _gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 * (log(var) + (input - target) ** 2 / var), var clamped below at eps the way PyTorch clamps it:
    without recording, so the gradient reaches var as if unclamped."""
    var = F.add(var, F.sub(F.clamp(var, eps), var).detach())
    difference = F.sub(input, target)
    losses = F.mul(F.add(F.log(var), F.div(F.mul(difference, difference), var)), 0.5)
    if full:
        losses = F.add(losses, _HALF_LOG_2PI)
    return reduced(losses, reduction)


def _gaussian_nll_reference(x, t, var, full=False, eps=1e-6, reduction="mean"):
    var = np.maximum(var, eps)
    losses = 0.5 * (np.log(var) + (x - t) ** 2 / var) + (_HALF_LOG_2PI if full else 0.0)
    return reference_reduced(losses, reduction)


def _gaussian_nll_samples(make, dtype):
    yield Sample((make((4, 3)), make((4, 3)), make((4, 3), low=0.2, high=3)), note="heteroscedastic, mean")
    yield Sample((make((4, 3)), make((4, 3)), make((4, 1), low=0.2, high=3), True), {"reduction": "none"},
                 note="one variance per row, full")
    yield Sample((make((5,), noncontiguous=True), make((5,)), make((5,), low=0.2, high=3), False, 1e-2, "sum"),
                 note="sum")


_pointwise_loss("gaussian_nll_loss(Tensor input, Tensor target, Tensor var, bool full=False, float eps=1e-6, "
                "str reduction='mean')", _gaussian_nll_loss, _gaussian_nll_reference, _gaussian_nll_samples,
                meta=_gaussian_nll_meta, grad_domain={"var": {"low": 0.2, "high": 3}},
                autocast=None,  # PyTorch writes it in Python: its ops run in the autocast dtypes
                doc="negative log-likelihood of target under normal distributions of mean input and variance var "
                    "(clamped below at eps); full adds the constant 0.5 * log(2 pi)")
