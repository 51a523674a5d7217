"""``F.embedding``: PyTorch's signature over the schema's embedding op, plus max_norm renormalisation."""
from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...dispatch.ops import F

__all__ = ["embedding"]


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
    """
    if sparse:
        raise NotImplementedError("embedding: sparse gradients are not supported; use sparse=False")
    if max_norm is not None:
        _renorm_(weight, input, max_norm, norm_type)
    return F.embedding(input, weight, padding_idx, scale_grad_by_freq)
