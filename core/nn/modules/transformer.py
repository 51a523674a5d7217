"""Transformer layers, stacks and the full encoder-decoder, as in "Attention Is All You Need" and PyTorch.

Submodule names (``self_attn``, ``linear1``, ``dropout``, ``linear2``, ``norm1``..., ``multihead_attn``) and
their registration order are PyTorch's, so state_dicts move between the two frameworks unchanged.
"""
from __future__ import annotations

import copy

from ...dispatch.ops import F as ops
from .. import functional as F
from .. import init
from ..parameter import Parameter, is_parameter
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer", "TransformerDecoder",
           "Transformer"]


def _activation(activation):
    """'relu' / 'gelu' to the function; any callable (a function or a Module) is used as given."""
    if isinstance(activation, str):
        if activation == "relu":
            return F.relu
        if activation == "gelu":
            return F.gelu
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    if not callable(activation):
        raise TypeError(f"activation should be 'relu', 'gelu' or a callable, got {type(activation).__name__}")
    return activation


def _clones(module: Module, n: int) -> ModuleList:
    """``n`` independent deep copies of ``module`` (each layer of a stack trains its own weights)."""
    clones = [copy.deepcopy(module) for _ in range(n)]
    for clone in clones:  # a deep-copied Parameter must still be a Parameter (see _reregister)
        _reregister(clone)
    return ModuleList(clones)


def _reregister(module: Module) -> None:
    """Mark every parameter of ``module`` as an ``nn.Parameter`` again.

    Parameters are registered by identity, and ``Tensor.__deepcopy__`` does not carry the registration
    over to the copy; without this, ``isinstance(p, nn.Parameter)`` would be False in the clones.
    """
    for sub in module.modules():
        for name, param in sub._parameters.items():
            if param is not None and not is_parameter(param):
                sub._parameters[name] = Parameter(param, requires_grad=param.requires_grad)


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual connection and a LayerNorm.

    ``norm_first=False`` (post-norm, the original paper): ``x = norm(x + block(x))``. ``norm_first=True``
    (pre-norm, easier to train deep): ``x = x + block(norm(x))``. ``activation`` is 'relu', 'gelu' or a callable.
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        factory = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        """``src`` is ``(S, N, E)`` (``(N, S, E)`` with ``batch_first``) or unbatched ``(S, E)``; masks as in
        MultiheadAttention."""
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's ``memory``, then feed-forward; residuals and LayerNorms
    placed as in TransformerEncoderLayer."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        factory = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            **factory)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool = False, memory_is_causal: bool = False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _mha_block(self, x, memory, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, memory, memory, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                need_weights=False, is_causal=is_causal)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """``num_layers`` independent copies of ``encoder_layer`` applied in turn, then ``norm`` if given."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal: bool | None = None):
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                           is_causal=bool(is_causal))
        return output if self.norm is None else self.norm(output)


class TransformerDecoder(Module):
    """``num_layers`` independent copies of ``decoder_layer`` applied in turn, then ``norm`` if given."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool | None = None, memory_is_causal: bool = False):
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=bool(tgt_is_causal),
                           memory_is_causal=memory_is_causal)
        return output if self.norm is None else self.norm(output)


class Transformer(Module):
    """The encoder-decoder model: ``decoder(tgt, encoder(src))``, each stack ending in a LayerNorm.

    As in PyTorch, every parameter with more than one dimension is re-initialised with xavier_uniform_.
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1, activation="relu", custom_encoder=None,
                 custom_decoder=None, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        factory = dict(device=device, dtype=dtype)
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first,
                      bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(TransformerEncoderLayer(*layer_args, **factory), num_encoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(TransformerDecoderLayer(*layer_args, **factory), num_decoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        for param in self.parameters():
            if param.ndim > 1:
                init.xavier_uniform_(param)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal: bool | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False):
        batch_dim = 0 if self.batch_first else 1
        if src.ndim == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError(f"Transformer: the batch number of src and tgt must be equal, got src "
                               f"{tuple(src.shape)} and tgt {tuple(tgt.shape)}")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError(f"Transformer: the feature number of src and tgt must be equal to d_model "
                               f"({self.d_model}), got src {tuple(src.shape)} and tgt {tuple(tgt.shape)}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None):
        """The float causal mask: 0 on and below the diagonal, -inf above (position i sees 0..i)."""
        return ops.triu(ops.full((sz, sz), float("-inf"), dtype=dtype, device=device), 1)
