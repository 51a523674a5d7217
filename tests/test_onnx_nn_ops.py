"""ONNX lowerings of the nn ops (convolution, pooling, normalization, attention, activations), run in
onnxruntime at other batch sizes and sequence lengths than the export used, and their clear refusals."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import functional as F
from ember.onnx import UnsupportedOperatorError

from onnx_check import Fn, check_export, export_bytes, run_onnx

BATCH = {0: "batch"}


class SmallCNN(nn.Module):
    """conv, batch norm (eval), relu, max/avg pool, dropout (eval), grouped dilated 'same' conv, adaptive pool."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 8, 3, padding="same", dilation=2, groups=2, bias=False)
        self.pool2 = nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
        self.drop = nn.Dropout(0.5)
        self.head = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        x = self.pool1(F.relu(self.bn(self.conv1(x))))
        x = self.drop(self.pool2(F.gelu(self.conv2(x))))
        return self.head(x)


def _trained_statistics(model: SmallCNN) -> None:
    """Non-trivial running statistics, as after training."""
    model.train()
    with ember.no_grad():
        for _ in range(3):
            model(ember.randn(4, 3, 12, 12) * 2 + 0.5)


def test_cnn_with_batch_norm_and_pools_runs_at_another_batch_size():
    ember.manual_seed(0)
    model = SmallCNN()
    _trained_statistics(model)
    worst = check_export(model, (ember.randn(2, 3, 12, 12),), (ember.randn(5, 3, 12, 12),), input_names=["x"],
                         dynamic_axes={"x": BATCH})
    assert worst < 1e-5


def test_conv1d_follows_a_dynamic_length():
    ember.manual_seed(1)
    conv = nn.Conv1d(4, 6, 5, padding=1, dilation=2)
    same = nn.Conv1d(6, 6, 4, padding="same", dilation=2)
    model = Fn(lambda x: same(conv(x)))
    worst = check_export(model, (ember.randn(2, 4, 16),), (ember.randn(3, 4, 37),), input_names=["x"],
                         dynamic_axes={"x": {0: "batch", 2: "length"}})
    assert worst < 1e-5
    strided = nn.Conv1d(4, 6, 5, stride=2, padding=2)
    assert check_export(strided, (ember.randn(2, 4, 16),), (ember.randn(5, 4, 16),), input_names=["x"],
                        dynamic_axes={"x": BATCH}) < 1e-5


def test_unbatched_conv_and_pool():
    ember.manual_seed(2)
    conv = nn.Conv2d(2, 3, 3, stride=(2, 1), padding=(1, 0))
    model = Fn(lambda x: F.max_pool2d(conv(x), 2, ceil_mode=True))
    assert check_export(model, (ember.randn(2, 9, 8),)) < 1e-5


def test_conv_transpose_with_output_padding_not_below_the_stride():
    """PyTorch allows output_padding < dilation; onnxruntime refuses output_padding >= stride, so the lowering
    pads the end itself and adds the bias after."""
    ember.manual_seed(3)
    up = nn.ConvTranspose2d(4, 2, 3, stride=1, padding=0, output_padding=1, dilation=2)
    worst = check_export(up, (ember.randn(2, 4, 5, 5),), (ember.randn(3, 4, 5, 5),), input_names=["x"],
                         dynamic_axes={"x": BATCH})
    assert worst < 1e-5
    strided = nn.ConvTranspose2d(4, 4, 3, stride=2, padding=1, output_padding=1, groups=2)
    assert check_export(strided, (ember.randn(1, 4, 6, 7),)) < 1e-5


def test_integer_max_pool_is_exact_beyond_float64_precision():
    base = 2 ** 60
    x = ember.tensor(np.arange(2 * 7 * 6, dtype=np.int64).reshape(1, 2, 7, 6) + base)
    model = Fn(lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True))
    data = export_bytes(model, (x,), input_names=["x"])
    got = run_onnx(data, {"x": x})[0]
    np.testing.assert_array_equal(got, model(x).numpy())
    assert got.dtype == np.int64


def test_avg_pool_divisor_override_and_padding_counts():
    ember.manual_seed(4)
    x = ember.randn(2, 3, 8, 7)
    for kwargs in ({"divisor_override": 5}, {"count_include_pad": False}, {"count_include_pad": True}):
        model = Fn(lambda x, kwargs=kwargs: F.avg_pool2d(x, 3, stride=2, padding=1, **kwargs))
        assert check_export(model, (x,)) < 1e-5, kwargs


def test_adaptive_avg_pool_exact_or_refused():
    ember.manual_seed(5)
    assert check_export(Fn(lambda x: F.adaptive_avg_pool2d(x, (2, 3))), (ember.randn(2, 3, 8, 9),)) < 1e-5
    with pytest.raises(UnsupportedOperatorError, match=r"adaptive_avg_pool2d.*does not divide"):
        export_bytes(Fn(lambda x: F.adaptive_avg_pool2d(x, 3)), (ember.randn(1, 2, 7, 7),))


def test_batch_norm_with_batch_statistics_is_refused():
    mean, var = ember.zeros(4), ember.ones(4)
    model = Fn(lambda x: F.batch_norm(x, mean, var, training=True))
    with pytest.raises(UnsupportedOperatorError, match=r"batch_norm.*training.*eval\(\)"):
        export_bytes(model, (ember.randn(3, 4),))


def test_layer_and_group_norm_at_another_batch_size():
    ember.manual_seed(6)
    layer, group = nn.LayerNorm([5, 6]), nn.GroupNorm(2, 4)
    with ember.no_grad():
        for p in (*layer.parameters(), *group.parameters()):
            p.copy_(ember.randn(*p.shape))
    model = Fn(lambda x: group(layer(x)))
    worst = check_export(model, (ember.randn(2, 4, 5, 6),), (ember.randn(3, 4, 5, 6),), input_names=["x"],
                         dynamic_axes={"x": BATCH})
    assert worst < 1e-5


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_modes_at_another_batch_size(mode):
    ember.manual_seed(7)
    model = Fn(lambda x: F.pad(x, (2, 1, -1, 2), mode=mode))
    worst = check_export(model, (ember.randn(2, 3, 5, 6),), (ember.randn(4, 3, 5, 6),), input_names=["x"],
                         dynamic_axes={"x": BATCH})
    assert worst < 1e-6


def test_causal_attention_mask_follows_the_sequence_length():
    ember.manual_seed(8)
    model = Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True))
    axes = {name: {0: "batch", 2: "sequence"} for name in ("q", "k", "v")}
    export_args = tuple(ember.randn(2, 3, 4, 8) for _ in range(3))
    run_args = tuple(ember.randn(1, 3, 9, 8) for _ in range(3))
    worst = check_export(model, export_args, run_args, input_names=["q", "k", "v"], dynamic_axes=axes)
    assert worst < 1e-5


def test_attention_masks_scale_and_grouped_heads():
    ember.manual_seed(9)
    q, k, v = ember.randn(2, 4, 3, 8), ember.randn(2, 2, 5, 8), ember.randn(2, 2, 5, 6)
    bool_mask = ember.rand(2, 1, 3, 5) > 0.4
    bool_mask[0, 0, 1] = False  # a fully-masked query row gives zeros, as in PyTorch
    float_mask = ember.randn(3, 5)
    float_mask[2] = float("-inf")
    grouped = Fn(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m, enable_gqa=True))
    assert check_export(grouped, (q, k, v, bool_mask)) < 1e-5
    assert np.all(grouped(q, k, v, bool_mask).numpy()[0, :, 1] == 0)
    scaled = Fn(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m, scale=0.3, enable_gqa=True))
    assert check_export(scaled, (q, k, v, float_mask)) < 1e-5
    assert np.all(scaled(q, k, v, float_mask).numpy()[:, :, 2] == 0)


def test_attention_dropout_is_refused():
    q = ember.randn(1, 2, 4)
    with pytest.raises(UnsupportedOperatorError, match=r"scaled_dot_product_attention.*dropout_p"):
        export_bytes(Fn(lambda q: F.scaled_dot_product_attention(q, q, q, dropout_p=0.1)), (q,))


@pytest.mark.parametrize("opset", [17, 20])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_at_both_sides_of_opset_20(opset, approximate):
    x = ember.linspace(-6, 6, 50).reshape(5, 10)
    model = Fn(lambda x: F.gelu(x, approximate=approximate))
    assert check_export(model, (x,), opset_version=opset) < 1e-5


def test_embedding_with_a_padding_index_at_other_sizes():
    ember.manual_seed(10)
    table = nn.Embedding(12, 5, padding_idx=0)
    worst = check_export(table, (ember.randint(0, 12, (2, 3)),), (ember.randint(0, 12, (4, 7)),),
                         input_names=["tokens"], dynamic_axes={"tokens": {0: "batch", 1: "sequence"}})
    assert worst == 0.0


def test_cross_entropy_with_label_smoothing_is_refused():
    logits, target = ember.randn(4, 3), ember.randint(0, 3, (4,))
    with pytest.raises(UnsupportedOperatorError, match=r"cross_entropy_indices.*label_smoothing"):
        export_bytes(Fn(lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1)), (logits, target))
    assert check_export(Fn(lambda x, t: F.cross_entropy(x, t)), (logits, target)) < 1e-5
