"""Attention: ``scaled_dot_product_attention`` and the multi-head plumbing ``nn.MultiheadAttention`` uses.

Written in Ember ops only (matmul, softmax, where), so every backend runs it and autograd differentiates it;
a backend that wants a fused kernel can override the ops underneath without touching this file.
"""
from __future__ import annotations

import math

from ...dispatch.dtypes import bool_
from ...dispatch.errors import DtypeError, ShapeError
from ...dispatch.ops import F
from .dropout import dropout

__all__ = ["scaled_dot_product_attention"]


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None, enable_gqa: bool = False):
    """``softmax(query @ key^T * scale + mask) @ value`` over the last two dimensions, as PyTorch computes it.

    ``query`` is ``(..., L, E)``, ``key`` ``(..., S, E)``, ``value`` ``(..., S, Ev)``; leading dimensions
    broadcast. ``attn_mask`` broadcasts to ``(..., L, S)``: a bool mask marks with True the positions that *take
    part*; a float mask is added to the scores. ``is_causal`` lets query ``i`` see keys ``0..i`` (top-left
    aligned, like PyTorch). ``scale`` defaults to ``1/sqrt(E)``. Dropout is applied to the attention weights
    whenever ``dropout_p > 0`` (the function has no training flag; callers pass 0 in eval mode). With
    ``enable_gqa`` key and value may have fewer heads (dimension -3) than query, which they are repeated to.

    A query row whose keys are all masked out returns zeros rather than NaN, as PyTorch's does.
    """
    _check_qkv(query, key, value, enable_gqa)
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: give either attn_mask or is_causal=True, not both")
    if enable_gqa:
        key, value = _repeat_heads(key, query.shape[-3]), _repeat_heads(value, query.shape[-3])
    return attention(query, key, value, attn_mask, dropout_p, scale, causal=is_causal)[0]


def attention(query, key, value, mask=None, dropout_p: float = 0.0, scale: float | None = None,
              causal: bool = False):
    """``(output, weights)`` of scaled dot-product attention; the mask as in ``scaled_dot_product_attention``.

    Shared by ``scaled_dot_product_attention`` and ``nn.MultiheadAttention`` (which must return the weights).
    The scale multiplies the query, not the ``L x S`` scores: fewer multiplications when ``E < S``.
    ``causal`` is for the causal mask alone; combined with another mask, fold it in with ``causal_mask``.
    """
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    scores = F.matmul(F.mul(query, scale), F.transpose(key, -2, -1))
    dead = None
    if causal:  # every row keeps at least key 0, so there are no fully-masked rows to take care of
        scores = F.masked_fill(scores, F.logical_not(causal_mask(scores.shape[-2], scores.shape[-1], scores.device)),
                               float("-inf"))
    elif mask is not None:
        mask, dead = _live_mask(mask, scores)
        if mask.dtype is bool_:
            scores = F.masked_fill(scores, F.logical_not(mask), float("-inf"))
        else:
            scores = F.add(scores, mask)
    weights = F.softmax(scores, -1)
    if dead is not None:
        weights = F.masked_fill(weights, dead, 0.0)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    return F.matmul(weights, value), weights


def causal_mask(length: int, source_length: int, device):
    """The bool mask (True = take part) that lets query ``i`` see keys ``0..i``."""
    return F.tril(F.full((length, source_length), True, dtype=bool_, device=device))


def _live_mask(mask, scores):
    """The mask with fully-masked query rows opened up, and those rows (to zero after the softmax).

    A row with every key masked would be softmax over all ``-inf``: NaN forward and NaN gradients that
    ``where`` cannot stop. Opening the row keeps the softmax finite; zeroing its weights afterwards gives
    PyTorch's result (zeros) and a zero gradient. The work is on the mask, which is usually far smaller than
    the scores.
    """
    if mask.dtype is bool_:
        dead = F.logical_not(F.any(mask, -1, keepdim=True))
        return F.logical_or(mask, dead), dead
    if not mask.dtype.is_floating_point:
        raise DtypeError(f"scaled_dot_product_attention: attn_mask must be bool or floating point, got {mask.dtype}")
    if mask.dtype is not scores.dtype:
        mask = F.to_dtype(mask, scores.dtype)
    dead = F.all(F.eq(mask, float("-inf")), -1, keepdim=True)
    return F.masked_fill(mask, dead, 0.0), dead


def _check_qkv(query, key, value, enable_gqa: bool) -> None:
    shapes = f"query {tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
    if min(query.ndim, key.ndim, value.ndim) < 2:
        raise ShapeError(f"scaled_dot_product_attention: query, key and value need at least 2 dimensions, got {shapes}")
    if query.shape[-1] != key.shape[-1]:
        raise ShapeError(f"scaled_dot_product_attention: query and key must share the last (embedding) dimension, "
                         f"got {shapes}")
    if key.shape[-2] != value.shape[-2]:
        raise ShapeError(f"scaled_dot_product_attention: key and value must have the same sequence length "
                         f"(dimension -2), got {shapes}")
    if enable_gqa:
        if min(query.ndim, key.ndim, value.ndim) < 3:
            raise ShapeError(f"scaled_dot_product_attention: enable_gqa needs a head dimension (-3), got {shapes}")
        heads = query.shape[-3]
        if heads % key.shape[-3] or heads % value.shape[-3]:
            raise ShapeError(f"scaled_dot_product_attention: with enable_gqa the query's heads must be a multiple "
                             f"of key's and value's, got {shapes}")


def _repeat_heads(x, heads: int):
    """Repeat each head of ``x`` (dimension -3) in place until there are ``heads``: repeat_interleave."""
    groups = heads // x.shape[-3]
    if groups == 1:
        return x
    shape = tuple(x.shape)
    expanded = F.expand(F.unsqueeze(x, -3), shape[:-2] + (groups,) + shape[-2:])
    return F.reshape(expanded, shape[:-3] + (heads,) + shape[-2:])
