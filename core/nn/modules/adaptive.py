"""``nn.AdaptiveLogSoftmaxWithLoss``: the efficient softmax of Grave et al. for large vocabularies.

Frequent classes (the shortlist, below ``cutoffs[0]``) get their own logits in the head; each rarer range
``[cutoffs[i], cutoffs[i+1])`` is one extra head logit (its cluster) times a softmax of its own, computed
through a projection of width ``in_features // div_value ** (i + 1)``. Parameters and formulas are
PyTorch's, so state_dicts load both ways.
"""
from __future__ import annotations

from collections import namedtuple
from typing import Sequence

from ...dispatch.ops import F as ops
from ...tensor import Tensor
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """``AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs, div_value=4.0, head_bias=False)``.

    ``forward(input, target)`` returns ``(output, loss)``: each row's log-probability of its target and their
    negated mean. ``log_prob(input)`` gives the full ``(N, n_classes)`` log-distribution, ``predict(input)``
    the most likely class.
    """

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int], div_value: float = 4.0,
                 head_bias: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1 or \
                len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        factory = dict(device=device, dtype=dtype)
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **factory),
                                        Linear(hidden, self.cutoffs[i + 1] - self.cutoffs[i], bias=False,
                                               **factory)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for projection in self.tail:
            for layer in projection:
                layer.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        if target_.ndim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("AdaptiveLogSoftmaxWithLoss: input and target should have the same size in the "
                                   f"batch dimension, got {tuple(input_.shape)} and {tuple(target_.shape)}")
            if input_.ndim != 2:
                raise RuntimeError(f"AdaptiveLogSoftmaxWithLoss: 1D target tensor expects 2D input tensors, but "
                                   f"found inputs with size {tuple(input_.shape)}")
        elif target_.ndim == 0:
            if input_.ndim != 1:
                raise RuntimeError(f"AdaptiveLogSoftmaxWithLoss: 0D target tensor expects 1D input tensors, but "
                                   f"found inputs with size {tuple(input_.shape)}")
        else:
            raise RuntimeError("AdaptiveLogSoftmaxWithLoss: 0D or 1D target tensor expected, multi-target not "
                               "supported")
        batched = target_.ndim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        if target.numel():
            low, high = int(target.min().item()), int(target.max().item())
            if low < 0 or high > self.n_classes - 1:
                raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                                   f"[{low}, {high}] were found. ")
        # which cluster (0: the shortlist) each target is in, and the head logit that stands for it
        cluster = sum((target >= bound).to(target.dtype) for bound in self.cutoffs[:-1])
        head_index = ops.where(cluster == 0, target, cluster + (self.shortlist_size - 1))
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = head_logprob.gather(1, head_index.unsqueeze(1)).squeeze(1)
        for i, projection in enumerate(self.tail):
            members = cluster == i + 1
            if not bool(members.any()):
                continue
            start, size = self.cutoffs[i], self.cutoffs[i + 1] - self.cutoffs[i]
            relative = (target - start).clamp(0, size - 1)  # rows outside the cluster: any valid index, unused
            local = F.log_softmax(projection(input), dim=1).gather(1, relative.unsqueeze(1)).squeeze(1)
            output = output + ops.where(members, local, 0.0)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i, projection in enumerate(self.tail):
            cluster = head_logprob[:, self.shortlist_size + i:self.shortlist_size + i + 1]
            parts.append(F.log_softmax(projection(input), dim=1) + cluster)
        return ops.cat(parts, 1)

    def log_prob(self, input: Tensor) -> Tensor:
        """Log-probabilities of all ``n_classes`` classes, ``(N, n_classes)``."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each row, as ``log_prob(input).argmax(dim=1)``; a row whose best head logit
        is a shortlist class needs no cluster (that class beats every cluster's total probability)."""
        head_output = self.head(input)
        output = head_output.argmax(dim=1)
        if not bool((output >= self.shortlist_size).any()):
            return output
        return self._full_log_prob(input, head_output).argmax(dim=1)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, n_classes={self.n_classes}, cutoffs={self.cutoffs[:-1]}, "
                f"div_value={self.div_value}, head_bias={self.head_bias}")
