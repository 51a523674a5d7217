"""``nn.CTCLoss``: the connectionist temporal classification loss as a module."""
from __future__ import annotations

from ...tensor import Tensor
from ..functional.ctc import ctc_loss
from .loss import _Loss

__all__ = ["CTCLoss"]


class CTCLoss(_Loss):
    """``CTCLoss(blank=0, reduction='mean', zero_infinity=False)``; ``forward(log_probs, targets, input_lengths,
    target_lengths)`` as ``F.ctc_loss``."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths, target_lengths) -> Tensor:
        return ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                        self.zero_infinity)
