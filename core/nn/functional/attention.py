"""``scaled_dot_product_attention`` and ``multi_head_attention_forward`` with PyTorch's functional signatures.

The attention computation is an op of the schema (``ember.dispatch.ops.nn.attention``): a composite of Ember ops
that every backend runs, that autocast sees, and that a backend may fuse. Its ``attention`` routine, which
returns the weights too, serves ``multi_head_attention_forward``, which ``nn.MultiheadAttention`` calls.
Inside, the heads are computed together in a batch-major layout ``(N, heads, L, head_dim)``.
"""
from __future__ import annotations

from ...dispatch.schema.dtypes import bool_
from ...dispatch.schema.errors import ArgumentError, ShapeError
from ...dispatch.ops import F
from ...dispatch.ops.nn.attention import attention, causal_mask
from ...tensor import Tensor

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


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


def multi_head_attention_forward(query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
                                 in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None,
                                 bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float,
                                 out_proj_weight: Tensor, out_proj_bias: Tensor | None, training: bool = True,
                                 key_padding_mask: Tensor | None = None, need_weights: bool = True,
                                 attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
                                 q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
                                 v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
                                 static_v: Tensor | None = None, average_attn_weights: bool = True,
                                 is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
    """Multi-head attention in PyTorch's sequence-first layout: ``query`` ``(L, N, E)`` (unbatched ``(L, E)``),
    ``key``/``value`` ``(S, N, kdim/vdim)``. Returns ``(output (L, N, E), weights)``; the weights are
    ``(N, L, S)`` averaged over heads, ``(N, heads, L, S)`` without ``average_attn_weights``, None without
    ``need_weights``.

    Masks use MultiheadAttention's convention: a bool True marks a position that may *not* be attended to, a
    float mask is added to the scores; ``key_padding_mask`` is ``(N, S)``, ``attn_mask`` ``(L, S)`` or
    ``(N * heads, L, S)``. ``is_causal`` is a hint that ``attn_mask`` is the causal mask (which must be given,
    as PyTorch requires). ``static_k``/``static_v`` ``(N * heads, S, head_dim)`` replace the projected keys and
    values. Dropout on the attention weights applies only when ``training``.
    """
    batched = query.ndim == 3
    embed_dim = query.shape[-1]
    if embed_dim != embed_dim_to_check:
        raise ShapeError(f"multi_head_attention_forward: was expecting embedding dimension of {embed_dim_to_check}, "
                         f"but got {embed_dim}")
    if embed_dim % num_heads:
        raise ArgumentError(f"multi_head_attention_forward: embed_dim {embed_dim} not divisible by num_heads "
                            f"{num_heads}")
    if is_causal and attn_mask is None:
        raise RuntimeError("multi_head_attention_forward: need attn_mask if specifying the is_causal hint; pass "
                           "the causal mask (e.g. nn.Transformer.generate_square_subsequent_mask)")
    check_attention_shapes("multi_head_attention_forward", query, key, value, key_padding_mask, attn_mask,
                           num_heads, batched)
    self_attention, shared_kv = query is key and key is value, key is value
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)  # (N, L, E)
    batch, length = query.shape[0], query.shape[1]
    head_dim = embed_dim // num_heads
    weights = (q_proj_weight, k_proj_weight, v_proj_weight) if use_separate_proj_weight else in_proj_weight
    q, k, v = _project(query, key, value, weights, in_proj_bias, self_attention, shared_kv)
    mask = _merge_masks(attn_mask, key_padding_mask, batch, num_heads, length, q.dtype)
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise ArgumentError("multi_head_attention_forward: bias cannot be added to static key or value")
        k = F.cat([k, bias_k.reshape(1, 1, embed_dim).expand(batch, 1, embed_dim)], 1)
        v = F.cat([v, bias_v.reshape(1, 1, embed_dim).expand(batch, 1, embed_dim)], 1)
        mask = _allow_last_key(mask)
    q, k, v = (_split_heads(t, num_heads, head_dim) for t in (q, k, v))
    k = k if static_k is None else _static(static_k, "static_k", batch, num_heads, head_dim)
    v = v if static_v is None else _static(static_v, "static_v", batch, num_heads, head_dim)
    if add_zero_attn:
        zeros = F.zeros((batch, num_heads, 1, head_dim), dtype=k.dtype, device=k.device)
        k, v = F.cat([k, zeros], 2), F.cat([v, zeros], 2)
        mask = _allow_last_key(mask)
    dropout_p = dropout_p if training else 0.0
    if need_weights:
        heads, attn = attention(q, k, v, mask, dropout_p)
    else:  # as PyTorch: the scaled_dot_product_attention op, which autocast runs in low precision
        heads, attn = F.scaled_dot_product_attention(q, k, v, mask, dropout_p, False), None
    output = F.linear(heads.transpose(1, 2).reshape(batch, length, embed_dim), out_proj_weight, out_proj_bias)
    output = output.transpose(0, 1) if batched else output.squeeze(0)
    if attn is None:
        return output, None
    if average_attn_weights:
        attn = attn.mean(1)
    return output, (attn if batched else attn.squeeze(0))


def _project(query, key, value, weights, bias, self_attention: bool, shared_kv: bool):
    """The input projections with as few matmuls as the inputs allow: one for self-attention with the packed
    weight, two when key is value, else three."""
    packed = isinstance(weights, Tensor)
    if packed and self_attention:
        return F.linear(query, weights, bias).chunk(3, -1)
    if packed:
        e = weights.shape[0] // 3
        q_w, k_w, v_w = weights[:e], weights[e:2 * e], weights[2 * e:]
    else:
        q_w, k_w, v_w = weights
        e = q_w.shape[0]
    q_b, k_b, v_b = (None, None, None) if bias is None else (bias[:e], bias[e:2 * e], bias[2 * e:])
    q = F.linear(query, q_w, q_b)
    if packed and shared_kv:
        k, v = F.linear(key, weights[e:], None if bias is None else bias[e:]).chunk(2, -1)
        return q, k, v
    return q, F.linear(key, k_w, k_b), F.linear(value, v_w, v_b)


def _split_heads(x, heads: int, head_dim: int):
    """``(N, L, E)`` to ``(N, heads, L, head_dim)``."""
    return x.reshape(x.shape[0], x.shape[1], heads, head_dim).transpose(1, 2)


def _static(t, name: str, batch: int, heads: int, head_dim: int):
    """A precomputed ``(N * heads, S, head_dim)`` key or value, as ``(N, heads, S, head_dim)``."""
    if t.ndim != 3 or t.shape[0] != batch * heads or t.shape[2] != head_dim:
        raise ShapeError(f"multi_head_attention_forward: expecting {name} of shape ({batch * heads}, S, {head_dim}), "
                         f"but got {tuple(t.shape)}")
    return t.reshape(batch, heads, t.shape[1], head_dim)


def check_attention_shapes(name: str, query, key, value, key_padding_mask, attn_mask, heads: int, batched: bool,
                           seq_dim: int = 0, last_dims: tuple[int, int, int] | None = None) -> None:
    """ShapeError (naming ``name``) unless query, key, value and the masks fit together; ``seq_dim`` is 1 for
    batch-first inputs, and ``last_dims`` the (embed_dim, kdim, vdim) the inputs must end in, if known."""
    shapes = f"query {tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
    rank = 3 if batched else 2
    if query.ndim not in (2, 3) or key.ndim != rank or value.ndim != rank:
        raise ShapeError(f"{name}: query, key and value must all be 3-D (batched) or all 2-D (unbatched), got "
                         f"{shapes}")
    if last_dims is not None and (query.shape[-1], key.shape[-1], value.shape[-1]) != tuple(last_dims):
        embed_dim, kdim, vdim = last_dims
        raise ShapeError(f"{name}: expected last dimensions embed_dim={embed_dim}, kdim={kdim}, vdim={vdim}, got "
                         f"{shapes}")
    if tuple(key.shape[:-1]) != tuple(value.shape[:-1]):
        raise ShapeError(f"{name}: key and value must have the same sequence length and batch size, got {shapes}")
    batch = query.shape[1 - seq_dim] if batched else None
    if batched and key.shape[1 - seq_dim] != batch:
        raise ShapeError(f"{name}: query and key must have the same batch size, got {shapes}")
    length, source = query.shape[seq_dim], key.shape[seq_dim]
    if key_padding_mask is not None:
        expected = (batch, source) if batched else (source,)
        if tuple(key_padding_mask.shape) != expected:
            raise ShapeError(f"{name}: expected key_padding_mask of shape {expected}, got "
                             f"{tuple(key_padding_mask.shape)}")
    if attn_mask is not None:
        allowed = [(length, source), ((batch if batched else 1) * heads, length, source)]
        if tuple(attn_mask.shape) not in allowed:
            raise ShapeError(f"{name}: attn_mask must be of shape {allowed[0]} or {allowed[1]}, got "
                             f"{tuple(attn_mask.shape)}")


def _merge_masks(attn_mask, key_padding_mask, batch: int, heads: int, length: int, dtype):
    """One mask in ``attention``'s convention (bool True = attend; float added), broadcastable to (N, H, L, S).

    Two bool masks stay bool (one ``masked_fill`` on the scores); if either is float, both become additive.
    """
    masks = []
    if attn_mask is not None:
        if attn_mask.ndim == 3:
            attn_mask = attn_mask.reshape(batch, heads, length, attn_mask.shape[-1])
        masks.append(attn_mask)
    if key_padding_mask is not None:
        masks.append(key_padding_mask.reshape(batch, 1, 1, key_padding_mask.shape[-1]))
    masks = [m.logical_not() if m.dtype is bool_ else m for m in masks]  # blocked -> allowed
    if not masks:
        return None
    return masks[0] if len(masks) == 1 else _combine(masks[0], masks[1], dtype)


def _combine(a, b, dtype):
    """Both masks at once: ``a & b`` if both are bool, else the sum of their additive forms."""
    if a.dtype is bool_ and b.dtype is bool_:
        return a.logical_and(b)
    return F.add(_additive(a, dtype), _additive(b, dtype))


def _additive(mask, dtype):
    if mask.dtype is not bool_:
        return mask
    return F.zeros(tuple(mask.shape), dtype=dtype, device=mask.device).masked_fill(mask.logical_not(), float("-inf"))


def _allow_last_key(mask):
    """Extend the mask by one key (an added ``bias_k`` or zero key) that every query may attend to."""
    if mask is None:
        return None
    return F.pad(mask, (0, 1), value=True if mask.dtype is bool_ else 0.0)


def blocking_causal_mask(length: int, source_length: int, device):
    """The causal mask in MultiheadAttention's convention: True above the diagonal (positions not attended)."""
    return causal_mask(length, source_length, device).logical_not()
