"""ember.distributions: sample shapes, sample statistics, reparameterized gradients, expand and validation."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember import distributions as D


def _t(values, dtype=ember.float64, requires_grad=False):
    return ember.tensor(values, dtype=dtype, requires_grad=requires_grad)


def _each():
    """(name, distribution with batch shape (2, 3) unless noted, reparameterized?)."""
    conc = _t([[0.5, 1.0, 2.0], [3.0, 0.8, 5.0]])
    rate = _t([[1.0, 2.0, 0.5], [1.5, 1.0, 3.0]])
    loc = _t([[0.0, 1.0, -1.0], [2.0, 0.5, -0.5]])
    probs = _t([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]])
    cov = _t([[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 0.5]])
    return [
        ("Normal", D.Normal(loc, rate), True),
        ("Uniform", D.Uniform(loc, loc + rate), True),
        ("Exponential", D.Exponential(rate), True),
        ("Laplace", D.Laplace(loc, rate), True),
        ("Gamma", D.Gamma(conc, rate), True),
        ("Beta", D.Beta(conc, rate), True),
        ("LogNormal", D.LogNormal(loc, rate * 0.3), True),
        ("Poisson", D.Poisson(rate * 4), False),
        ("Bernoulli", D.Bernoulli(probs), False),
        ("Dirichlet", D.Dirichlet(conc), True),
        ("Categorical", D.Categorical(probs), False),
        ("OneHotCategorical", D.OneHotCategorical(probs), False),
        ("MultivariateNormal", D.MultivariateNormal(loc, covariance_matrix=cov), True),
    ]


@pytest.mark.parametrize("name,dist,reparameterized", _each(), ids=[n for n, _, _ in _each()])
def test_sample_shapes(name, dist, reparameterized):
    expected = tuple(dist.batch_shape) + tuple(dist.event_shape)
    assert tuple(dist.sample().shape) == expected
    assert tuple(dist.sample((4,)).shape) == (4,) + expected
    assert tuple(dist.sample((2, 5)).shape) == (2, 5) + expected
    assert dist.has_rsample == reparameterized
    if reparameterized:
        assert tuple(dist.rsample((3,)).shape) == (3,) + expected
    else:
        with pytest.raises(NotImplementedError, match=name):
            dist.rsample()
    assert tuple(dist.log_prob(dist.sample((4,))).shape) == (4,) + tuple(dist.batch_shape)
    expanded = dist.expand((5,) + tuple(dist.batch_shape))
    assert tuple(expanded.batch_shape) == (5,) + tuple(dist.batch_shape)
    assert tuple(expanded.sample().shape) == (5,) + expected
    np.testing.assert_allclose(expanded.mean.numpy()[1], dist.mean.numpy(), rtol=1e-12)  # NaN equals NaN


@pytest.mark.parametrize("name,dist,reparameterized", _each(), ids=[n for n, _, _ in _each()])
def test_sample_statistics(name, dist, reparameterized):
    """Means and variances of 20000 draws within 5 standard errors (the fourth moment bounds the latter)."""
    ember.manual_seed(1234)
    n = 20000
    draws = dist.sample((n,)).to(ember.float64).numpy()
    if name == "Categorical":
        counts = np.stack([(draws == k).mean(0) for k in range(3)], -1)
        np.testing.assert_allclose(counts, dist.probs.numpy(), atol=5 * math.sqrt(0.25 / n))
        return
    mean, var = dist.mean.numpy(), dist.variance.numpy()
    assert np.all(np.abs(draws.mean(0) - mean) < 5 * np.sqrt(var / n)), (draws.mean(0), mean)
    fourth = ((draws - mean) ** 4).mean(0)
    slack = 0.01 * var  # where the fourth moment equals var² (a fair coin) the bound alone would be 0
    assert np.all(np.abs(draws.var(0) - var) < 5 * np.sqrt(np.abs(fourth - var ** 2) / n) + slack), \
        (draws.var(0), var)
    if name == "MultivariateNormal":
        np.testing.assert_allclose(np.cov(draws[:, 0].T), dist.covariance_matrix.numpy()[0], atol=0.08)


def test_gamma_reparameterized_gradient_matches_torch():
    torch = pytest.importorskip("torch")
    from ember.distributions._gamma import standard_gamma_grad
    alpha = np.repeat([0.05, 0.3, 1.0, 2.5, 7.0, 30.0, 400.0], 50)
    ember.manual_seed(0)
    concentration = _t(alpha)
    draws = D.Gamma(concentration, 1.0).sample()
    ours = standard_gamma_grad(concentration, draws).numpy()
    theirs = torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(draws.numpy())).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=2e-3)  # PyTorch's is a fitted approximation


def test_gamma_reparameterized_gradient_is_exact():
    """dz/da holding the CDF fixed, against finite differences of SciPy's inverse incomplete gamma."""
    from scipy import special
    from ember.distributions._gamma import standard_gamma_grad
    a = np.array([0.01, 0.2, 1.0, 3.0, 12.0, 150.0, 2000.0])
    z = special.gammaincinv(a, np.array([0.3, 0.9, 0.5, 0.05, 0.7, 0.99, 0.4]))
    u = special.gammainc(a, z)
    h = 1e-5 * a
    expected = (special.gammaincinv(a + h, u) - special.gammaincinv(a - h, u)) / (2 * h)
    np.testing.assert_allclose(standard_gamma_grad(_t(a), _t(z)).numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("make,expected_grad", [
    # d E[x] / d parameter, estimated from rsample gradients
    (lambda p: D.Gamma(p, 2.0), lambda p: 1 / 2.0),
    (lambda p: D.Beta(p, 2.0), lambda p: 2.0 / (p + 2.0) ** 2),
    (lambda p: D.Normal(1.0, p), lambda p: 0.0),
    (lambda p: D.Exponential(p), lambda p: -1 / p ** 2),
    (lambda p: D.LogNormal(0.0, p), lambda p: p * math.exp(p * p / 2)),
], ids=["Gamma", "Beta", "Normal", "Exponential", "LogNormal"])
def test_rsample_gradients_estimate_the_gradient_of_the_mean(make, expected_grad):
    ember.manual_seed(7)
    value = 1.5
    param = _t(value, requires_grad=True)
    make(param).rsample((20000,)).mean().backward()
    assert param.grad is not None
    assert abs(param.grad.item() - expected_grad(value)) < 0.06 * max(1.0, abs(expected_grad(value)))


def test_dirichlet_and_mvn_rsample_are_differentiable():
    ember.manual_seed(3)
    conc = _t([1.0, 2.0, 3.0], requires_grad=True)
    D.Dirichlet(conc).rsample((20000,))[:, 0].mean().backward()
    # E[x0] = a0 / sum(a): d/da = (sum - a0) / sum², -a0 / sum²
    np.testing.assert_allclose(conc.grad.numpy(), [5 / 36, -1 / 36, -1 / 36], atol=0.01)
    loc = _t([0.5, -1.0], requires_grad=True)
    tril = _t([[1.0, 0.0], [0.3, 0.7]], requires_grad=True)
    (D.MultivariateNormal(loc, scale_tril=tril).rsample((10,)) ** 2).sum().backward()
    assert loc.grad is not None and tril.grad is not None and tuple(tril.grad.shape) == (2, 2)


# -- validation --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("build,parameter", [
    (lambda: D.Normal(_t([0.0, 1.0]), _t([1.0, -1.0])), "scale"),
    (lambda: D.Bernoulli(probs=_t([0.5, 1.5])), "probs"),
    (lambda: D.Categorical(probs=_t([0.5, -0.5])), "probs"),
    (lambda: D.Gamma(_t([-1.0]), _t([1.0])), "concentration"),
    (lambda: D.Dirichlet(_t([1.0, 0.0])), "concentration"),
    (lambda: D.Exponential(_t([0.0])), "rate"),
    (lambda: D.Poisson(_t([-2.0])), "rate"),
    (lambda: D.MultivariateNormal(_t([0.0, 0.0]), covariance_matrix=_t([[1.0, 2.0], [2.0, 1.0]])),
     "covariance_matrix"),
    (lambda: D.MultivariateNormal(_t([0.0, 0.0]), scale_tril=_t([[1.0, 0.0], [0.5, -1.0]])), "scale_tril"),
], ids=["Normal", "Bernoulli", "Categorical", "Gamma", "Dirichlet", "Exponential", "Poisson", "MVN-cov", "MVN-tril"])
def test_invalid_parameters_raise_value_error_naming_them(build, parameter):
    with pytest.raises(ValueError, match=rf"parameter {parameter} \(tensor of shape .*must satisfy the constraint"):
        build()


def test_uniform_needs_low_below_high():
    with pytest.raises(ValueError, match="Uniform: low must be less than high"):
        D.Uniform(_t([0.0, 1.0]), _t([1.0, 1.0]))


@pytest.mark.parametrize("dist,value", [
    (D.Exponential(_t([1.0])), _t([-1.0])),
    (D.Bernoulli(_t([0.3])), _t([0.5])),
    (D.Poisson(_t([2.0])), _t([1.5])),
    (D.Categorical(_t([0.3, 0.7])), ember.tensor([2])),
    (D.Uniform(_t(0.0), _t(1.0)), _t(1.5)),
    (D.Beta(_t(1.0), _t(2.0)), _t(1.5)),
    (D.Dirichlet(_t([1.0, 2.0])), _t([0.3, 0.3])),
], ids=["Exponential", "Bernoulli", "Poisson", "Categorical", "Uniform", "Beta", "Dirichlet"])
def test_log_prob_outside_support_raises(dist, value):
    with pytest.raises(ValueError, match=rf"{type(dist).__name__}.log_prob: .*outside the support"):
        dist.log_prob(value)


def test_log_prob_of_a_wrong_shape_raises():
    with pytest.raises(ValueError, match="does not broadcast"):
        D.Normal(_t([0.0, 1.0]), _t([1.0, 1.0])).log_prob(_t([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="event shape"):
        D.MultivariateNormal(_t([0.0, 0.0]), scale_tril=_t([[1.0, 0.0], [0.0, 1.0]])).log_prob(_t([0.0, 1.0, 2.0]))


def test_validation_can_be_turned_off():
    assert D.Normal(_t(0.0), _t(-1.0), validate_args=False).scale.item() == -1.0
    D.Distribution.set_default_validate_args(False)
    try:
        d = D.Exponential(_t([1.0]))
        assert d.log_prob(_t([-1.0])).item() == pytest.approx(1.0)  # the formula, unchecked
        D.Normal(_t(0.0), _t(-1.0))
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(_t(0.0), _t(-1.0))
    with pytest.raises(ValueError, match="True or False"):
        D.Distribution.set_default_validate_args("yes")


def test_constructors_need_exactly_one_parametrization():
    with pytest.raises(ValueError, match="either probs or logits"):
        D.Bernoulli(probs=_t(0.5), logits=_t(0.0))
    with pytest.raises(ValueError, match="either probs or logits"):
        D.Categorical()
    with pytest.raises(ValueError, match="exactly one of"):
        D.MultivariateNormal(_t([0.0]))


def test_expand_shares_parameters_and_rejects_bad_shapes():
    d = D.Normal(_t([0.0, 1.0]), _t([1.0, 2.0]))
    e = d.expand((3, 2))
    assert tuple(e.loc.shape) == (3, 2) and tuple(e.log_prob(_t(0.5)).shape) == (3, 2)
    np.testing.assert_allclose(e.log_prob(_t(0.5)).numpy()[2], d.log_prob(_t(0.5)).numpy())
    with pytest.raises(ValueError, match="Normal.expand"):
        d.expand((3,))
    cat = D.Categorical(logits=_t([0.1, 0.2, 0.7])).expand((4,))
    assert tuple(cat.sample().shape) == (4,) and tuple(cat.logits.shape) == (4, 3)


def test_constraints_check_values():
    c = D.constraints
    assert c.positive.check(_t([1.0, 0.0])).tolist() == [True, False]
    assert c.unit_interval.check(_t([0.0, 1.0, 1.1])).tolist() == [True, True, False]
    assert c.integer_interval(0, 3).check(_t([0.0, 3.0, 1.5, 4.0])).tolist() == [True, True, False, False]
    assert c.nonnegative_integer.check(_t([0.0, 2.0, -1.0])).tolist() == [True, True, False]
    assert c.boolean.check(_t([0.0, 1.0, 0.5])).tolist() == [True, True, False]
    assert c.simplex.check(_t([[0.2, 0.8], [0.5, 0.6]])).tolist() == [True, False]
    assert c.lower_cholesky.check(_t([[[1.0, 0.0], [2.0, 1.0]], [[1.0, 1.0], [0.0, 1.0]]])).tolist() == [True, False]
    spd = [[2.0, 1.0], [1.0, 2.0]]
    assert c.positive_definite.check(_t([spd, [[1.0, 2.0], [2.0, 1.0]]])).tolist() == [True, False]
    assert c.real.check(_t([1.0, math.nan])).tolist() == [True, False]
    assert c.independent(c.positive, 1).check(_t([[1.0, 2.0], [1.0, -1.0]])).tolist() == [True, False]
    assert c.is_dependent(c.dependent) and not c.is_dependent(c.real)
    assert D.Uniform(_t(0.0), _t(2.0)).support.check(_t(1.0)).item()


# -- the special functions behind the densities ---------------------------------------------------------------

def test_special_functions_match_torch_with_gradients():
    torch = pytest.importorskip("torch")
    x = np.array([0.1, 0.7, 1.0, 2.5, 8.0, 30.0, -0.3, -2.6])
    for name, call in [("lgamma", lambda m, v: m.lgamma(v)), ("digamma", lambda m, v: m.digamma(v)),
                       ("polygamma1", lambda m, v: m.polygamma(1, v)), ("polygamma2", lambda m, v: m.polygamma(2, v))]:
        e, t = _t(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        e_out, t_out = call(ember, e), call(torch, t)
        # PyTorch's trigamma is good to ~1e-9 (the conformance suite checks against SciPy at 1e-9)
        np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-7, atol=1e-12,
                                   err_msg=name)
        e_out.sum().backward()
        t_out.sum().backward()
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-6, err_msg=f"{name} gradient")
    y = _t([-0.99, -0.5, 0.0, 0.3, 0.999])
    np.testing.assert_allclose(ember.erfinv(y).numpy(), torch.erfinv(torch.tensor(y.numpy())).numpy(), rtol=1e-10)
    assert _t([1.5]).lgamma().item() == pytest.approx(math.lgamma(1.5))
    assert _t([1.5]).polygamma(1).item() == pytest.approx(torch.polygamma(1, torch.tensor(1.5)).item())
    with pytest.raises(ValueError, match="polygamma: the order n must be non-negative"):
        ember.polygamma(-1, _t([1.0]))


def _other_backends():
    status = ember.backends.available()
    return [name for name, state in status.items() if name != "cpu" and state == "available"]


@pytest.mark.parametrize("backend", _other_backends())
def test_distributions_run_on_other_backends(backend):
    """Densities on another backend agree with the CPU's (float32, the dtype every backend has)."""
    def build(device):
        conc = ember.tensor([[0.5, 1.0, 2.0], [3.0, 0.8, 5.0]], device=device)
        rate = ember.tensor([[1.0, 2.0, 0.5], [1.5, 1.0, 3.0]], device=device)
        cov = ember.tensor([[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 0.5]], device=device)
        return [D.Normal(conc, rate), D.Gamma(conc, rate), D.Beta(conc, rate), D.Dirichlet(conc),
                D.Poisson(rate * 20), D.Categorical(conc), D.Laplace(conc, rate), D.Exponential(rate),
                D.LogNormal(conc, rate), D.MultivariateNormal(conc, covariance_matrix=cov)]
    for on_cpu, on_device in zip(build("cpu"), build(backend)):
        draws = on_device.sample((50,))
        assert draws.device.type == backend
        expected = on_cpu.log_prob(draws.cpu()).numpy()
        np.testing.assert_allclose(on_device.log_prob(draws).cpu().numpy(), expected, rtol=1e-4, atol=1e-4)
        if not isinstance(on_cpu, D.Poisson):  # no closed-form entropy, as in PyTorch
            np.testing.assert_allclose(on_device.entropy().cpu().numpy(), on_cpu.entropy().numpy(), rtol=1e-4)
