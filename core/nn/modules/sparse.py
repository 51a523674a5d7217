"""Embedding and EmbeddingBag: lookup tables of learnable vectors indexed by integers.

``sparse=True`` is accepted and trains exactly as PyTorch's does, with a dense gradient (a parameter's
gradient is never an ``ember.sparse`` tensor in Ember; see ``F.embedding``)."""
from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...dispatch.ops import F as ops
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Embedding", "EmbeddingBag"]


def _wrapped_padding_idx(padding_idx: int | None, num_embeddings: int, message: str) -> int | None:
    """``padding_idx`` as a row number (a negative one counts from the end); ``message`` is PyTorch's."""
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ValueError(message)
    return padding_idx % num_embeddings


def _set_table(module: Module, _weight, num_embeddings: int, embedding_dim: int, requires_grad: bool, device,
               dtype) -> None:
    """``module.weight``: ``_weight`` adopted (its shape checked), else a new table initialised by
    ``reset_parameters``."""
    if _weight is None:
        module.weight = Parameter(ops.empty((num_embeddings, embedding_dim), dtype=dtype, device=device),
                                  requires_grad=requires_grad)
        module.reset_parameters()
        return
    if tuple(_weight.shape) != (num_embeddings, embedding_dim):
        raise ValueError("Shape of weight does not match num_embeddings and embedding_dim")
    module.weight = Parameter(_weight, requires_grad=requires_grad)


def _zero_padding_row(module: Module) -> None:
    if module.padding_idx is not None:
        with no_grad():
            ops.copy_(module.weight[module.padding_idx],
                      ops.zeros((module.embedding_dim,), dtype=module.weight.dtype, device=module.weight.device))


def _lookup_options_repr(module: Module) -> str:
    """The repr of the lookup options both layers share, where they differ from the defaults."""
    s = ""
    if module.max_norm is not None:
        s += f", max_norm={module.max_norm}"
    if module.norm_type != 2:
        s += f", norm_type={module.norm_type}"
    if module.scale_grad_by_freq:
        s += f", scale_grad_by_freq={module.scale_grad_by_freq}"
    return s


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
        self.padding_idx = _wrapped_padding_idx(padding_idx, num_embeddings,
                                                "Padding_idx must be within num_embeddings")
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        _set_table(self, _weight, num_embeddings, embedding_dim, not _freeze, device, dtype)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        _zero_padding_row(self)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        s += _lookup_options_repr(self)
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


class EmbeddingBag(Module):
    """Sums, means or maxima over bags of embedding rows, without materialising the rows of each bag.

    ``forward(input, offsets=None, per_sample_weights=None)``: a 2-D input is one bag per row; a 1-D input is
    cut into bags at ``offsets`` (with ``include_last_offset`` the last offset closes the last bag). The
    ``padding_idx`` row starts at zero and is left out of every bag.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                 _weight=None, include_last_offset: bool = False, padding_idx: int | None = None, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.padding_idx = _wrapped_padding_idx(padding_idx, num_embeddings,
                                                "padding_idx must be within num_embeddings")
        _set_table(self, _weight, num_embeddings, embedding_dim, True, device, dtype)
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        _zero_padding_row(self)

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                               self.mode, self.sparse, per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}" + _lookup_options_repr(self)
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, max_norm: float | None = None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                        include_last_offset: bool = False, padding_idx: int | None = None) -> "EmbeddingBag":
        """An EmbeddingBag holding ``embeddings`` (2-D) itself, frozen (no gradient) unless ``freeze=False``."""
        if embeddings.ndim != 2:
            raise ValueError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse, embeddings, include_last_offset,
                  padding_idx)
        bag.weight.requires_grad = not freeze
        return bag
