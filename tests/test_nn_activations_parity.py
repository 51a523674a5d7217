"""The activation layers and functions against PyTorch: values, input gradients and (PReLU) weight gradients,
in-place forms, reprs, and the random ones (RReLU, alpha dropout, gumbel_softmax) by their properties."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn

from torch_parity import assert_forward_backward, leaf_pair

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


def _check(ours, theirs, x, tx):
    assert_forward_backward(ours, theirs, [(x, tx)], rng=RNG)


# values well away from each kink, so that finite sampling never lands on a tie
VALUES = np.concatenate([RNG.uniform(-6, 6, 40), [-4.5, -2.0, -0.3, 0.3, 2.0, 4.5]]).reshape(2, 23)

FUNCTIONS = [
    ("selu", {}), ("celu", {}), ("celu", {"alpha": 0.6}), ("hardswish", {}), ("hardsigmoid", {}), ("relu6", {}),
    ("softsign", {}), ("softshrink", {}), ("softshrink", {"lambd": 1.5}), ("hardshrink", {}),
    ("hardshrink", {"lambd": 2.5}), ("tanhshrink", {}), ("logsigmoid", {}), ("elu", {"alpha": 0.7}),
    ("leaky_relu", {"negative_slope": 0.2}), ("hardtanh", {"min_val": -2.0, "max_val": 3.0}), ("relu", {}),
    ("silu", {}), ("mish", {}), ("gelu", {"approximate": "tanh"}), ("rrelu", {}),
]


@pytest.mark.parametrize("name,kwargs", FUNCTIONS, ids=[f"{n}-{k}" for n, k in FUNCTIONS])
def test_functional_matches_torch(name, kwargs):
    x, tx = leaf_pair(VALUES)
    _check(getattr(F, name)(x, **kwargs), getattr(torch.nn.functional, name)(tx, **kwargs), x, tx)


def test_threshold_and_softmin():
    x, tx = leaf_pair(VALUES)
    _check(F.threshold(x, 0.5, -3.0), torch.nn.functional.threshold(tx, 0.5, -3.0), x, tx)
    x, tx = leaf_pair(VALUES)
    _check(F.softmin(x, dim=1), torch.nn.functional.softmin(tx, dim=1), x, tx)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32"])
@pytest.mark.parametrize("threshold,value", [(1.5, 7.0), (-0.5, 7.0), (1.5, 2.9), (0.0, -2.0), (1.5, 254.9),
                                             (0.0, 300.0), (-300.0, 1.0), (0.0, float("nan"))])
def test_threshold_converts_its_numbers_to_an_integer_dtype_as_torch_does(dtype, threshold, value):
    """Truncated where they fit (-0.5 compares as 0), refused where they do not (-2.0 into uint8 too): never
    a float cast to the dtype on the device, which CUDA saturates."""
    values = np.array([0, 1, 2, 3, 100]) if dtype == "uint8" else np.array([-100, -3, -1, 0, 1, 2, 3, 100])
    x, tx = ember.tensor(values, dtype=getattr(ember, dtype)), torch.tensor(values, dtype=getattr(torch, dtype))
    try:
        expected = torch.nn.functional.threshold(tx, threshold, value)
    except RuntimeError as refused:
        assert "without overflow" in str(refused)
        with pytest.raises(ember.NumberOverflowError, match="threshold"):
            F.threshold(x, threshold, value)
        return
    result = F.threshold(x, threshold, value)
    assert result.dtype == x.dtype and result.tolist() == expected.tolist()


def test_glu_halves_along_dim():
    x, tx = leaf_pair(RNG.standard_normal((3, 4, 6)))
    _check(F.glu(x), torch.nn.functional.glu(tx), x, tx)
    with pytest.raises(ember.ShapeError, match="Halving dimension must be even"):
        F.glu(ember.randn(3, 5))


@pytest.mark.parametrize("shape,weights", [((4, 3, 5), 3), ((4, 3), 1), ((2, 3, 2, 2), 3), ((6,), 1)])
def test_prelu_module_gradients(shape, weights):
    values = RNG.standard_normal(shape)
    ours, theirs = nn.PReLU(weights).double(), torch.nn.PReLU(weights).double()
    w = RNG.uniform(-1, 1, weights)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(w))
    ember.nn.init.zeros_(ours.weight)
    with ember.no_grad():
        ours.weight.copy_(ember.tensor(w, dtype=ember.float64))
    x, tx = leaf_pair(values)
    _check(ours(x), theirs(tx), x, tx)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-7, atol=1e-9)
    assert repr(ours) == repr(theirs)


def test_prelu_refuses_mismatched_weight():
    with pytest.raises(ember.ShapeError, match="Mismatch of parameter numbers and input channel size"):
        F.prelu(ember.randn(2, 3, 4), ember.randn(4))


def test_rrelu_training_draws_slopes_in_range_and_uses_them_as_gradient():
    ember.manual_seed(3)
    x = ember.tensor(-np.abs(RNG.standard_normal(2000)) - 0.1, requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slopes = (y / x).detach().numpy()
    assert slopes.min() >= 0.1 and slopes.max() < 0.3
    assert abs(slopes.mean() - 0.2) < 0.01  # uniform on [0.1, 0.3)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), slopes, rtol=1e-6)
    positive = ember.tensor([0.5, 2.0])
    np.testing.assert_array_equal(F.rrelu(positive, training=True).numpy(), positive.numpy())


def test_rrelu_module_is_deterministic_in_eval():
    module = nn.RReLU(0.1, 0.5)
    module.eval()
    x, tx = leaf_pair(VALUES)
    _check(module(x), torch.nn.RReLU(0.1, 0.5).eval()(tx), x, tx)
    assert repr(module) == repr(torch.nn.RReLU(0.1, 0.5))


MODULES = [
    ("SELU", (), {}), ("SELU", (), {"inplace": True}), ("CELU", (0.5,), {}), ("Hardswish", (), {}),
    ("Hardsigmoid", (), {}), ("ReLU6", (), {}), ("Softsign", (), {}), ("Softshrink", (0.7,), {}),
    ("Hardshrink", (1.2,), {}), ("Tanhshrink", (), {}), ("Threshold", (0.1, 20.0), {}), ("GLU", (1,), {}),
    ("Softmin", (1,), {}), ("LogSigmoid", (), {}), ("Hardtanh", (-2.0, 2.0), {}),
]


@pytest.mark.parametrize("name,args,kwargs", MODULES, ids=[f"{n}{a}{k}" for n, a, k in MODULES])
def test_modules_match_torch(name, args, kwargs):
    ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    x, tx = leaf_pair(VALUES[:, :22])
    if kwargs.get("inplace"):  # in place on a leaf is refused: run on a non-leaf copy
        out, tout = ours(x * 1.0), theirs(tx * 1.0)
    else:
        out, tout = ours(x), theirs(tx)
    _check(out, tout, x, tx)


def test_softmax2d_over_channels():
    x, tx = leaf_pair(RNG.standard_normal((2, 3, 4, 5)))
    _check(nn.Softmax2d()(x), torch.nn.Softmax2d()(tx), x, tx)
    with pytest.raises(ValueError, match="3D or 4D"):
        nn.Softmax2d()(ember.randn(3, 4))


@pytest.mark.parametrize("name,args", [("relu_", ()), ("elu_", (0.5,)), ("leaky_relu_", (0.3,)),
                                       ("hardtanh_", (-0.5, 0.5)), ("celu_", (2.0,)), ("selu_", ()),
                                       ("threshold_", (0.2, 9.0))])
def test_inplace_forms_write_into_the_input(name, args):
    values = RNG.standard_normal((3, 4))
    ours, theirs = ember.tensor(values), torch.tensor(values)
    result = getattr(F, name)(ours, *args)
    getattr(torch.nn.functional, name)(theirs, *args)
    assert result is ours
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_torch_level_names():
    values = RNG.standard_normal((3, 4))
    for name, args in (("selu", ()), ("celu", (1.5,)), ("hardshrink", (0.3,)), ("threshold", (0.0, 2.0)),
                       ("rrelu", ())):
        np.testing.assert_allclose(getattr(ember, name)(ember.tensor(values), *args).numpy(),
                                   getattr(torch, name)(torch.tensor(values), *args).numpy(), rtol=1e-6)
    weight = RNG.uniform(0, 1, 4)
    np.testing.assert_allclose(ember.prelu(ember.tensor(values), ember.tensor(weight)).numpy(),
                               torch.prelu(torch.tensor(values), torch.tensor(weight)).numpy(), rtol=1e-6)
    t = ember.tensor(values)
    assert ember.selu_(t) is t and ember.rrelu_(ember.tensor(values)) is not None
    np.testing.assert_allclose(ember.tensor(values).hardshrink(0.4).numpy(),
                               torch.tensor(values).hardshrink(0.4).numpy())


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="lambda must be greater or equal to 0"):
        F.softshrink(ember.randn(3), -1.0)
    with pytest.raises(ValueError, match="alpha must not be 0"):
        F.celu(ember.randn(3), 0.0)
    with pytest.raises(ValueError, match="lower bound must be less than or equal to upper bound"):
        F.rrelu(ember.randn(3), 0.5, 0.1, True)


def test_gumbel_softmax_samples_the_categorical():
    ember.manual_seed(0)
    logits = ember.log(ember.tensor([[0.1, 0.6, 0.3]])).expand(4000, 3)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(-1).numpy(), np.ones(4000), rtol=1e-5)
    hard = F.gumbel_softmax(logits, hard=True)
    counts = hard.sum(0).numpy() / 4000
    assert set(np.unique(hard.numpy())) <= {0.0, 1.0}
    np.testing.assert_allclose(counts, [0.1, 0.6, 0.3], atol=0.03)


def test_gumbel_softmax_hard_passes_the_soft_gradient():
    ember.manual_seed(1)
    logits = ember.randn(5, 4, requires_grad=True)
    weights = ember.randn(5, 4)
    (F.gumbel_softmax(logits, hard=True) * weights).sum().backward()
    assert logits.grad is not None and float(logits.grad.abs().sum()) > 0
    np.testing.assert_allclose(logits.grad.sum(-1).numpy(), np.zeros(5), atol=1e-5)  # softmax's Jacobian rows


@pytest.mark.parametrize("function,module", [(F.alpha_dropout, nn.AlphaDropout),
                                             (F.feature_alpha_dropout, nn.FeatureAlphaDropout)])
def test_alpha_dropout_keeps_mean_and_variance(function, module):
    ember.manual_seed(2)
    x = ember.randn(200, 100, 4)
    out = function(x, 0.2, True).numpy()
    assert abs(out.mean()) < 0.05 and abs(out.std() - 1) < 0.05
    assert function(x, 0.2, False) is x and module(0.2).eval()(x) is x
    assert repr(module(0.3)) == repr(getattr(torch.nn, module.__name__)(0.3))


def test_alpha_dropout_matches_torch_formula_on_its_own_mask():
    ember.manual_seed(4)
    x = ember.randn(50, 40)
    out = F.alpha_dropout(x, 0.3, True).numpy()
    alpha, p = 1.7580993408473766, 0.3
    a = (1 / ((alpha ** 2 * p + 1) * (1 - p))) ** 0.5
    dropped = np.isclose(out, -alpha * a + alpha * a * p)
    kept = ~dropped
    np.testing.assert_allclose(out[kept], x.numpy()[kept] * a + alpha * a * p, rtol=1e-5)
    assert abs(dropped.mean() - p) < 0.05
