"""ember.distributions against torch.distributions: values and parameter gradients in float64."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import distributions as D

torch = pytest.importorskip("torch")
TD = torch.distributions

RNG = np.random.default_rng(0)


def _pos(*shape, low=0.5, high=3.0):
    return RNG.uniform(low, high, shape)


def _probs(*shape):
    p = RNG.uniform(0.1, 1.0, shape)
    return p / p.sum(-1, keepdims=True)


def _spd(batch, n):
    a = RNG.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _tril(batch, n):
    return np.linalg.cholesky(_spd(batch, n))


#: name -> (class name, parameters as keyword arguments, values for log_prob / cdf)
CASES = {
    "normal": ("Normal", dict(loc=RNG.normal(size=(2, 3)), scale=_pos(2, 3)), RNG.normal(size=(4, 2, 3))),
    "uniform": ("Uniform", dict(low=-_pos(3), high=_pos(3)), RNG.uniform(-0.4, 0.4, (5, 3))),
    "exponential": ("Exponential", dict(rate=_pos(2, 3)), _pos(2, 3, low=0.0, high=4.0)),
    "laplace": ("Laplace", dict(loc=RNG.normal(size=(3,)), scale=_pos(3)), RNG.normal(size=(2, 3))),
    "gamma": ("Gamma", dict(concentration=_pos(2, 3, low=0.3), rate=_pos(2, 3)), _pos(2, 3, low=0.05, high=5.0)),
    "beta": ("Beta", dict(concentration1=_pos(4), concentration0=_pos(4)), RNG.uniform(0.05, 0.95, (2, 4))),
    "dirichlet": ("Dirichlet", dict(concentration=_pos(2, 4)), _probs(3, 2, 4)),
    "poisson": ("Poisson", dict(rate=_pos(2, 3)), RNG.integers(0, 6, (2, 3)).astype(np.float64)),
    "bernoulli_probs": ("Bernoulli", dict(probs=RNG.uniform(0.05, 0.95, (2, 3))),
                        RNG.integers(0, 2, (2, 3)).astype(np.float64)),
    "bernoulli_logits": ("Bernoulli", dict(logits=RNG.normal(size=(3,))),
                         RNG.integers(0, 2, (4, 3)).astype(np.float64)),
    "categorical_probs": ("Categorical", dict(probs=_probs(2, 5)), RNG.integers(0, 5, (3, 2))),
    "categorical_logits": ("Categorical", dict(logits=RNG.normal(size=(3, 4))), RNG.integers(0, 4, (3,))),
    "onehot": ("OneHotCategorical", dict(probs=_probs(2, 4)), np.eye(4)[RNG.integers(0, 4, (3, 2))]),
    "mvn_cov": ("MultivariateNormal", dict(loc=RNG.normal(size=(2, 3)), covariance_matrix=_spd((2,), 3)),
                RNG.normal(size=(4, 2, 3))),
    "mvn_precision": ("MultivariateNormal", dict(loc=RNG.normal(size=(3,)), precision_matrix=_spd((), 3)),
                      RNG.normal(size=(2, 3))),
    "mvn_tril": ("MultivariateNormal", dict(loc=RNG.normal(size=(3,)), scale_tril=_tril((2,), 3)),
                 RNG.normal(size=(2, 3))),
    "lognormal": ("LogNormal", dict(loc=RNG.normal(size=(3,)), scale=_pos(3)), _pos(2, 3, low=0.1, high=4.0)),
}
CDF = {"normal", "uniform", "exponential", "laplace", "lognormal", "gamma"}
ICDF = {"normal", "uniform", "exponential", "laplace", "lognormal"}


def _build(name, requires_grad=True):
    cls, params, value = CASES[name]
    e_params = {k: ember.tensor(v, dtype=ember.float64, requires_grad=requires_grad) for k, v in params.items()}
    t_params = {k: torch.tensor(v, dtype=torch.float64, requires_grad=requires_grad) for k, v in params.items()}
    return getattr(D, cls)(**e_params), getattr(TD, cls)(**t_params), e_params, t_params, value


def _close(a, b, rtol=1e-8, atol=1e-10, what=""):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape, f"{what}: shape {a.shape} != torch's {b.shape}"
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def _value(value, torch_side: bool):
    integer = value.dtype.kind in "iu"
    if torch_side:
        return torch.tensor(value, dtype=torch.int64 if integer else torch.float64)
    return ember.tensor(value, dtype=ember.int64 if integer else ember.float64)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_torch(name):
    e, t, _, _, value = _build(name, requires_grad=False)
    assert tuple(e.batch_shape) == tuple(t.batch_shape) and tuple(e.event_shape) == tuple(t.event_shape)
    _close(e.log_prob(_value(value, False)), t.log_prob(_value(value, True)), what=f"{name} log_prob")
    if name == "poisson":  # PyTorch has no closed form either
        with pytest.raises(NotImplementedError):
            t.entropy()
        with pytest.raises(NotImplementedError, match="Poisson"):
            e.entropy()
    else:
        _close(e.entropy(), t.entropy(), what=f"{name} entropy")
    for stat in ("mean", "variance", "stddev", "mode"):
        _close(getattr(e, stat), getattr(t, stat), what=f"{name} {stat}")
    if name in CDF:
        _close(e.cdf(_value(value, False)), t.cdf(_value(value, True)), what=f"{name} cdf")
    if name in ICDF:
        q = RNG.uniform(0.05, 0.95, tuple(t.batch_shape))
        _close(e.icdf(ember.tensor(q)), t.icdf(torch.tensor(q)), rtol=1e-7, what=f"{name} icdf")


@pytest.mark.parametrize("name", sorted(CASES))
def test_parameter_gradients_match_torch(name):
    e, t, e_params, t_params, value = _build(name)
    e_total = e.log_prob(_value(value, False)).sum()
    t_total = t.log_prob(_value(value, True)).sum()
    if name != "poisson":
        e_total, t_total = e_total + e.entropy().sum(), t_total + t.entropy().sum()
    if name in CDF - {"gamma"}:  # PyTorch cannot differentiate gammainc in the concentration (tested below)
        e_total = e_total + e.cdf(_value(value, False)).sum()
        t_total = t_total + t.cdf(_value(value, True)).sum()
    e_total.backward()
    t_total.backward()
    for key in e_params:
        _close(e_params[key].grad, t_params[key].grad, rtol=1e-7, atol=1e-9, what=f"{name} d/d{key}")


@pytest.mark.parametrize("name", ["categorical_probs", "bernoulli_probs", "onehot"])
def test_enumerate_support_matches_torch(name):
    e, t, *_ = _build(name, requires_grad=False)
    for expand in (True, False):
        _close(e.enumerate_support(expand).to(ember.float64), t.enumerate_support(expand).double(),
               what=f"{name} enumerate_support(expand={expand})")


def test_gamma_cdf_concentration_gradient_matches_finite_differences():
    a = ember.tensor([0.3, 1.0, 2.5, 9.0], dtype=ember.float64, requires_grad=True)
    x = ember.tensor([0.2, 1.5, 2.0, 12.0], dtype=ember.float64)
    D.Gamma(a, 1.0).cdf(x).sum().backward()
    from scipy import special
    h = 1e-6
    a0, x0 = a.detach().numpy(), x.numpy()
    expected = (special.gammainc(a0 + h, x0) - special.gammainc(a0 - h, x0)) / (2 * h)
    np.testing.assert_allclose(a.grad.numpy(), expected, rtol=1e-6)


# -- kl_divergence ----------------------------------------------------------------------------------------

KL_PAIRS = [("normal", lambda: dict(loc=RNG.normal(size=(2, 3)), scale=_pos(2, 3))),
            ("bernoulli_probs", lambda: dict(probs=RNG.uniform(0.05, 0.95, (2, 3)))),
            ("categorical_probs", lambda: dict(probs=_probs(2, 5))),
            ("onehot", lambda: dict(probs=_probs(2, 4))),
            ("uniform", lambda: dict(low=-_pos(3, low=1.0), high=_pos(3, low=1.0))),
            ("exponential", lambda: dict(rate=_pos(2, 3))),
            ("gamma", lambda: dict(concentration=_pos(2, 3), rate=_pos(2, 3))),
            ("beta", lambda: dict(concentration1=_pos(4), concentration0=_pos(4))),
            ("dirichlet", lambda: dict(concentration=_pos(2, 4))),
            ("laplace", lambda: dict(loc=RNG.normal(size=(3,)), scale=_pos(3))),
            ("poisson", lambda: dict(rate=_pos(2, 3))),
            ("mvn_tril", lambda: dict(loc=RNG.normal(size=(3,)), scale_tril=_tril((2,), 3))),
            ("mvn_cov", lambda: dict(loc=RNG.normal(size=(2, 3)), covariance_matrix=_spd((2,), 3)))]


@pytest.mark.parametrize("name,other_params", KL_PAIRS, ids=[n for n, _ in KL_PAIRS])
def test_kl_divergence_matches_torch(name, other_params):
    e_p, t_p, e_params, t_params, _ = _build(name)
    cls = CASES[name][0]
    params = other_params()
    e_q = getattr(D, cls)(**{k: ember.tensor(v, dtype=ember.float64) for k, v in params.items()})
    t_q = getattr(TD, cls)(**{k: torch.tensor(v, dtype=torch.float64) for k, v in params.items()})
    e_kl, t_kl = D.kl_divergence(e_p, e_q), TD.kl_divergence(t_p, t_q)
    _close(e_kl, t_kl, rtol=1e-7, what=f"KL {name}")
    e_kl.sum().backward()
    t_kl.sum().backward()
    for key in e_params:
        _close(e_params[key].grad, t_params[key].grad, rtol=1e-6, atol=1e-9, what=f"KL {name} d/d{key}")


def test_kl_independent_sums_over_reinterpreted_dims():
    e_p, t_p, *_ = _build("normal", requires_grad=False)
    params = dict(loc=RNG.normal(size=(2, 3)), scale=_pos(2, 3))
    e_q = D.Normal(**{k: ember.tensor(v) for k, v in params.items()})
    t_q = TD.Normal(**{k: torch.tensor(v) for k, v in params.items()})
    e_kl = D.kl_divergence(D.Independent(e_p, 1), D.Independent(e_q, 1))
    t_kl = TD.kl_divergence(TD.Independent(t_p, 1), TD.Independent(t_q, 1))
    _close(e_kl, t_kl, what="KL Independent")
    assert tuple(e_kl.shape) == (2,)


def test_kl_uniform_outside_support_is_infinite():
    p = D.Uniform(ember.tensor([0.0, 0.0]), ember.tensor([1.0, 1.0]))
    q = D.Uniform(ember.tensor([0.5, -1.0]), ember.tensor([2.0, 2.0]))
    kl = D.kl_divergence(p, q).numpy()
    assert np.isinf(kl[0]) and np.isclose(kl[1], np.log(3.0))


def test_kl_dispatch_prefers_the_most_specific_registration_and_rejects_unknown_pairs():
    class MyNormal(D.Normal):
        pass

    calls = []

    @D.register_kl(MyNormal, D.Normal)
    def _mine(p, q):
        calls.append("mine")
        return ember.zeros(tuple(p.batch_shape))

    p, q = MyNormal(ember.zeros(2), ember.ones(2)), D.Normal(ember.zeros(2), ember.ones(2))
    D.kl_divergence(p, q)
    D.kl_divergence(q, q)
    assert calls == ["mine"]
    with pytest.raises(NotImplementedError, match="Normal.*Exponential"):
        D.kl_divergence(q, D.Exponential(ember.ones(2)))


# -- transforms --------------------------------------------------------------------------------------------

TRANSFORMS = {
    "exp": (lambda m: m.ExpTransform(), RNG.normal(size=(2, 3))),
    "affine": (lambda m: m.AffineTransform(0.5, -2.0), RNG.normal(size=(2, 3))),
    "affine_tensor": (lambda m: m.AffineTransform(m_tensor(m, [1.0, 2.0, 3.0]), m_tensor(m, [0.5, -1.5, 2.0]),
                                                  event_dim=1), RNG.normal(size=(2, 3))),
    "sigmoid": (lambda m: m.SigmoidTransform(), RNG.normal(size=(2, 3)) * 3),
    "tanh": (lambda m: m.TanhTransform(), RNG.normal(size=(2, 3))),
    "power": (lambda m: m.PowerTransform(2.5), _pos(2, 3)),
    "compose": (lambda m: m.ComposeTransform([m.AffineTransform(0.3, 2.0), m.TanhTransform(),
                                              m.AffineTransform(1.0, 0.5)]), RNG.normal(size=(4,))),
}


def m_tensor(module, values):
    return (ember.tensor if module is D.transforms else torch.tensor)(values, dtype=(
        ember.float64 if module is D.transforms else torch.float64))


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transforms_match_torch(name):
    make, x = TRANSFORMS[name]
    e_t, t_t = make(D.transforms), make(TD.transforms)
    e_x, t_x = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    e_y, t_y = e_t(e_x), t_t(t_x)
    _close(e_y, t_y, what=f"{name} forward")
    _close(e_t.inv(e_y), x, rtol=1e-7, what=f"{name} inverse")
    e_ladj, t_ladj = e_t.log_abs_det_jacobian(e_x, e_y), t_t.log_abs_det_jacobian(t_x, t_y)
    _close(e_ladj, t_ladj, what=f"{name} log_abs_det_jacobian")
    _close(e_t.inv.log_abs_det_jacobian(e_y, e_x), t_t.inv.log_abs_det_jacobian(t_y, t_x), what=f"{name} inv ladj")
    assert e_ladj.requires_grad == t_ladj.requires_grad  # affine: a constant
    if t_ladj.requires_grad:
        e_ladj.sum().backward()
        t_ladj.sum().backward()
        _close(e_x.grad, t_x.grad, rtol=1e-7, what=f"{name} d ladj / dx")


def test_cached_transforms_return_the_remembered_input():
    x = ember.tensor([0.3, -1.2])
    for transform in (D.transforms.TanhTransform(), D.transforms.AffineTransform(1.0, 2.0),
                      D.transforms.ComposeTransform([D.transforms.ExpTransform(), D.transforms.PowerTransform(2.0)])):
        cached = transform.with_cache(1)
        assert cached.with_cache(1) is cached and type(cached) is type(transform)
        y = cached(x)
        assert cached.inv(y) is x
        assert transform.inv(y) is not x
        np.testing.assert_allclose(transform.inv(y).numpy(), x.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="cache_size"):
        D.transforms.ExpTransform(cache_size=2)


def test_softmax_transform_maps_onto_the_simplex():
    x = RNG.normal(size=(2, 5))
    y = D.transforms.SoftmaxTransform()(ember.tensor(x))
    _close(y, TD.transforms.SoftmaxTransform()(torch.tensor(x)), what="softmax")
    _close(D.transforms.SoftmaxTransform().inv(y), torch.tensor(x).log_softmax(-1), what="softmax inverse")


def test_transformed_distribution_matches_torch():
    loc, scale = RNG.normal(size=(3,)), _pos(3)
    chain = [lambda m: m.AffineTransform(0.2, 1.5), lambda m: m.SigmoidTransform()]
    e = D.TransformedDistribution(D.Normal(ember.tensor(loc), ember.tensor(scale)), [c(D.transforms) for c in chain])
    t = TD.TransformedDistribution(TD.Normal(torch.tensor(loc), torch.tensor(scale)),
                                   [c(TD.transforms) for c in chain])
    y = RNG.uniform(0.05, 0.95, (4, 3))
    _close(e.log_prob(ember.tensor(y)), t.log_prob(torch.tensor(y)), what="log_prob")
    _close(e.cdf(ember.tensor(y)), t.cdf(torch.tensor(y)), what="cdf")
    q = RNG.uniform(0.1, 0.9, (3,))
    _close(e.icdf(ember.tensor(q)), t.icdf(torch.tensor(q)), rtol=1e-7, what="icdf")
    # a transform with event_dim 1 makes the base's last batch dim an event dim
    e2 = D.TransformedDistribution(D.Normal(ember.tensor(loc), ember.tensor(scale)),
                                   [D.transforms.AffineTransform(ember.tensor(loc), ember.tensor(scale), event_dim=1)])
    t_affine = TD.transforms.AffineTransform(torch.tensor(loc), torch.tensor(scale), event_dim=1)
    t2 = TD.TransformedDistribution(TD.Normal(torch.tensor(loc), torch.tensor(scale)), [t_affine])
    assert tuple(e2.event_shape) == tuple(t2.event_shape) == (3,) and tuple(e2.batch_shape) == ()
    _close(e2.log_prob(ember.tensor(y)), t2.log_prob(torch.tensor(y)), what="event_dim=1 log_prob")


def test_independent_matches_torch():
    e, t, *_ = _build("normal", requires_grad=False)
    e_i, t_i = D.Independent(e, 1), TD.Independent(t, 1)
    assert (tuple(e_i.batch_shape), tuple(e_i.event_shape)) == (tuple(t_i.batch_shape), tuple(t_i.event_shape))
    value = RNG.normal(size=(5, 2, 3))
    _close(e_i.log_prob(ember.tensor(value)), t_i.log_prob(torch.tensor(value)), what="Independent log_prob")
    _close(e_i.entropy(), t_i.entropy(), what="Independent entropy")
    assert tuple(e_i.rsample((7,)).shape) == (7, 2, 3)
    assert e_i.support.event_dim == 1
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims"):
        D.Independent(e, 3)
