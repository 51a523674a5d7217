"""``scaled_dot_product_attention`` with PyTorch's functional signature.

The computation is an op of the schema (``ember.dispatch.ops.attention``): a composite of Ember ops that
every backend runs, that autocast sees, and that a backend may fuse. Its ``attention`` routine, which
returns the weights too, serves ``nn.MultiheadAttention``.
"""
from __future__ import annotations

from ...dispatch.ops import F

__all__ = ["scaled_dot_product_attention"]


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None, enable_gqa: bool = False):
    """``softmax(query @ key^T * scale + mask) @ value`` over the last two dimensions, as PyTorch computes it.

    ``query`` is ``(..., L, E)``, ``key`` ``(..., S, E)``, ``value`` ``(..., S, Ev)``; leading dimensions
    broadcast. ``attn_mask`` broadcasts to ``(..., L, S)``: a bool mask marks with True the positions that *take
    part*; a float mask (of the query's dtype) is added to the scores. ``is_causal`` lets query ``i`` see keys
    ``0..i`` (top-left aligned, like PyTorch). ``scale`` defaults to ``1/sqrt(E)``. Dropout is applied to the
    attention weights whenever ``dropout_p > 0`` (the function has no training flag; callers pass 0 in eval
    mode). With ``enable_gqa`` key and value may have fewer heads (dimension -3) than query, which they are
    repeated to.

    A query row whose keys are all masked out returns zeros rather than NaN, as PyTorch's does.
    """
    return F.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale=scale,
                                          enable_gqa=enable_gqa)
