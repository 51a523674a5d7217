"""``nn.MultiheadAttention``, with PyTorch's parameters, initialisation, mask conventions and outputs.

The computation is ``F.multi_head_attention_forward`` (PyTorch's functional form, sequence-first); the module
holds the parameters and moves ``batch_first`` inputs to that layout.
"""
from __future__ import annotations

from ...dispatch.ops import F as ops
from .. import functional as F
from .. import init
from ..functional.attention import blocking_causal_mask, check_attention_shapes
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
        The computation is ``F.multi_head_attention_forward``'s.
        """
        batched = query.ndim == 3
        check_attention_shapes("MultiheadAttention", query, key, value, key_padding_mask, attn_mask, self.num_heads,
                               batched, seq_dim=1 if (batched and self.batch_first) else 0,
                               last_dims=(self.embed_dim, self.kdim, self.vdim))
        if batched and self.batch_first:  # the functional form is sequence-first; keep q is k is v visible
            shared_kv, self_attention = key is value, query is key and key is value
            query = query.transpose(0, 1)
            key = query if self_attention else key.transpose(0, 1)
            value = key if shared_kv else value.transpose(0, 1)
        if is_causal and attn_mask is None:
            attn_mask = blocking_causal_mask(query.shape[0], key.shape[0], query.device)
        output, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias, self.bias_k,
            self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if batched and self.batch_first:
            output = output.transpose(0, 1)
        return output, weights
