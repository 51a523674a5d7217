"""``F.embedding``: PyTorch's signature over the schema's embedding op, plus max_norm renormalisation."""
from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...dispatch.ops import F
from ...dispatch.schema.errors import ArgumentError

__all__ = ["embedding", "embedding_bag"]


def _renorm_(weight, indices, max_norm: float, norm_type: float) -> None:
    """Rows of weight looked up by indices whose norm exceeds max_norm are scaled down to it, in place
    and outside autograd (as PyTorch does: the lookup then sees the renormalised rows)."""
    with no_grad():
        flat = F.reshape(indices, (-1,))
        used = F.gt(F.scatter_add(F.zeros((weight.shape[0],), dtype=weight.dtype, device=weight.device), 0, flat,
                                  F.ones(tuple(flat.shape), dtype=weight.dtype, device=weight.device)), 0)
        norms = F.norm(weight, norm_type, 1, True)
        scale = F.where(F.logical_and(F.unsqueeze(used, 1), F.gt(norms, max_norm)),
                        F.div(max_norm, F.add(norms, 1e-7)), 1.0)
        F.copy_(weight, F.mul(weight, scale))


def embedding(input, weight, padding_idx: int | None = None, max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False):
    """The rows of ``weight`` at the integer ``input`` indices: output shape input.shape + (embedding_dim,).

    The ``padding_idx`` row receives no gradient; ``scale_grad_by_freq`` divides each row's gradient by
    how often it occurs in the batch; ``max_norm`` renormalises the looked-up rows of weight in place.
    ``sparse=True`` trains the same: weight gets a dense gradient (not an ``ember.sparse`` tensor) holding
    PyTorch's sparse gradient's values (zero in the rows not looked up), which every optimizer, SparseAdam
    included, applies to the same effect.
    """
    if max_norm is not None:
        _renorm_(weight, input, max_norm, norm_type)
    return F.embedding(input, weight, padding_idx, scale_grad_by_freq)


_BAG_MODES = {"sum": 0, "mean": 1, "max": 2}


def embedding_bag(input, weight, offsets=None, max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights=None, include_last_offset: bool = False, padding_idx: int | None = None):
    """Sums, means or maxima of bags of embedding rows: ``input`` is 2-D (one bag per row) or 1-D cut into bags
    at ``offsets``; ``per_sample_weights`` scales each row (mode 'sum' only); ``padding_idx`` entries are left
    out of their bag (an empty bag gives zeros). ``sparse=True`` gives a dense gradient (see ``embedding``)."""
    if mode not in _BAG_MODES:
        raise ArgumentError(f"embedding_bag: mode has to be one of sum, mean or max, got {mode!r}")
    if weight.ndim != 2:
        raise ArgumentError(f"embedding_bag: weight has to be a 2-D tensor, got {weight.ndim}-D")
    if input.ndim == 2:
        if offsets is not None:
            raise ArgumentError(f"embedding_bag: if input is 2-D, then offsets has to be None, as input is treated as "
                                f"a mini-batch of fixed length sequences; got offsets of shape {tuple(offsets.shape)}")
        offsets = F.mul(F.arange(input.shape[0], device=input.device), input.shape[1])
    elif input.ndim == 1:
        if offsets is None:
            raise ArgumentError("embedding_bag: offsets has to be a 1-D tensor but got None")
        if offsets.ndim != 1:
            raise ArgumentError(f"embedding_bag: offsets has to be a 1-D tensor, got {offsets.ndim}-D")
    else:
        raise ArgumentError(f"embedding_bag: input has to be 1-D or 2-D, got {input.ndim}-D")
    if padding_idx is not None:
        rows = weight.shape[0]
        if not -rows <= padding_idx < rows:
            raise ArgumentError(f"embedding_bag: padding_idx must be within the number of embeddings {rows}, got "
                                f"{padding_idx}")
        padding_idx %= rows
    if max_norm is not None:
        _renorm_(weight, input, max_norm, norm_type)
    return F.embedding_bag(weight, input, offsets, scale_grad_by_freq, _BAG_MODES[mode], sparse, per_sample_weights,
                           include_last_offset, padding_idx)[0]
