"""Loss modules: each holds its options and calls the function of the same name in ``nn.functional``.

Constructor signatures are PyTorch's, deprecated ``size_average``/``reduce`` included (they keep their
positions, so positional arguments mean the same as in PyTorch). Class weights are buffers, as in
PyTorch: they follow ``.to()``/``.double()`` and appear in the state_dict.
"""
from __future__ import annotations

from .. import functional as F
from ..functional.loss import legacy_reduction
from .module import Module

__all__ = ["CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss",
           "BCEWithLogitsLoss", "KLDivLoss"]


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = legacy_reduction(size_average, reduce)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class CrossEntropyLoss(_WeightedLoss):
    """Cross-entropy of logits against class indices or class probabilities (see ``F.cross_entropy``)."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of log-probabilities at class indices (see ``F.nll_loss``)."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class MSELoss(_Loss):
    """Mean squared error."""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error."""

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Quadratic below ``beta``, linear above (see ``F.smooth_l1_loss``)."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Quadratic below ``delta``, linear with slope ``delta`` above (see ``F.huber_loss``)."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        if isinstance(delta, bool) or not isinstance(delta, (int, float)):
            raise TypeError(f"delta must be a float or int, got: {type(delta)}")
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities (see ``F.binary_cross_entropy``)."""

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy of logits, stable for every logit; ``pos_weight`` weighs the positive term per
    class. Both weights are buffers."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean",
                 pos_weight=None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class KLDivLoss(_Loss):
    """KL divergence of log-probabilities ``input`` from ``target`` (see ``F.kl_div``)."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)
