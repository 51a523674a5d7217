"""Whole models exported to ONNX and run in onnxruntime at other batch sizes and lengths than the export used.

The recurrent language models are in test_onnx_rnn.py. Each test returns the worst absolute difference
through ``check_export``, within float32 tolerance of Ember's own result.
"""
from __future__ import annotations

import math

import pytest

import ember
from ember import nn
from ember.nn import functional as F

from compile_models import gpt_example
from onnx_check import check_export


def _seeded(seed: int = 0) -> None:
    ember.manual_seed(seed)


def test_mlp_with_dynamic_batch():
    _seeded()
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4))
    worst = check_export(model, (ember.randn(8, 12),), (ember.randn(3, 12),), input_names=["x"],
                         dynamic_axes={"x": {0: "batch"}})
    assert worst < 1e-5


class SmallCNN(nn.Module):
    """conv, batch norm (eval), max and average pooling, dropout (eval), then a linear classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.AvgPool2d(2))
        self.dropout = nn.Dropout(0.3)
        self.classifier = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = self.features(x)
        return self.classifier(self.dropout(ember.flatten(x, 1)))


def _trained_statistics(model: nn.Module, batch) -> None:
    """A few training-mode passes so the batch norms hold running statistics other than 0 and 1."""
    model.train()
    with ember.no_grad():
        for _ in range(3):
            model(batch)
    model.eval()


def test_cnn_with_batch_norm_pooling_and_dropout_in_eval():
    _seeded()
    model = SmallCNN()
    _trained_statistics(model, ember.randn(16, 3, 16, 16))
    worst = check_export(model, (ember.randn(4, 3, 16, 16),), (ember.randn(7, 3, 16, 16),), input_names=["images"],
                         dynamic_axes={"images": {0: "batch"}}, atol=1e-4)
    assert worst < 1e-4


class PositionalEncoding(nn.Module):
    """The sinusoidal table of "Attention Is All You Need", added to the first ``T`` positions."""

    def __init__(self, d_model: int, max_len: int = 64) -> None:
        super().__init__()
        position = ember.arange(max_len).unsqueeze(1).float()
        scale = ember.exp(ember.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        table = ember.zeros(max_len, d_model)
        table[:, 0::2] = ember.sin(position * scale)
        table[:, 1::2] = ember.cos(position * scale)
        self.register_buffer("table", table)

    def forward(self, x):
        return x + self.table[: x.size(1)]


class CausalEncoderLM(nn.Module):
    """Token embedding, positional encoding, a causal transformer encoder and a decoder to the vocabulary."""

    def __init__(self, vocab: int = 50, d_model: int = 32, heads: int = 4, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.position = PositionalEncoding(d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=64, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)
        self.decoder = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        length = tokens.size(1)
        mask = nn.Transformer.generate_square_subsequent_mask(length)
        x = self.position(self.embed(tokens) * math.sqrt(self.embed.embedding_dim))
        return self.decoder(self.encoder(x, mask=mask, is_causal=True))


def test_transformer_encoder_with_causal_mask_and_positional_encoding():
    _seeded()
    model = CausalEncoderLM()
    tokens = ember.randint(0, 50, (2, 12))
    other = ember.randint(0, 50, (5, 7))
    worst = check_export(model, (tokens,), (other,), input_names=["tokens"],
                         dynamic_axes={"tokens": {0: "batch", 1: "sequence"}}, atol=1e-4)
    assert worst < 1e-4


def test_transformer_masks_positions_causally_in_onnx():
    """A changed last token must leave the earlier positions' outputs unchanged in the exported model too."""
    from onnx_check import export_bytes, run_onnx

    _seeded()
    model = CausalEncoderLM().eval()
    data = export_bytes(model, (ember.randint(0, 50, (2, 10)),), input_names=["tokens"],
                        dynamic_axes={"tokens": {0: "batch", 1: "sequence"}})
    tokens = ember.randint(0, 50, (3, 6))
    changed = tokens.clone()
    changed[:, -1] = (changed[:, -1] + 1) % 50
    a = run_onnx(data, {"tokens": tokens})[0]
    b = run_onnx(data, {"tokens": changed})[0]
    assert abs(a[:, :-1] - b[:, :-1]).max() < 1e-5
    assert abs(a[:, -1] - b[:, -1]).max() > 1e-3


def test_small_gpt():
    _seeded()
    config = gpt_example.GPTConfig(vocab_size=65, block_size=16, n_layer=2, n_head=2, n_embd=32)
    model = gpt_example.gpt(ember, config)
    tokens = ember.randint(0, 65, (2, 16))
    other = ember.randint(0, 65, (3, 9))
    worst = check_export(model, (tokens,), (other,), input_names=["idx"],
                         dynamic_axes={"idx": {0: "batch", 1: "sequence"}}, atol=1e-4)
    assert worst < 1e-4


@pytest.mark.parametrize("opset", [17, 21])
def test_other_opsets(opset):
    _seeded()
    model = CausalEncoderLM(layers=1)
    worst = check_export(model, (ember.randint(0, 50, (2, 8)),), (ember.randint(0, 50, (4, 5)),),
                         input_names=["tokens"], dynamic_axes={"tokens": [0, 1]}, opset_version=opset, atol=1e-4)
    assert worst < 1e-4
