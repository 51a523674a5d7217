"""Embedding: a lookup table of learnable vectors indexed by integers."""
from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...dispatch.ops import F as ops
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Embedding"]


class Embedding(Module):
    """``num_embeddings`` vectors of size ``embedding_dim``, initialised N(0, 1) as in PyTorch.

    The ``padding_idx`` row starts at zero and gets no gradient, so it stays a neutral "no token"
    vector; ``_weight`` adopts an existing tensor instead (see ``from_pretrained``).
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight=None, _freeze: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError("Padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            self.weight = Parameter(ops.empty((num_embeddings, embedding_dim), dtype=dtype, device=device),
                                    requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            with no_grad():
                ops.copy_(self.weight[self.padding_idx], ops.zeros((self.embedding_dim,), dtype=self.weight.dtype,
                                                                   device=self.weight.device))

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> "Embedding":
        """An Embedding holding ``embeddings`` (2-D) itself, frozen (no gradient) unless ``freeze=False``."""
        if embeddings.ndim != 2:
            raise ValueError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse, _weight=embeddings,
                   _freeze=freeze)
