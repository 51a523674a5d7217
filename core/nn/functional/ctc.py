"""``F.ctc_loss`` with PyTorch's signature: the ``ctc_loss`` op of the schema, lengths also as lists."""
from __future__ import annotations

from ...creation import tensor
from ...dispatch.schema.dtypes import int64
from ...dispatch.ops import F as ops
from ...tensor import Tensor

__all__ = ["ctc_loss"]


def _as_lengths(lengths, like: Tensor) -> Tensor:
    if isinstance(lengths, Tensor):
        return lengths
    return tensor(list(lengths), dtype=int64, device=like.device)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """Connectionist temporal classification loss of ``log_probs`` (``(T, N, C)`` log-softmax outputs, or
    ``(T, C)``) against ``targets`` (padded ``(N, S)`` or concatenated 1-D), lengths as tensors or sequences
    of ints. ``reduction='mean'`` divides each loss by its target length, then averages; ``zero_infinity``
    replaces the infinite losses of impossible targets (and their gradients) by zero."""
    return ops.ctc_loss(log_probs, targets, _as_lengths(input_lengths, log_probs),
                        _as_lengths(target_lengths, log_probs), blank, reduction, zero_infinity)
