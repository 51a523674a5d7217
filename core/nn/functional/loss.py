"""Loss functions with PyTorch's signatures, reductions, validation and messages.

Each loss is an op of the schema (``ember.dispatch.ops.nn.losses`` and ``pointwise_losses``), so that
autocast sees it and backends may fuse it; these functions add what PyTorch does in Python around its
aten ops. PyTorch's deprecated ``size_average``/``reduce`` arguments keep their positions and meaning,
so that positional calls written for PyTorch mean the same here.
"""
from __future__ import annotations

import warnings
from typing import Callable

from ...dispatch.schema.errors import ArgumentError, ShapeError
from ...dispatch.ops import F
from ...dispatch.ops.nn.losses import check_reduction, reduced as _reduce

__all__ = ["cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "margin_ranking_loss",
           "hinge_embedding_loss", "soft_margin_loss", "cosine_embedding_loss", "multilabel_soft_margin_loss",
           "multi_margin_loss", "multilabel_margin_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
           "poisson_nll_loss", "gaussian_nll_loss"]

_REDUCTIONS = ("none", "mean", "sum")


# -- reductions ----------------------------------------------------------------------------------------

def legacy_reduction(size_average, reduce) -> str:
    """PyTorch's mapping of the deprecated flags (None counts as True) to a reduction, with its warning."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "none" if not reduce else ("mean" if size_average else "sum")
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' instead.",
                  stacklevel=3)
    return reduction


def _reduction(name: str, size_average, reduce, reduction: str, accepted=_REDUCTIONS) -> str:
    """The reduction to apply in loss ``name``: the deprecated flags win when given, as in PyTorch; an
    unknown name is a ValueError naming it and the loss (the ops' own check)."""
    if size_average is not None or reduce is not None:
        return legacy_reduction(size_average, reduce)
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.",
                      stacklevel=3)
        return "mean"
    check_reduction(name, reduction, accepted)
    return reduction


# -- shape checks --------------------------------------------------------------------------------------

def _warn_if_broadcast(name: str, input, target) -> None:
    """PyTorch's regression losses broadcast a differently shaped target, with a warning, since that is
    almost always a bug ((N, 1) against (N,) gives an (N, N) loss); the loss op refuses shapes that cannot
    broadcast."""
    if tuple(target.shape) == tuple(input.shape):
        return
    warnings.warn(f"{name}: Using a target size ({target.size()}) that is different to the input size "
                  f"({input.size()}). This will likely lead to incorrect results due to broadcasting. "
                  f"Please ensure they have the same size.", stacklevel=3)


def _elementwise_weight(losses, weight, reduction: str, input, mean_by_weight: bool):
    """PyTorch's optional per-element weights of mse_loss, l1_loss (whose mean divides by the weights' sum)
    and huber_loss (whose mean divides by the element count), applied to the unreduced loss op, as PyTorch
    does in Python."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ArgumentError(f"Weights and input must have the same size: weight {weight.size()}, input {input.size()}")
    losses = F.mul(losses, weight)
    if reduction == "mean" and mean_by_weight:
        return F.div(F.sum(losses), F.sum(weight))
    return _reduce(losses, reduction)


# -- classification ---------------------------------------------------------------------------------------

def cross_entropy(input, target, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0):
    """Cross-entropy of unnormalized logits ``input`` (C,), (N, C) or (N, C, d1, ...) against class indices
    (target of shape (), (N,) or (N, d1, ...)) or class probabilities (target of the input's shape).

    With indices, the weighted mean divides by the sum of the counted targets' weights and targets equal
    to ``ignore_index`` count for nothing; ``label_smoothing`` eps mixes eps / C of the (weighted) mass
    into every class, as PyTorch defines it.
    """
    reduction = _reduction("cross_entropy", size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ArgumentError(f"cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if tuple(target.shape) != tuple(input.shape):
        return F.cross_entropy_indices(input, target, weight, ignore_index, label_smoothing, reduction)
    if ignore_index >= 0:
        raise ArgumentError(f"cross_entropy: ignore_index is not supported for floating point target "
                            f"(got ignore_index={ignore_index})")
    return F.cross_entropy_probabilities(input, target, weight, label_smoothing, reduction)


def nll_loss(input, target, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
             reduction: str = "mean"):
    """Negative log-likelihood of log-probabilities ``input`` (C,), (N, C) or (N, C, d1, ...) at the target
    class indices; the weighted mean divides by the sum of the counted targets' weights."""
    reduction = _reduction("nll_loss", size_average, reduce, reduction)
    return F.nll_loss(input, target, weight, ignore_index, reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
    """-weight * (t * log(x) + (1 - t) * log(1 - x)) for probabilities x; each log is clamped at -100, so
    probabilities of exactly 0 and 1 give finite losses and gradients, as in PyTorch."""
    reduction = _reduction("binary_cross_entropy", size_average, reduce, reduction)
    return F.binary_cross_entropy(input, target, weight, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction: str = "mean", pos_weight=None):
    """binary_cross_entropy(sigmoid(input), target) without ever forming the sigmoid:
    (1 - t) * x - (1 + (pos_weight - 1) * t) * logsigmoid(x), finite for every logit.
    ``pos_weight`` (broadcast along the last dim, one per class) weighs the positive term."""
    reduction = _reduction("binary_cross_entropy_with_logits", size_average, reduce, reduction)
    return F.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False):
    """Pointwise KL divergence target * (log(target) - input), with ``input`` holding log-probabilities
    (and ``target`` too when ``log_target``); a zero target contributes 0. 'batchmean' divides the sum by
    the batch size, which is the mathematical KL divergence; 'mean' divides by every element, with
    PyTorch's warning."""
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    else:
        reduction = _reduction("kl_div", None, None, reduction, accepted=_REDUCTIONS + ("batchmean",))
        if reduction == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size. "
                          "'batchmean' divides only by the batch size, and aligns with the KL div math definition. "
                          "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                          stacklevel=2)
    if reduction != "batchmean":
        return F.kl_div(input, target, reduction, log_target=log_target)
    total = F.kl_div(input, target, "sum", log_target=log_target)
    return F.div(total, input.shape[0]) if input.ndim else total


# -- regression ---------------------------------------------------------------------------------------------

def mse_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", weight=None):
    """(input - target) ** 2; a differently shaped target broadcasts, with PyTorch's warning."""
    reduction = _reduction("mse_loss", size_average, reduce, reduction)
    _warn_if_broadcast("mse_loss", input, target)
    if weight is not None:
        return _elementwise_weight(F.mse_loss(input, target, "none"), weight, reduction, input, mean_by_weight=True)
    return F.mse_loss(input, target, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", weight=None):
    """|input - target|; the gradient at equality is 0, as in PyTorch."""
    reduction = _reduction("l1_loss", size_average, reduce, reduction)
    _warn_if_broadcast("l1_loss", input, target)
    if weight is not None:
        return _elementwise_weight(F.l1_loss(input, target, "none"), weight, reduction, input, mean_by_weight=True)
    return F.l1_loss(input, target, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
    """0.5 * d ** 2 / beta where |d| < beta, else |d| - 0.5 * beta (d = input - target); beta=0 is l1_loss."""
    reduction = _reduction("smooth_l1_loss", size_average, reduce, reduction)
    _warn_if_broadcast("smooth_l1_loss", input, target)
    return F.smooth_l1_loss(input, target, reduction, beta)


def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0, weight=None):
    """0.5 * d ** 2 where |d| < delta, else delta * (|d| - 0.5 * delta): smooth_l1_loss times delta."""
    reduction = _reduction("huber_loss", None, None, reduction)
    _warn_if_broadcast("huber_loss", input, target)
    if weight is not None:
        return _elementwise_weight(F.huber_loss(input, target, "none", delta), weight, reduction, input,
                                   mean_by_weight=False)
    return F.huber_loss(input, target, reduction, delta)


# -- margin losses ------------------------------------------------------------------------------------------

def margin_ranking_loss(input1, input2, target, margin: float = 0, size_average=None, reduce=None,
                        reduction: str = "mean"):
    """max(0, -target * (input1 - input2) + margin), for targets of 1 (input1 ranks higher) or -1."""
    reduction = _reduction("margin_ranking_loss", size_average, reduce, reduction)
    return F.margin_ranking_loss(input1, input2, target, margin, reduction)


def hinge_embedding_loss(input, target, margin: float = 1.0, size_average=None, reduce=None,
                         reduction: str = "mean"):
    """input where target is 1, max(0, margin - input) where it is -1."""
    reduction = _reduction("hinge_embedding_loss", size_average, reduce, reduction)
    return F.hinge_embedding_loss(input, target, margin, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """log(1 + exp(-target * input)) for targets of 1 or -1."""
    reduction = _reduction("soft_margin_loss", size_average, reduce, reduction)
    return F.soft_margin_loss(input, target, reduction)


def cosine_embedding_loss(input1, input2, target, margin: float = 0, size_average=None, reduce=None,
                          reduction: str = "mean"):
    """1 - cos(input1, input2) where target is 1, max(0, cos - margin) where it is -1."""
    reduction = _reduction("cosine_embedding_loss", size_average, reduce, reduction)
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction: str = "mean"):
    """One-versus-all logistic loss per class, averaged over the classes (the last dim)."""
    reduction = _reduction("multilabel_soft_margin_loss", size_average, reduce, reduction)
    return F.multilabel_soft_margin_loss(input, target, weight, reduction)


def multi_margin_loss(input, target, p: int = 1, margin: float = 1.0, weight=None, size_average=None, reduce=None,
                      reduction: str = "mean"):
    """Multi-class hinge loss of (N, C) or (C,) scores against class indices; p is 1 or 2."""
    reduction = _reduction("multi_margin_loss", size_average, reduce, reduction)
    return F.multi_margin_loss(input, target, p, margin, weight, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """Multi-label hinge loss; each row of target lists class indices, ended by the first -1."""
    reduction = _reduction("multilabel_margin_loss", size_average, reduce, reduction)
    return F.multilabel_margin_loss(input, target, reduction)


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average=None, reduce=None, reduction: str = "mean"):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)) for the p-norm distance d."""
    reduction = _reduction("triplet_margin_loss", size_average, reduce, reduction)
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function: Callable | None = None,
                                      margin: float = 1.0, swap: bool = False, reduction: str = "mean"):
    """triplet_margin_loss with any distance function (default: pairwise_distance), which is why it is
    written here in ops rather than declared as one."""
    reduction = _reduction("triplet_margin_with_distance_loss", None, None, reduction)
    if margin <= 0:
        raise ArgumentError(f"triplet_margin_with_distance_loss: margin must be greater than 0, got {margin}")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise ShapeError(f"triplet_margin_with_distance_loss: The anchor, positive, and negative tensors are expected "
                         f"to have the same number of dimensions, but got: anchor {anchor.ndim}D, positive "
                         f"{positive.ndim}D, and negative {negative.ndim}D inputs")
    distance = distance_function if distance_function is not None else F.pairwise_distance
    positive_distance = distance(anchor, positive)
    negative_distance = distance(anchor, negative)
    if swap:
        negative_distance = F.minimum(negative_distance, distance(positive, negative))
    return _reduce(F.clamp(F.sub(F.add(positive_distance, margin), negative_distance), 0.0), reduction)


# -- likelihood losses ----------------------------------------------------------------------------------------

def poisson_nll_loss(input, target, log_input: bool = True, full: bool = False, size_average=None,
                     eps: float = 1e-8, reduce=None, reduction: str = "mean"):
    """Negative log-likelihood of Poisson-distributed target with rate exp(input) (log_input) or input."""
    reduction = _reduction("poisson_nll_loss", size_average, reduce, reduction)
    return F.poisson_nll_loss(input, target, log_input, full, eps, reduction)


def _variance_like(input, var):
    """PyTorch's accepted shapes of var: the input's; the input's without its last dim (one variance per
    row, unsqueezed); or the input's with exactly one dim of size 1 where the input's is larger."""
    if tuple(var.shape) == tuple(input.shape):
        return var
    if tuple(var.shape) == tuple(input.shape[:-1]):
        return F.unsqueeze(var, -1)
    mismatched = [v for i, v in zip(input.shape, var.shape) if i != v]
    if var.ndim == input.ndim and sum(mismatched) == 1:
        return var
    raise ShapeError(f"gaussian_nll_loss: var is of incorrect size: var {tuple(var.shape)} for input "
                     f"{tuple(input.shape)}; expected the input's shape, its shape without the last dim, or one "
                     f"dim of size 1")


def gaussian_nll_loss(input, target, var, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
    """Negative log-likelihood of target under normal distributions of mean input and variance var
    (a tensor, or one float for every element); var is clamped below at eps for stability."""
    if isinstance(var, (int, float)):
        if var < 0:
            raise ArgumentError("gaussian_nll_loss: var has negative entry/entries")
        var = F.full(tuple(input.shape), float(var), dtype=input.dtype, device=input.device)
    elif var.numel() and F.amin(var).item() < 0:
        raise ArgumentError("gaussian_nll_loss: var has negative entry/entries")
    var = _variance_like(input, var)
    if reduction not in _REDUCTIONS:
        raise ArgumentError(f"{reduction} is not valid")
    return F.gaussian_nll_loss(input, target, var, full, eps, reduction)
