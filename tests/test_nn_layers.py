"""nn layers against PyTorch: the same parameters (copied through load_state_dict) must give the same
outputs and gradients, state_dict keys and reprs must be PyTorch's, and train/eval behaviour (batch
norm's running statistics, dropout) must follow PyTorch's. The ops' own values and derivatives are
checked by the conformance suite; this file checks the layers built on them.
"""
from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest

import ember
from ember.dispatch import use_composite
from ember import nn
from ember.nn import functional as F

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")
tnn = torch.nn

DTYPES = {"float32": (ember.float32, torch.float32, dict(rtol=1e-4, atol=1e-5)),
          "float64": (ember.float64, torch.float64, dict(rtol=1e-10, atol=1e-12))}


def to_ember(t):
    return ember.tensor(t.detach().cpu().numpy())


def to_numpy(t):
    """Values of an Ember or a torch tensor (both spell it the same way)."""
    return t.detach().numpy()


def copy_from_torch(module, reference) -> None:
    """torch's parameters and buffers into the Ember module, through load_state_dict (strict)."""
    module.load_state_dict({k: to_ember(v) for k, v in reference.state_dict().items()})


def close(actual, expected, **tol) -> None:
    np.testing.assert_allclose(to_numpy(actual), to_numpy(expected), **tol)


# -- every layer against PyTorch ---------------------------------------------------------------------------

# name -> (build(module namespace), input shapes): the same constructor call builds the Ember layer and torch's
LAYERS = {
    "Linear": (lambda m: m.Linear(5, 3), [(4, 5)]),
    "Linear-nobias-3d": (lambda m: m.Linear(4, 2, bias=False), [(2, 3, 4)]),
    "Linear-1d-input": (lambda m: m.Linear(4, 3), [(4,)]),
    "Bilinear": (lambda m: m.Bilinear(3, 4, 2), [(5, 3), (5, 4)]),
    "Bilinear-nobias": (lambda m: m.Bilinear(2, 3, 4, bias=False), [(2, 3, 2), (2, 3, 3)]),
    "Identity": (lambda m: m.Identity(7, unused=True), [(3, 4)]),
    "Flatten": (lambda m: m.Flatten(), [(2, 3, 4, 2)]),
    "Flatten-range": (lambda m: m.Flatten(0, 1), [(2, 3, 4)]),
    "Unflatten": (lambda m: m.Unflatten(1, (2, 3)), [(4, 6)]),
    "Conv1d": (lambda m: m.Conv1d(3, 4, 3), [(2, 3, 9)]),
    "Conv1d-strided-groups": (lambda m: m.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2), [(2, 4, 11)]),
    "Conv1d-same-circular": (lambda m: m.Conv1d(2, 3, 4, padding="same", padding_mode="circular"), [(2, 2, 7)]),
    "Conv2d": (lambda m: m.Conv2d(3, 4, 3), [(2, 3, 7, 6)]),
    "Conv2d-pad-stride": (lambda m: m.Conv2d(2, 4, (3, 2), stride=(2, 1), padding=(1, 2), bias=False), [(2, 2, 7, 6)]),
    "Conv2d-groups-dilation": (lambda m: m.Conv2d(4, 4, 3, padding=2, dilation=2, groups=4), [(1, 4, 6, 6)]),
    "Conv2d-same": (lambda m: m.Conv2d(2, 3, (2, 3), padding="same"), [(2, 2, 5, 6)]),
    "Conv2d-valid": (lambda m: m.Conv2d(2, 3, 3, padding="valid"), [(2, 2, 5, 6)]),
    "Conv2d-reflect": (lambda m: m.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), [(2, 2, 5, 6)]),
    "Conv2d-replicate": (lambda m: m.Conv2d(2, 3, 3, padding=(2, 1), padding_mode="replicate"), [(1, 2, 5, 6)]),
    "Conv2d-circular": (lambda m: m.Conv2d(2, 3, 3, padding=1, padding_mode="circular"), [(2, 2, 5, 6)]),
    "Conv2d-same-reflect": (lambda m: m.Conv2d(2, 3, 4, padding="same", padding_mode="reflect"), [(2, 2, 6, 6)]),
    "Conv2d-unbatched": (lambda m: m.Conv2d(3, 2, 2), [(3, 5, 5)]),
    "ConvTranspose2d": (lambda m: m.ConvTranspose2d(3, 2, 3), [(2, 3, 4, 5)]),
    "ConvTranspose2d-stride": (lambda m: m.ConvTranspose2d(4, 6, (3, 2), stride=2, padding=1, output_padding=1,
                                                           groups=2, dilation=(1, 2)), [(2, 4, 3, 4)]),
    "MaxPool2d": (lambda m: m.MaxPool2d(2), [(2, 3, 6, 6)]),
    "MaxPool2d-options": (lambda m: m.MaxPool2d(3, stride=2, padding=1, dilation=1, ceil_mode=True), [(2, 2, 7, 8)]),
    "AvgPool2d": (lambda m: m.AvgPool2d(3, stride=2, padding=1), [(2, 3, 7, 8)]),
    "AvgPool2d-options": (lambda m: m.AvgPool2d(2, ceil_mode=True, count_include_pad=False), [(2, 2, 5, 5)]),
    "AdaptiveAvgPool2d": (lambda m: m.AdaptiveAvgPool2d((3, None)), [(2, 3, 7, 5)]),
    "BatchNorm1d": (lambda m: m.BatchNorm1d(3), [(6, 3)]),
    "BatchNorm1d-3d": (lambda m: m.BatchNorm1d(3, momentum=None), [(4, 3, 5)]),
    "BatchNorm1d-noaffine": (lambda m: m.BatchNorm1d(3, affine=False), [(6, 3)]),
    "BatchNorm1d-nobias": (lambda m: m.BatchNorm1d(3, bias=False), [(6, 3)]),
    "BatchNorm2d": (lambda m: m.BatchNorm2d(4, eps=1e-3, momentum=0.3), [(2, 4, 3, 3)]),
    "BatchNorm2d-untracked": (lambda m: m.BatchNorm2d(3, track_running_stats=False), [(2, 3, 4, 4)]),
    "LayerNorm": (lambda m: m.LayerNorm(5), [(3, 5)]),
    "LayerNorm-2d": (lambda m: m.LayerNorm([3, 4], eps=1e-3), [(2, 3, 4)]),
    "LayerNorm-nobias": (lambda m: m.LayerNorm(4, bias=False), [(2, 3, 4)]),
    "LayerNorm-noaffine": (lambda m: m.LayerNorm(4, elementwise_affine=False), [(2, 3, 4)]),
    "GroupNorm": (lambda m: m.GroupNorm(2, 6), [(3, 6, 4)]),
    "GroupNorm-2d-noaffine": (lambda m: m.GroupNorm(3, 6, affine=False), [(2, 6, 3, 3)]),
    "GroupNorm-nobias": (lambda m: m.GroupNorm(1, 4, eps=1e-3, bias=False), [(2, 4, 5)]),
    "Dropout-eval": (lambda m: m.Dropout(0.4), [(3, 4)]),
    "ReLU": (lambda m: m.ReLU(), [(3, 4)]),
    "ReLU6": (lambda m: m.ReLU6(), [(3, 4)]),
    "LeakyReLU": (lambda m: m.LeakyReLU(0.2), [(3, 4)]),
    "ELU": (lambda m: m.ELU(alpha=0.7), [(3, 4)]),
    "GELU": (lambda m: m.GELU(), [(3, 4)]),
    "GELU-tanh": (lambda m: m.GELU(approximate="tanh"), [(3, 4)]),
    "SiLU": (lambda m: m.SiLU(), [(3, 4)]),
    "Mish": (lambda m: m.Mish(), [(3, 4)]),
    "Softplus": (lambda m: m.Softplus(beta=2.0, threshold=3.0), [(3, 4)]),
    "Tanh": (lambda m: m.Tanh(), [(3, 4)]),
    "Sigmoid": (lambda m: m.Sigmoid(), [(3, 4)]),
    "LogSigmoid": (lambda m: m.LogSigmoid(), [(3, 4)]),
    "Hardtanh": (lambda m: m.Hardtanh(-0.5, 1.5), [(3, 4)]),
    "Softmax": (lambda m: m.Softmax(dim=1), [(3, 4, 2)]),
    "LogSoftmax": (lambda m: m.LogSoftmax(dim=-1), [(3, 4)]),
}

# compared in evaluation mode (dropout draws differ between the libraries)
EVAL_ONLY = {"Dropout-eval"}


#: ops of layers.py that the CPU backend overrides with NumPy kernels: the layers run both paths
LAYER_OPS = ("linear", "bilinear", "embedding", "batch_norm", "native_batch_norm", "layer_norm", "group_norm")


@pytest.fixture(params=["kernel", "composite"])
def path(request, monkeypatch):
    """The CPU backend's kernels, or the composites in Ember ops that every other backend runs."""
    with contextlib.ExitStack() as stack:
        if request.param == "composite":
            for name in LAYER_OPS:
                stack.enter_context(use_composite(name, "cpu"))
        yield request.param


def _build(name, dtype_name):
    factory, shapes = LAYERS[name]
    ember_dtype, torch_dtype, tol = DTYPES[dtype_name]
    torch.manual_seed(0)
    reference = factory(tnn).to(torch_dtype)
    module = factory(nn).to(ember_dtype)
    copy_from_torch(module, reference)
    if name in EVAL_ONLY:
        module.eval()
        reference.eval()
    rng = np.random.default_rng(1)
    inputs = [rng.uniform(-2, 2, size=s) for s in shapes]
    return module, reference, inputs, tol


@pytest.mark.parametrize("dtype_name", list(DTYPES))
@pytest.mark.parametrize("name", list(LAYERS))
def test_forward_and_gradients_match_torch(name, dtype_name, path):
    module, reference, inputs, tol = _build(name, dtype_name)
    ember_dtype, torch_dtype, _ = DTYPES[dtype_name]
    xs = [ember.tensor(x, dtype=ember_dtype, requires_grad=True) for x in inputs]
    ts = [torch.tensor(x, dtype=torch_dtype, requires_grad=True) for x in inputs]
    out, expected = module(*xs), reference(*ts)
    assert tuple(out.shape) == tuple(expected.shape)
    assert out.dtype is ember_dtype
    close(out, expected, **tol)

    upstream = np.random.default_rng(2).standard_normal(tuple(expected.shape))
    out.backward(ember.tensor(upstream, dtype=ember_dtype))
    expected.backward(torch.tensor(upstream, dtype=torch_dtype))
    for x, t in zip(xs, ts):
        close(x.grad, t.grad, **tol)
    grads = dict(reference.named_parameters())
    for key, param in module.named_parameters():
        assert param.grad is not None, f"{name}: no gradient for {key}"
        close(param.grad, grads[key].grad, **tol)
    for key, buffer in reference.named_buffers():  # running statistics after one training step
        close(module.get_buffer(key), buffer, **tol)


@pytest.mark.parametrize("name", list(LAYERS))
def test_state_dict_keys_and_repr_match_torch(name):
    factory, _ = LAYERS[name]
    module, reference = factory(nn), factory(tnn)
    assert list(module.state_dict()) == list(reference.state_dict())
    assert [k for k, _ in module.named_parameters()] == [k for k, _ in reference.named_parameters()]
    assert repr(module) == repr(reference)
    for key, value in reference.state_dict().items():
        mine = module.state_dict()[key]
        assert tuple(mine.shape) == tuple(value.shape), key
        assert mine.dtype.name == str(value.dtype).replace("torch.", ""), key


def test_sequential_model_matches_torch_and_prints_alike():
    def build(m):
        return m.Sequential(m.Conv2d(1, 4, 3, padding=1), m.BatchNorm2d(4), m.ReLU(), m.MaxPool2d(2),
                            m.Flatten(), m.Dropout(0.25), m.Linear(4 * 3 * 3, 10), m.LogSoftmax(dim=1))
    reference, model = build(tnn), build(nn)
    copy_from_torch(model, reference)
    assert repr(model) == repr(reference)
    model.eval()
    reference.eval()
    x = np.random.default_rng(0).standard_normal((5, 1, 6, 6)).astype(np.float32)
    close(model(ember.tensor(x)), reference(torch.tensor(x)), rtol=1e-4, atol=1e-5)


# -- default initialisation: PyTorch's distributions ------------------------------------------------------

def _uniform_bound(t) -> float:
    return float(np.max(np.abs(t.detach().numpy())))


@pytest.mark.parametrize("build, fan_in", [
    (lambda: nn.Linear(300, 200), 300),
    (lambda: nn.Conv2d(16, 32, 3), 16 * 9),
    (lambda: nn.Conv1d(8, 64, 5, groups=4), 2 * 5),
    (lambda: nn.ConvTranspose2d(6, 40, 3), 40 * 9),  # fan_in from the weight's dim 1, as in PyTorch
])
def test_weight_and_bias_start_uniform_within_one_over_sqrt_fan_in(build, fan_in):
    """kaiming_uniform_(a=sqrt(5)) is U(+-1/sqrt(fan_in)); the bias uses the same bound."""
    ember.manual_seed(0)
    layer = build()
    bound = 1 / math.sqrt(fan_in)
    w = layer.weight.detach().numpy()
    assert _uniform_bound(layer.weight) <= bound
    assert _uniform_bound(layer.weight) > 0.95 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound
    assert _uniform_bound(layer.bias) <= bound
    assert layer.weight.requires_grad and layer.weight.grad_fn is None and layer.weight.grad is None


def test_embedding_starts_standard_normal_with_zero_padding_row():
    ember.manual_seed(0)
    emb = nn.Embedding(1000, 16, padding_idx=3)
    w = emb.weight.detach().numpy()
    np.testing.assert_array_equal(w[3], 0)
    rows = np.delete(w, 3, axis=0)
    assert abs(rows.mean()) < 0.03 and abs(rows.std() - 1) < 0.03


def test_bilinear_starts_uniform_within_one_over_sqrt_in1():
    ember.manual_seed(0)
    layer = nn.Bilinear(25, 7, 40)
    assert 0.9 * 0.2 < _uniform_bound(layer.weight) <= 0.2
    assert _uniform_bound(layer.bias) <= 0.2


@pytest.mark.parametrize("build", [lambda: nn.BatchNorm2d(5), lambda: nn.LayerNorm(5), lambda: nn.GroupNorm(1, 5)])
def test_norm_layers_start_as_plain_standardization(build):
    layer = build()
    np.testing.assert_array_equal(layer.weight.detach().numpy(), np.ones(5))
    np.testing.assert_array_equal(layer.bias.detach().numpy(), np.zeros(5))


def test_initial_loss_distribution_matches_torch():
    """With PyTorch's initialisation, a fresh MLP's initial loss has PyTorch's distribution."""
    def loss_of(m, tensor, cross_entropy, x, y):
        model = m.Sequential(m.Linear(20, 64), m.ReLU(), m.Linear(64, 10))
        return float(cross_entropy(model(tensor(x)), tensor(y)).detach())
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 20)).astype(np.float32)
    y = rng.integers(0, 10, 256)
    ours, theirs = [], []
    for seed in range(20):
        ember.manual_seed(seed)
        torch.manual_seed(seed)
        ours.append(loss_of(nn, ember.tensor, lambda out, t: -F.log_softmax(out, 1)[ember.arange(256), t].mean(),
                            x, y))
        theirs.append(loss_of(tnn, torch.tensor, torch.nn.functional.cross_entropy, x, y))
    assert abs(np.mean(ours) - np.mean(theirs)) < 0.02
    assert abs(np.mean(ours) - math.log(10)) < 0.05


# -- batch norm: running statistics and modes ---------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [{}, {"momentum": None}, {"momentum": 0.5, "affine": False},
                                    {"track_running_stats": False}])
@pytest.mark.parametrize("cls", ["BatchNorm1d", "BatchNorm2d"])
def test_batch_norm_training_steps_match_torch(cls, kwargs, path):
    shape = (8, 3) if cls == "BatchNorm1d" else (4, 3, 5, 5)
    reference = getattr(tnn, cls)(3, **kwargs).double()
    module = getattr(nn, cls)(3, **kwargs).double()
    copy_from_torch(module, reference)
    rng = np.random.default_rng(0)
    params = dict(reference.named_parameters())
    for step in range(4):
        x = rng.normal(step, 1 + step, size=shape)
        xs, ts = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        out, expected = module(xs), reference(ts)
        close(out, expected, rtol=1e-10, atol=1e-12)
        out.pow(3).sum().backward()
        expected.pow(3).sum().backward()
        close(xs.grad, ts.grad, rtol=1e-9, atol=1e-10)
        for key, param in module.named_parameters():
            close(param.grad, params[key].grad, rtol=1e-9, atol=1e-10)
    for key, buffer in reference.named_buffers():
        close(module.get_buffer(key), buffer, rtol=1e-12, atol=1e-12)
    if kwargs.get("track_running_stats", True):
        assert module.num_batches_tracked.item() == 4
        assert module.num_batches_tracked.dtype is ember.int64
    module.eval()
    reference.eval()
    x = rng.standard_normal(shape)
    close(module(ember.tensor(x)), reference(torch.tensor(x)), rtol=1e-10, atol=1e-12)


def test_batch_norm_running_stats_do_not_require_grad_nor_record():
    bn = nn.BatchNorm1d(3)
    x = ember.randn(5, 3, requires_grad=True)
    bn(x).sum().backward()
    for buffer in bn.buffers():
        assert not buffer.requires_grad and buffer.grad_fn is None
    assert not np.allclose(bn.running_mean.numpy(), 0)


def test_batch_norm_two_forward_passes_then_one_backward():
    """The running statistics change in place between the passes; the first graph must still work."""
    def run(m, tensor):
        bn = m.BatchNorm1d(3).double()
        x = tensor(np.random.default_rng(0).standard_normal((6, 3)))
        x.requires_grad_()
        first, second = bn(x), bn(x * 2)
        (first.pow(3).sum() + second.pow(2).sum()).backward()
        return x.grad, bn.running_mean, bn.running_var
    for ours, theirs in zip(run(nn, ember.tensor), run(tnn, torch.tensor)):
        close(ours, theirs, rtol=1e-10, atol=1e-12)


def test_batch_norm_eval_gradient_uses_the_statistics_of_its_forward():
    """The graph keeps the 1/std its forward used, not the buffer: a later in-place change of the running
    variance (where PyTorch raises) leaves the gradient that of the forward as it ran."""
    bn = nn.BatchNorm1d(3).eval()
    with ember.no_grad():
        bn.running_var.copy_(ember.tensor([4.0, 1.0, 0.25]))
    x = ember.randn(4, 3, requires_grad=True)
    out = bn(x)
    with ember.no_grad():
        bn.running_var.copy_(bn.running_var * 2)
    out.sum().backward()
    expected = 1 / np.sqrt(np.array([4.0, 1.0, 0.25]) + bn.eps)
    np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to(expected, (4, 3)), rtol=1e-6)


def test_batch_norm_refuses_one_value_per_channel_in_training():
    bn = nn.BatchNorm1d(3)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        bn(ember.randn(1, 3))
    bn.eval()
    assert tuple(bn(ember.randn(1, 3)).shape) == (1, 3)


def test_batch_norm_checks_input_dims():
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        nn.BatchNorm1d(3)(ember.randn(2, 3, 4, 5))
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(ember.randn(2, 3))


def test_batch_norm_reset_running_stats():
    bn = nn.BatchNorm2d(2)
    bn(ember.randn(3, 2, 4, 4) * 3 + 1)
    bn.reset_running_stats()
    np.testing.assert_array_equal(bn.running_mean.numpy(), 0)
    np.testing.assert_array_equal(bn.running_var.numpy(), 1)
    assert bn.num_batches_tracked.item() == 0


def test_functional_batch_norm_needs_running_stats_in_eval():
    with pytest.raises(ValueError, match="batch_norm"):
        F.batch_norm(ember.randn(4, 3), None, None, training=False)


def test_batch_norm_half_input_with_float_stats():
    """Mixed precision: a float16 input keeps its dtype; statistics are computed in float32."""
    bn = nn.BatchNorm1d(3)
    x = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float16)
    out = bn(ember.tensor(x))
    assert out.dtype is ember.float16
    reference = tnn.BatchNorm1d(3)(torch.tensor(x.astype(np.float32)))
    close(out.to(ember.float32), reference, rtol=1e-2, atol=1e-2)


# -- dropout -------------------------------------------------------------------------------------------------

def test_dropout_is_identity_in_eval():
    drop = nn.Dropout(0.7).eval()
    x = ember.randn(4, 5)
    assert drop(x) is x
    assert F.dropout(x, 0.5, training=False) is x


def test_dropout_in_training_drops_with_probability_p_and_rescales():
    ember.manual_seed(0)
    x = ember.ones(200, 500)
    out = nn.Dropout(0.3)(x).numpy()
    kept = out != 0
    assert abs(1 - kept.mean() - 0.3) < 0.01
    np.testing.assert_allclose(out[kept], 1 / 0.7, rtol=1e-6)


def test_dropout_gradient_is_the_same_mask():
    ember.manual_seed(1)
    x = ember.randn(50, 40, requires_grad=True)
    out = F.dropout(x, 0.5)
    out.sum().backward()
    mask = out.detach().numpy() != 0
    np.testing.assert_allclose(x.grad.numpy(), np.where(mask, 2.0, 0.0))


def test_dropout_is_reproducible_under_manual_seed():
    x = ember.randn(30, 30)
    ember.manual_seed(5)
    a = F.dropout(x, 0.5).numpy()
    ember.manual_seed(5)
    b = F.dropout(x, 0.5).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(F.dropout(x, 0.5).numpy(), b)


def test_dropout_extremes_and_errors():
    x = ember.randn(3, 4)
    np.testing.assert_array_equal(F.dropout(x, 1.0).numpy(), 0)
    np.testing.assert_array_equal(F.dropout(x, 0.0).numpy(), x.numpy())
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(x, -0.1)


def test_dropout_inplace_writes_into_input():
    ember.manual_seed(0)
    x = ember.ones(20, 20)
    out = nn.Dropout(0.5, inplace=True)(x)
    assert out is x
    assert (x.numpy() == 0).any()


def test_dropout2d_zeroes_whole_channels():
    ember.manual_seed(0)
    out = nn.Dropout2d(0.5)(ember.ones(8, 16, 3, 3)).numpy()
    per_channel = out.reshape(8, 16, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1))
    assert 0.3 < (per_channel == 0).all(-1).mean() < 0.7


@pytest.mark.parametrize("cls, shape, channel_dims", [("Dropout1d", (6, 8, 5), 2), ("Dropout1d", (8, 5), 1),
                                                      ("Dropout3d", (4, 6, 2, 3, 3), 2)])
def test_channel_dropout_shares_one_draw_per_channel(cls, shape, channel_dims):
    ember.manual_seed(0)
    out = getattr(nn, cls)(0.5)(ember.ones(*shape)).numpy()
    per_channel = out.reshape(shape[:channel_dims] + (-1,))
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1))
    assert getattr(nn, cls)(0.5).eval()(ember.ones(*shape)).numpy().min() == 1


def test_dropout2d_on_3d_input_drops_like_dropout1d_with_a_warning():
    """PyTorch treats a 3-D input of dropout2d as (N, C, L) and warns; so does Ember."""
    ember.manual_seed(0)
    with pytest.warns(UserWarning, match="3D input"):
        out = F.dropout2d(ember.ones(4, 6, 10)).numpy()
    assert np.all((out == 0).all(-1) | (out == 2.0).all(-1))
    with pytest.raises(ValueError, match="dropout2d"):
        F.dropout2d(ember.ones(3, 4))


# -- embedding --------------------------------------------------------------------------------------------------

def test_embedding_padding_row_gets_no_gradient_like_torch():
    torch.manual_seed(0)
    reference = tnn.Embedding(6, 3, padding_idx=1).double()
    module = nn.Embedding(6, 3, padding_idx=1).double()
    copy_from_torch(module, reference)
    idx = np.array([[0, 1, 1, 4], [5, 1, 0, 0]])
    upstream = np.random.default_rng(0).standard_normal((2, 4, 3))
    module(ember.tensor(idx)).backward(ember.tensor(upstream))
    reference(torch.tensor(idx)).backward(torch.tensor(upstream))
    close(module.weight.grad, reference.weight.grad, rtol=1e-12)
    np.testing.assert_array_equal(module.weight.grad.numpy()[1], 0)


def test_embedding_scale_grad_by_freq_and_max_norm_like_torch():
    torch.manual_seed(0)
    reference = tnn.Embedding(5, 4, max_norm=1.0, scale_grad_by_freq=True).double()
    module = nn.Embedding(5, 4, max_norm=1.0, scale_grad_by_freq=True).double()
    copy_from_torch(module, reference)
    idx = np.array([0, 2, 2, 2, 3])
    out, expected = module(ember.tensor(idx)), reference(torch.tensor(idx))
    close(out, expected, rtol=1e-7)
    close(module.weight, reference.weight, rtol=1e-7)  # rows 0, 2, 3 renormalised in place, others untouched
    out.sum().backward()
    expected.sum().backward()
    close(module.weight.grad, reference.weight.grad, rtol=1e-12)


def test_embedding_from_pretrained():
    table = ember.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    frozen = nn.Embedding.from_pretrained(table)
    assert not frozen.weight.requires_grad
    np.testing.assert_array_equal(frozen(ember.tensor([2, 0])).numpy(), [[5, 6], [1, 2]])
    trainable = nn.Embedding.from_pretrained(table.clone(), freeze=False, padding_idx=0)
    assert trainable.weight.requires_grad and trainable.padding_idx == 0
    assert repr(trainable) == "Embedding(3, 2, padding_idx=0)"
    with pytest.raises(ValueError, match="2-dimensional"):
        nn.Embedding.from_pretrained(ember.zeros(3))


def test_embedding_refuses_out_of_range_indices_and_float_indices():
    emb = nn.Embedding(4, 2)
    with pytest.raises(IndexError, match="embedding"):
        emb(ember.tensor([0, 4]))
    with pytest.raises(IndexError, match="embedding"):
        emb(ember.tensor([-1]))
    with pytest.raises(TypeError, match="embedding"):
        emb(ember.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="Padding_idx"):
        nn.Embedding(4, 2, padding_idx=4)


# -- conv and pooling details --------------------------------------------------------------------------------

def test_conv_transpose2d_output_size_picks_output_padding():
    torch.manual_seed(0)
    reference = tnn.ConvTranspose2d(2, 3, 3, stride=2, padding=1).double()
    module = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1).double()
    copy_from_torch(module, reference)
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 5))
    for size in [(7, 9), (8, 10), (1, 3, 8, 9)]:
        out = module(ember.tensor(x), output_size=size)
        close(out, reference(torch.tensor(x), output_size=size), rtol=1e-12)
    with pytest.raises(ValueError, match="output size"):
        module(ember.tensor(x), output_size=(11, 9))


@pytest.mark.parametrize("make, message", [
    (lambda: nn.Conv2d(3, 4, 3, groups=2), "in_channels must be divisible by groups"),
    (lambda: nn.Conv2d(4, 3, 3, groups=2), "out_channels must be divisible by groups"),
    (lambda: nn.Conv2d(4, 4, 3, groups=0), "groups must be a positive integer"),
    (lambda: nn.Conv2d(2, 2, 3, padding="full"), "Invalid padding string"),
    (lambda: nn.Conv2d(2, 2, 3, stride=2, padding="same"), "not supported for strided convolutions"),
    (lambda: nn.Conv2d(2, 2, 3, padding_mode="mirror"), "padding_mode must be one of"),
    (lambda: nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect"), "Only \"zeros\" padding mode"),
    (lambda: nn.GroupNorm(4, 6), "divisible by num_groups"),
    (lambda: nn.Hardtanh(1.0, -1.0), "max_val"),
])
def test_constructor_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_max_pool_default_stride_is_kernel_size():
    assert nn.MaxPool2d(3).stride == 3
    assert nn.AvgPool2d((2, 3), stride=1).stride == 1


# -- activations -------------------------------------------------------------------------------------------------

def test_inplace_activation_writes_into_input():
    x = ember.tensor([-1.0, 2.0])
    assert nn.ReLU(inplace=True)(x) is x
    np.testing.assert_array_equal(x.numpy(), [0, 2])
    assert repr(nn.ReLU(inplace=True)) == repr(tnn.ReLU(inplace=True))


def test_softmax_without_dim_warns_and_picks_pytorchs_dim():
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    with pytest.warns(UserWarning, match="Implicit dimension"):
        out = nn.Softmax()(ember.tensor(x))
    with pytest.warns(UserWarning):
        expected = tnn.Softmax()(torch.tensor(x))
    close(out, expected, rtol=1e-12)


# -- functional extras -------------------------------------------------------------------------------------

@pytest.mark.parametrize("p, dim", [(2.0, 1), (1.0, 0), (3.0, -1)])
def test_normalize_matches_torch(p, dim):
    x = np.random.default_rng(0).standard_normal((3, 4))
    x[1] = 0  # an all-zero row stays zero thanks to eps
    close(F.normalize(ember.tensor(x), p, dim), torch.nn.functional.normalize(torch.tensor(x), p, dim), rtol=1e-12)


@pytest.mark.parametrize("name", ["linear", "bilinear", "embedding", "batch_norm", "layer_norm", "group_norm",
                                  "dropout", "normalize", "dropout2d"])
def test_functional_names_exist(name):
    assert callable(getattr(F, name))


# -- nn.utils ------------------------------------------------------------------------------------------------------

def _models_with_grads(seed=0):
    torch.manual_seed(seed)
    reference = tnn.Sequential(tnn.Linear(4, 3), tnn.Tanh(), tnn.Linear(3, 2)).double()
    model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2)).double()
    copy_from_torch(model, reference)
    x = np.random.default_rng(seed).standard_normal((5, 4)) * 10
    model(ember.tensor(x)).pow(2).sum().backward()
    reference(torch.tensor(x)).pow(2).sum().backward()
    return model, reference


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 3])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    model, reference = _models_with_grads()
    total = nn.utils.clip_grad_norm_(model.parameters(), max_norm, norm_type)
    expected = torch.nn.utils.clip_grad_norm_(reference.parameters(), max_norm, norm_type)
    close(total, expected, rtol=1e-10)
    for p, q in zip(model.parameters(), reference.parameters()):
        close(p.grad, q.grad, rtol=1e-10)


def test_clip_grad_norm_nonfinite_and_empty():
    p = ember.zeros(3, requires_grad=True)
    p.grad = ember.tensor([1.0, float("nan"), 0.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert math.isnan(nn.utils.clip_grad_norm_(p, 1.0).item())  # a single tensor is accepted too
    assert nn.utils.clip_grad_norm_([ember.zeros(2, requires_grad=True)], 1.0).item() == 0


def test_clip_grad_value_matches_torch():
    model, reference = _models_with_grads(1)
    nn.utils.clip_grad_value_(model.parameters(), 0.3)
    torch.nn.utils.clip_grad_value_(reference.parameters(), 0.3)
    for p, q in zip(model.parameters(), reference.parameters()):
        close(p.grad, q.grad, rtol=1e-12)
    assert max(float(p.grad.abs().max()) for p in model.parameters()) <= 0.3


def test_parameters_to_vector_and_back():
    model, reference = _models_with_grads()
    vec = nn.utils.parameters_to_vector(model.parameters())
    close(vec, torch.nn.utils.parameters_to_vector(reference.parameters()), rtol=0)
    new = ember.arange(vec.numel(), dtype=ember.float64)
    nn.utils.vector_to_parameters(new, model.parameters())
    torch.nn.utils.vector_to_parameters(torch.arange(vec.numel(), dtype=torch.float64), reference.parameters())
    for p, q in zip(model.parameters(), reference.parameters()):
        close(p, q, rtol=0)
        assert p.requires_grad
    with pytest.raises(TypeError, match="expected"):
        nn.utils.vector_to_parameters([1.0], model.parameters())
