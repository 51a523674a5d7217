"""nn.init: PyTorch's formulas (gains, fans, bounds), the statistics of what the initialisers draw,
orthogonality, determinism under seeds and generators, and that initialising records no autograd."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import init

torch = pytest.importorskip("torch")


def values(t) -> np.ndarray:
    return t.detach().numpy().astype(np.float64)


def param(*shape, dtype=ember.float32):
    return nn.Parameter(ember.empty(*shape, dtype=dtype))


# -- gains and fans ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("nonlinearity, param_", [
    ("linear", None), ("conv1d", None), ("conv2d", None), ("conv_transpose2d", None), ("sigmoid", None),
    ("tanh", None), ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2), ("leaky_relu", math.sqrt(5)),
    ("leaky_relu", 0), ("selu", None)])
def test_calculate_gain_matches_torch(nonlinearity, param_):
    assert init.calculate_gain(nonlinearity, param_) == pytest.approx(torch.nn.init.calculate_gain(nonlinearity,
                                                                                                  param_))


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("swish")
    with pytest.raises(ValueError, match="not a valid number"):
        init.calculate_gain("leaky_relu", True)


@pytest.mark.parametrize("shape", [(3, 5), (7, 2, 3), (8, 4, 3, 3), (2, 6, 1, 2, 3), (0, 4), (4, 0, 3)])
def test_fan_in_and_fan_out_match_torch(shape):
    ours = init._calculate_fan_in_and_fan_out(ember.empty(*shape))
    theirs = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))
    assert ours == theirs


def test_fan_needs_two_dims():
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init._calculate_fan_in_and_fan_out(ember.empty(5))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(param(3, 4), mode="fan_avg")


# -- distributions -----------------------------------------------------------------------------------------------

def test_uniform_and_normal():
    ember.manual_seed(0)
    u = values(init.uniform_(param(200, 100), -2.0, 3.0))
    assert u.min() >= -2 and u.max() < 3
    assert abs(u.mean() - 0.5) < 0.05 and abs(u.std() - 5 / math.sqrt(12)) < 0.03
    n = values(init.normal_(param(200, 100), 1.5, 0.5))
    assert abs(n.mean() - 1.5) < 0.01 and abs(n.std() - 0.5) < 0.01


def test_constant_ones_zeros_eye():
    np.testing.assert_array_equal(values(init.constant_(param(2, 3), 0.25)), 0.25)
    np.testing.assert_array_equal(values(init.ones_(param(4))), 1)
    np.testing.assert_array_equal(values(init.zeros_(param(2, 2, 2))), 0)
    np.testing.assert_array_equal(values(init.eye_(param(3, 5))), np.eye(3, 5))
    with pytest.raises(ValueError, match="2 dimensions"):
        init.eye_(param(2, 2, 2))


@pytest.mark.parametrize("shape, groups", [((4, 4, 3), 1), ((6, 3, 3, 3), 1), ((4, 2, 3, 5), 2), ((2, 5, 3), 1),
                                           ((6, 2, 1, 3, 3), 3)])
def test_dirac_matches_torch(shape, groups):
    np.testing.assert_array_equal(values(init.dirac_(param(*shape), groups)),
                                  torch.nn.init.dirac_(torch.empty(*shape), groups).numpy())


def test_dirac_conv_is_identity():
    conv = nn.Conv2d(3, 3, 3, padding=1, bias=False)
    init.dirac_(conv.weight)
    x = ember.randn(2, 3, 5, 5)
    np.testing.assert_allclose(values(conv(x)), values(x), atol=1e-6)


def test_sparse_zeroes_a_fraction_of_each_column():
    ember.manual_seed(0)
    t = values(init.sparse_(param(50, 400), 0.3, std=0.5))
    np.testing.assert_array_equal((t == 0).sum(0), 15)  # ceil(0.3 * 50) rows per column
    assert abs(t[t != 0].std() - 0.5) < 0.02
    assert (t == 0).mean(1).min() > 0.15  # the zeroed rows differ between columns
    with pytest.raises(ValueError, match="2 dimensions"):
        init.sparse_(param(2, 3, 4), 0.5)


@pytest.mark.parametrize("shape", [(300, 200), (64, 32, 3, 3)])
@pytest.mark.parametrize("gain", [1.0, 2.5])
def test_xavier(shape, gain):
    ember.manual_seed(0)
    fan_in, fan_out = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))
    std = gain * math.sqrt(2 / (fan_in + fan_out))
    u = values(init.xavier_uniform_(param(*shape), gain))
    assert np.abs(u).max() <= math.sqrt(3) * std and np.abs(u).max() > 0.98 * math.sqrt(3) * std
    assert abs(u.std() - std) < 0.03 * std
    n = values(init.xavier_normal_(param(*shape), gain))
    assert abs(n.std() - std) < 0.03 * std and abs(n.mean()) < 0.05 * std


@pytest.mark.parametrize("a, mode, nonlinearity", [(0, "fan_in", "leaky_relu"), (math.sqrt(5), "fan_in", "leaky_relu"),
                                                   (0, "fan_out", "relu"), (0.1, "fan_in", "tanh")])
def test_kaiming(a, mode, nonlinearity):
    ember.manual_seed(0)
    shape = (128, 64, 3, 3)
    t = torch.empty(*shape)
    fan = torch.nn.init._calculate_correct_fan(t, mode)
    std = torch.nn.init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    u = values(init.kaiming_uniform_(param(*shape), a, mode, nonlinearity))
    assert np.abs(u).max() <= math.sqrt(3) * std and np.abs(u).max() > 0.99 * math.sqrt(3) * std
    assert abs(u.std() - std) < 0.02 * std
    n = values(init.kaiming_normal_(param(*shape), a, mode, nonlinearity))
    assert abs(n.std() - std) < 0.02 * std


def test_kaiming_on_empty_tensor_warns_and_does_nothing():
    t = param(0, 3)
    with pytest.warns(UserWarning, match="zero-element"):
        assert init.kaiming_uniform_(t) is t


def _truncated_moments(mean, std, a, b):
    alpha, beta = (a - mean) / std, (b - mean) / std
    pdf = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))  # noqa: E731
    mass = cdf(beta) - cdf(alpha)
    shift = (pdf(alpha) - pdf(beta)) / mass
    var = 1 + (alpha * pdf(alpha) - beta * pdf(beta)) / mass - shift ** 2
    return mean + std * shift, std * math.sqrt(var)


@pytest.mark.parametrize("mean, std, a, b", [(0.0, 1.0, -2.0, 2.0), (0.0, 0.02, -0.04, 0.04), (1.0, 2.0, 0.0, 5.0),
                                             (0.0, 1.0, 0.5, 3.0)])
def test_trunc_normal_stays_in_range_with_truncated_moments(mean, std, a, b):
    ember.manual_seed(0)
    t = values(init.trunc_normal_(param(200, 200), mean, std, a, b))
    assert t.min() >= a and t.max() <= b
    expected_mean, expected_std = _truncated_moments(mean, std, a, b)
    assert abs(t.mean() - expected_mean) < 0.02 * std
    assert abs(t.std() - expected_std) < 0.02 * std


@pytest.mark.parametrize("shape", [(6, 6), (10, 4), (4, 10), (8, 3, 2, 2)])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_orthogonal(shape, dtype):
    ember.manual_seed(0)
    gain = 1.7
    q = values(init.orthogonal_(param(*shape, dtype=dtype), gain)).reshape(shape[0], -1) / gain
    rows, cols = q.shape
    gram = q.T @ q if rows >= cols else q @ q.T
    np.testing.assert_allclose(gram, np.eye(min(rows, cols)), atol=1e-5 if dtype is ember.float32 else 1e-12)


def test_orthogonal_is_not_biased_towards_the_identity():
    """Q of a Gaussian matrix with R's diagonal made positive is Haar distributed: its mean is ~0."""
    ember.manual_seed(0)
    mean = np.mean([values(init.orthogonal_(param(4, 4))) for _ in range(300)], axis=0)
    assert np.abs(mean).max() < 0.15


def test_orthogonal_needs_two_dims():
    with pytest.raises(ValueError, match="2 or more dimensions"):
        init.orthogonal_(param(5))


# -- autograd and reproducibility --------------------------------------------------------------------------------

@pytest.mark.parametrize("fill", [lambda t: init.uniform_(t), lambda t: init.normal_(t), lambda t: init.ones_(t),
                                  lambda t: init.xavier_uniform_(t), lambda t: init.kaiming_normal_(t),
                                  lambda t: init.trunc_normal_(t), lambda t: init.orthogonal_(t),
                                  lambda t: init.eye_(t), lambda t: init.constant_(t, 3.0),
                                  lambda t: init.sparse_(t, 0.5)])
def test_initialisers_work_in_place_on_leaves_without_recording(fill):
    t = param(4, 5)
    assert fill(t) is t
    assert t.requires_grad and t.grad_fn is None and t.grad is None


def test_manual_seed_makes_layer_initialisation_reproducible():
    def build():
        return nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.Flatten(), nn.Linear(8, 4), nn.Embedding(5, 3),
                             nn.Bilinear(2, 3, 4))
    ember.manual_seed(123)
    first = build().state_dict()
    ember.manual_seed(123)
    second = build().state_dict()
    third = build().state_dict()
    for key in first:
        np.testing.assert_array_equal(first[key].numpy(), second[key].numpy(), err_msg=key)
    assert not np.array_equal(first["3.weight"].numpy(), third["3.weight"].numpy())


@pytest.mark.parametrize("fill", [
    lambda t, g: init.uniform_(t, generator=g), lambda t, g: init.normal_(t, generator=g),
    lambda t, g: init.xavier_uniform_(t, generator=g), lambda t, g: init.xavier_normal_(t, generator=g),
    lambda t, g: init.kaiming_uniform_(t, generator=g), lambda t, g: init.kaiming_normal_(t, generator=g),
    lambda t, g: init.trunc_normal_(t, generator=g), lambda t, g: init.orthogonal_(t, generator=g),
    lambda t, g: init.sparse_(t, 0.5, generator=g)])
def test_generator_argument_draws_reproducibly_and_leaves_the_default_alone(fill):
    draws = [values(fill(param(6, 5), ember.Generator().manual_seed(7))) for _ in range(2)]
    np.testing.assert_array_equal(draws[0], draws[1])
    ember.manual_seed(1)
    expected = values(ember.rand(10))
    ember.manual_seed(1)
    fill(param(6, 5), ember.Generator().manual_seed(7))
    np.testing.assert_array_equal(values(ember.rand(10)), expected)


@pytest.mark.parametrize("old", ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
                                 "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"])
def test_deprecated_names_warn_and_initialise_like_the_underscore_ones(old):
    shape = (4, 2, 3) if old == "dirac" else (4, 6)
    args = {"constant": (0.5,), "sparse": (0.5,)}.get(old, ())
    ember.manual_seed(3)
    expected = getattr(init, old + "_")(ember.empty(*shape), *args)
    ember.manual_seed(3)
    with pytest.warns(FutureWarning, match=rf"`nn.init.{old}` is now deprecated in favor of `nn.init.{old}_`"):
        got = getattr(init, old)(ember.empty(*shape), *args)
    assert ember.equal(got, expected)
