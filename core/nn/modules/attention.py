"""``nn.MultiheadAttention``, with PyTorch's parameters, initialisation, mask conventions and outputs.

The heads are computed together: one projection, a reshape to ``(N, heads, L, head_dim)`` and the
``scaled_dot_product_attention`` op, or its ``attention`` routine where the weights are asked for. Internally
the layout is batch-major, so ``batch_first`` inputs need no transposes at all.
"""
from __future__ import annotations

from ...dispatch.dtypes import bool_
from ...dispatch.errors import ShapeError
from ...dispatch.ops import F as ops
from .. import functional as F
from .. import init
from ...dispatch.ops.attention import attention, causal_mask
from ..parameter import Parameter
from .linear import Linear
from .module import Module

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    """Attention over ``num_heads`` subspaces of ``embed_dim``: ``concat(head_1..head_h) W_out``.

    Parameters as in PyTorch: ``in_proj_weight`` ``(3E, E)`` (or ``q_proj_weight``, ``k_proj_weight``,
    ``v_proj_weight`` when ``kdim``/``vdim`` differ from ``embed_dim``), ``in_proj_bias`` ``(3E)``,
    ``out_proj`` (a Linear), and ``bias_k``/``bias_v`` ``(1, 1, E)`` with ``add_bias_kv``. ``dropout`` applies to
    the attention weights in training mode.

    Masks follow PyTorch's MultiheadAttention convention, the opposite of ``scaled_dot_product_attention``'s:
    a bool ``True`` marks a position that may *not* be attended to; float masks are added to the scores.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim must be divisible by num_heads, got {embed_dim} and {num_heads}")
        factory = dict(dtype=dtype, device=device)
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(ops.empty((3 * embed_dim, embed_dim), **factory))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(ops.empty((embed_dim, embed_dim), **factory))
            self.k_proj_weight = Parameter(ops.empty((embed_dim, self.kdim), **factory))
            self.v_proj_weight = Parameter(ops.empty((embed_dim, self.vdim), **factory))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(ops.empty((3 * embed_dim,), **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, **factory)
        if add_bias_kv:
            self.bias_k = Parameter(ops.empty((1, 1, embed_dim), **factory))
            self.bias_v = Parameter(ops.empty((1, 1, embed_dim), **factory))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """PyTorch's init: xavier-uniform projections, zero biases, xavier-normal ``bias_k``/``bias_v``."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for weight in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        for extra in (self.bias_k, self.bias_v):
            if extra is not None:
                init.xavier_normal_(extra)

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True, is_causal: bool = False):
        """``(output, weights)``: output shaped like ``query``; weights ``(N, L, S)`` (averaged over heads) or
        ``(N, heads, L, S)``, or None when ``need_weights`` is False.

        ``query`` is ``(L, N, E)`` (``(N, L, E)`` with ``batch_first``) or unbatched ``(L, E)``; ``key`` and
        ``value`` likewise with ``S`` positions. ``key_padding_mask`` is ``(N, S)``; ``attn_mask`` is
        ``(L, S)`` or ``(N * heads, L, S)``. ``is_causal`` without an ``attn_mask`` applies the causal mask (PyTorch
        insists on the mask being passed too; with a mask it is only a hint, and the mask is used).
        """
        batched = query.ndim == 3
        self._check_shapes(query, key, value, key_padding_mask, attn_mask, batched)
        shared_kv = key is value  # decided before the transposes below make new tensors
        self_attention = shared_kv and query is key
        if not batched:
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif not self.batch_first:
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        # From here on everything is batch-major: (N, L, E).
        batch, length = query.shape[0], query.shape[1]
        q, k, v = self._project(query, key, value, self_attention, shared_kv)
        mask = _merge_masks(attn_mask, key_padding_mask, batch, self.num_heads, length, q.dtype)
        causal = is_causal and attn_mask is None
        if causal and (mask is not None or self.bias_k is not None or self.add_zero_attn):
            # One explicit mask, so that the added keys stay visible to all and rows blocked by the causal and
            # the padding mask together are caught like any other fully-masked row.
            explicit = causal_mask(length, k.shape[1], q.device)
            mask, causal = (explicit if mask is None else _combine(explicit, mask, q.dtype)), False
        if self.bias_k is not None:
            k = ops.cat([k, self.bias_k.expand(batch, 1, self.embed_dim)], 1)
            v = ops.cat([v, self.bias_v.expand(batch, 1, self.embed_dim)], 1)
            mask = _allow_last_key(mask)
        q, k, v = (self._split_heads(t) for t in (q, k, v))
        if self.add_zero_attn:
            zeros = ops.zeros((batch, self.num_heads, 1, self.head_dim), dtype=k.dtype, device=k.device)
            k, v = ops.cat([k, zeros], 2), ops.cat([v, zeros], 2)
            mask = _allow_last_key(mask)
        dropout_p = self.dropout if self.training else 0.0
        if need_weights:
            heads, weights = attention(q, k, v, mask, dropout_p, causal=causal)
        else:  # as PyTorch: the scaled_dot_product_attention op, which autocast runs in low precision
            heads = ops.scaled_dot_product_attention(q, k, v, mask, dropout_p, causal)
        output = self.out_proj(heads.transpose(1, 2).reshape(batch, length, self.embed_dim))
        if not batched:
            output = output.squeeze(0)
        elif not self.batch_first:
            output = output.transpose(0, 1)
        if not need_weights:
            return output, None
        if average_attn_weights:
            weights = weights.mean(1)
        return output, (weights if batched else weights.squeeze(0))

    def _project(self, query, key, value, self_attention: bool, shared_kv: bool):
        """The input projections, with as few matmuls as the inputs allow: one for self-attention (one tensor
        as query, key and value), two when key is value (encoder-decoder attention), else three."""
        weight, bias = self.in_proj_weight, self.in_proj_bias
        packed = self._qkv_same_embed_dim
        if packed and self_attention:
            return F.linear(query, weight, bias).chunk(3, -1)
        e = self.embed_dim
        weights = weight.chunk(3) if packed else (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        biases = (None, None, None) if bias is None else bias.chunk(3)
        q = F.linear(query, weights[0], biases[0])
        if packed and shared_kv:
            k, v = F.linear(key, weight[e:], None if bias is None else bias[e:]).chunk(2, -1)
            return q, k, v
        return q, F.linear(key, weights[1], biases[1]), F.linear(value, weights[2], biases[2])

    def _split_heads(self, x):
        """``(N, L, E)`` to ``(N, heads, L, head_dim)``."""
        return x.reshape(x.shape[0], x.shape[1], self.num_heads, self.head_dim).transpose(1, 2)

    def _check_shapes(self, query, key, value, key_padding_mask, attn_mask, batched: bool) -> None:
        name = "MultiheadAttention"
        shapes = f"query {tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
        rank = 3 if batched else 2
        if query.ndim not in (2, 3) or key.ndim != rank or value.ndim != rank:
            raise ShapeError(f"{name}: query, key and value must all be 3-D (batched) or all 2-D (unbatched), got "
                             f"{shapes}")
        if query.shape[-1] != self.embed_dim or key.shape[-1] != self.kdim or value.shape[-1] != self.vdim:
            raise ShapeError(f"{name}: expected last dimensions embed_dim={self.embed_dim}, kdim={self.kdim}, "
                             f"vdim={self.vdim}, got {shapes}")
        if tuple(key.shape[:-1]) != tuple(value.shape[:-1]):
            raise ShapeError(f"{name}: key and value must have the same sequence length and batch size, got {shapes}")
        seq_dim = 1 if (batched and self.batch_first) else 0
        batch = None if not batched else query.shape[1 - seq_dim]
        if batched and key.shape[1 - seq_dim] != batch:
            raise ShapeError(f"{name}: query and key must have the same batch size, got {shapes}")
        length, source = query.shape[seq_dim], key.shape[seq_dim]
        if key_padding_mask is not None:
            expected = (batch, source) if batched else (source,)
            if tuple(key_padding_mask.shape) != expected:
                raise ShapeError(f"{name}: expected key_padding_mask of shape {expected}, got "
                                 f"{tuple(key_padding_mask.shape)}")
        if attn_mask is not None:
            allowed = [(length, source), ((batch if batched else 1) * self.num_heads, length, source)]
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
    return ops.add(_additive(a, dtype), _additive(b, dtype))


def _additive(mask, dtype):
    if mask.dtype is not bool_:
        return mask
    return ops.zeros(tuple(mask.shape), dtype=dtype, device=mask.device).masked_fill(mask.logical_not(),
                                                                                     float("-inf"))


def _allow_last_key(mask):
    """Extend the mask by one key (an added ``bias_k`` or zero key) that every query may attend to."""
    if mask is None:
        return None
    return F.pad(mask, (0, 1), value=True if mask.dtype is bool_ else 0.0)
