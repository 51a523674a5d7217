"""Sampling (multinomial, poisson, bernoulli, normal, *_like, random_ and the in-place fills) against
PyTorch's distributions: the RNG streams differ, so the tests compare distributions, not values.

Statistics use fixed seeds and thresholds far in the tails (about 1 in 10^4 for a correct sampler),
yet a wrong distribution (an off-by-one category, a wrong rate or scale) fails them by a wide margin.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

OPENCL = ember.backends.available().get("opencl", "unavailable: not registered")
DEVICES = ["cpu", pytest.param("opencl", marks=pytest.mark.skipif(OPENCL != "available",
                                                                  reason=f"opencl {OPENCL}"))]


@pytest.fixture(params=DEVICES)
def device(request):
    ember.manual_seed(2024)
    torch.manual_seed(2024)
    return request.param


def _host(t) -> np.ndarray:
    return t.cpu().numpy() if hasattr(t, "cpu") else np.asarray(t)


def _chi_square_ok(counts, expected) -> bool:
    """Pearson's statistic below a generous critical value (about the 99.99% point) for its degrees of freedom."""
    counts, expected = np.asarray(counts, np.float64), np.asarray(expected, np.float64)
    keep = expected > 0
    assert counts[~keep].sum() == 0, f"draws in categories of probability zero: {counts}"
    statistic = float((((counts - expected) ** 2)[keep] / expected[keep]).sum())
    df = max(int(keep.sum()) - 1, 1)
    return statistic < df + 6 * math.sqrt(2 * df) + 10


def _two_sample_ks_ok(a, b) -> bool:
    """Kolmogorov-Smirnov distance below its 0.1% critical value."""
    a, b = np.sort(np.asarray(a, np.float64)), np.sort(np.asarray(b, np.float64))
    grid = np.concatenate([a, b])
    distance = np.max(np.abs(np.searchsorted(a, grid, "right") / a.size - np.searchsorted(b, grid, "right") / b.size))
    return distance < 1.95 * math.sqrt((a.size + b.size) / (a.size * b.size))


# -- multinomial ---------------------------------------------------------------------------------

WEIGHTS = [0.5, 2.0, 0.0, 3.0, 1.5, 0.0, 3.0]


def test_multinomial_with_replacement_matches_the_weights(device):
    n = 40000
    draws = _host(ember.multinomial(ember.tensor(WEIGHTS, device=device), n, replacement=True))
    assert draws.dtype == np.int64 and draws.shape == (n,)
    probabilities = np.array(WEIGHTS) / sum(WEIGHTS)
    assert _chi_square_ok(np.bincount(draws, minlength=len(WEIGHTS)), n * probabilities)


def test_multinomial_rows_use_their_own_weights(device):
    weights = [[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 3.0], [1.0, 1.0, 1.0, 1.0]]
    draws = _host(ember.tensor(weights, device=device).multinomial(20000, True))
    reference = torch.tensor(weights).multinomial(20000, True)
    assert draws.shape == tuple(reference.shape) and draws.dtype == np.int64
    for row, w in zip(draws, weights):
        assert _chi_square_ok(np.bincount(row, minlength=4), 20000 * np.array(w) / sum(w))


def test_multinomial_without_replacement_draws_in_sequence(device):
    """Distinct categories per row; the first pick follows the weights, the second pick follows the weights
    with the first taken out (compared with PyTorch's second picks)."""
    rows = 20000
    weights = [[1.0, 2.0, 3.0, 4.0, 0.0]] * rows
    picks = _host(ember.multinomial(ember.tensor(weights, device=device), 3))
    reference = torch.multinomial(torch.tensor(weights), 3).numpy()
    assert picks.shape == reference.shape == (rows, 3)
    assert all(len(set(row)) == 3 for row in picks), "a category drawn twice without replacement"
    assert not np.any(picks == 4), "a category of weight zero drawn"
    assert _chi_square_ok(np.bincount(picks[:, 0], minlength=5), rows * np.array(weights[0]) / 10)
    ours, theirs = np.bincount(picks[:, 1], minlength=5), np.bincount(reference[:, 1], minlength=5)
    pooled = (ours + theirs) / 2
    assert _chi_square_ok(ours, pooled) and _chi_square_ok(theirs, pooled)


def test_multinomial_without_replacement_takes_every_category_when_asked(device):
    picks = _host(ember.multinomial(ember.tensor([[3.0, 1.0, 2.0], [1.0, 1.0, 1.0]], device=device), 3))
    assert sorted(picks[0]) == [0, 1, 2] and sorted(picks[1]) == [0, 1, 2]


def test_multinomial_shapes_match_pytorch(device):
    for shape, n, replacement in [((5,), 1, False), ((5,), 3, True), ((2, 5), 1, True), ((0, 3), 2, False)]:
        ours = ember.multinomial(ember.ones(*shape, device=device), n, replacement)
        theirs = torch.multinomial(torch.ones(*shape), n, replacement)
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.dtype == ember.int64


def test_multinomial_half_precision_weights():
    draws = _host(ember.multinomial(ember.tensor([1.0, 3.0], dtype=ember.float16), 8000, True))
    assert _chi_square_ok(np.bincount(draws, minlength=2), [2000, 6000])


def test_multinomial_generator_reproducible(device):
    weights = ember.tensor([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]], device=device)
    for replacement, n in [(True, 50), (False, 2)]:
        first = ember.multinomial(weights, n, replacement, generator=ember.Generator(device).manual_seed(7))
        again = ember.multinomial(weights, n, replacement, generator=ember.Generator(device).manual_seed(7))
        np.testing.assert_array_equal(_host(first), _host(again))


MULTINOMIAL_ERRORS = [
    (lambda d: ember.multinomial(ember.tensor([1, 2], device=d), 1), ember.DtypeError, ["multinomial", "int64"]),
    (lambda d: ember.multinomial(ember.tensor(1.0, device=d), 1), ember.ShapeError, ["1 or 2 dim", "shape=()"]),
    (lambda d: ember.multinomial(ember.ones(2, 2, 2, device=d), 1), ember.ShapeError, ["1 or 2 dim", "(2, 2, 2)"]),
    (lambda d: ember.multinomial(ember.ones(3, device=d), 0), ValueError, ["n_sample <= 0"]),
    (lambda d: ember.multinomial(ember.ones(3, device=d), -2, True), ValueError, ["n_sample <= 0"]),
    (lambda d: ember.multinomial(ember.ones(3, device=d), 4), ValueError, ["without replacement", "3 categories"]),
    (lambda d: ember.multinomial(ember.tensor([1.0, -1.0, 1.0], device=d), 1), ValueError, ["element < 0"]),
    (lambda d: ember.multinomial(ember.tensor([1.0, math.inf], device=d), 1, True), ValueError, ["inf"]),
    (lambda d: ember.multinomial(ember.tensor([1.0, math.nan], device=d), 1), ValueError, ["nan"]),
    (lambda d: ember.multinomial(ember.tensor([[1.0, 1.0], [0.0, 0.0]], device=d), 2, True), ValueError,
     ["sum of probabilities <= 0"]),
    (lambda d: ember.multinomial(ember.tensor([1.0, 0.0, 0.0], device=d), 2), ValueError,
     ["not enough non-zero categories"]),
]


@pytest.mark.parametrize("index", range(len(MULTINOMIAL_ERRORS)))
def test_multinomial_errors(device, index):
    call, error, fragments = MULTINOMIAL_ERRORS[index]
    with pytest.raises(error) as info:
        call(device)
    message = str(info.value)
    assert "multinomial" in message and all(f in message for f in fragments), message


# -- poisson -------------------------------------------------------------------------------------

def _poisson_pmf(rate, k):
    return np.exp(k * math.log(rate) - rate - np.array([math.lgamma(j + 1) for j in k])) if rate else (k == 0) * 1.0


@pytest.mark.parametrize("rate", [0.0, 0.3, 4.0, 9.99, 10.0, 37.5, 2500.0])
def test_poisson_matches_the_pmf(device, rate):
    """Chi-square against the exact pmf, both sides of the switch between the two samplers."""
    n = 30000
    draws = _host(ember.poisson(ember.full((n,), rate, device=device)))
    assert np.all(draws == np.round(draws)) and draws.min() >= 0
    low, high = int(max(0, rate - 6 * math.sqrt(rate) - 1)), int(rate + 6 * math.sqrt(rate) + 8)
    k = np.arange(low, high)
    expected = n * _poisson_pmf(rate, k)
    counts = np.array([(draws == j).sum() for j in k])
    assert counts.sum() >= n - 5, "draws far in the tails"
    coarse = expected >= 5  # pool the thin tails into their neighbours' bins
    assert _chi_square_ok(np.append(counts[coarse], n - counts[coarse].sum()),
                          np.append(expected[coarse], n - expected[coarse].sum()))


def test_poisson_compares_with_pytorch_on_mixed_rates(device):
    rates = np.tile([0.5, 3.0, 12.0, 150.0, 1e6], 6000)
    ours = _host(ember.poisson(ember.tensor(rates, device=device)))
    theirs = torch.poisson(torch.tensor(rates)).numpy()
    for rate in (0.5, 3.0, 12.0, 150.0, 1e6):
        assert _two_sample_ks_ok(ours[rates == rate], theirs[rates == rate]), f"rate {rate}"


def test_poisson_dtypes_and_generator(device):
    for dtype in (ember.float32, ember.float64):
        rates = ember.full((3, 4), 5.0, dtype=dtype, device=device)
        out = ember.poisson(rates, ember.Generator(device).manual_seed(3))
        assert out.dtype == dtype and tuple(out.shape) == (3, 4)
        np.testing.assert_array_equal(_host(out), _host(ember.poisson(rates, generator=ember.Generator(device)
                                                                      .manual_seed(3))))


@pytest.mark.parametrize("rates,error,fragment", [
    ([1.0, -1.0], ValueError, "non-negative"), ([math.nan], ValueError, "non-negative"),
    ([math.inf], ValueError, "finite")])
def test_poisson_errors(device, rates, error, fragment):
    with pytest.raises(error, match=fragment) as info:
        ember.poisson(ember.tensor(rates, device=device))
    assert "poisson" in str(info.value)
    with pytest.raises(ember.DtypeError, match="poisson"):
        ember.poisson(ember.tensor([1, 2], device=device))


# -- bernoulli -----------------------------------------------------------------------------------

def test_bernoulli_overloads(device):
    n = 40000
    probabilities = ember.full((n,), 0.25, device=device)
    assert abs(_host(ember.bernoulli(probabilities)).mean() - 0.25) < 0.015
    assert abs(_host(ember.bernoulli(probabilities, 0.8)).mean() - 0.8) < 0.015
    assert abs(_host(probabilities.bernoulli(p=0.6)).mean() - 0.6) < 0.015
    filled = ember.zeros(n, dtype=ember.int64, device=device).bernoulli_(0.3)
    assert filled.dtype == ember.int64 and abs(_host(filled).mean() - 0.3) < 0.015
    by_tensor = ember.zeros(2, n // 2, device=device).bernoulli_(ember.tensor([0.1] * (n // 2), device=device))
    assert abs(_host(by_tensor).mean() - 0.1) < 0.015
    assert set(np.unique(_host(ember.zeros(100, dtype=ember.bool, device=device).bernoulli_()))) <= {False, True}
    assert torch.bernoulli(torch.full((3,), 0.5)).dtype == torch.float32
    assert ember.bernoulli(ember.full((3,), 0.5, dtype=ember.float64, device=device)).dtype == ember.float64


def test_bernoulli_errors(device):
    with pytest.raises(ValueError, match=r"bernoulli.*p=2"):
        ember.bernoulli(ember.ones(3, device=device), 2.0)
    with pytest.raises(ValueError, match="bernoulli_"):
        ember.ones(3, device=device).bernoulli_(1.5)
    with pytest.raises(ValueError, match="bernoulli"):
        ember.bernoulli(ember.full((3,), 2.0, device=device))
    with pytest.raises(ember.DtypeError, match="bernoulli"):
        ember.bernoulli(ember.ones(3, dtype=ember.int64, device=device))
    with pytest.raises(ember.DtypeError, match="bernoulli_"):
        ember.ones(3, device=device).bernoulli_(ember.ones(3, dtype=ember.int64, device=device))
    with pytest.raises(ember.ShapeError, match="bernoulli_"):
        ember.ones(3, device=device).bernoulli_(ember.full((2, 3), 0.5, device=device))


# -- normal --------------------------------------------------------------------------------------

def test_normal_overloads_match_pytorch_shapes_and_dtypes(device):
    cases = [
        lambda m, d: m.normal(m.zeros(3, device=d), m.ones(2, 3, device=d)),
        lambda m, d: m.normal(m.zeros(3, dtype=m.float64, device=d), m.ones(3, device=d)),
        lambda m, d: m.normal(m.zeros(2, 2, device=d), 2.0),
        lambda m, d: m.normal(0.0, m.ones(4, device=d)),
        lambda m, d: m.normal(1.0, 2.0, (2, 3), device=d),
        lambda m, d: m.normal(1.0, 2.0, size=(5,), dtype=m.float64, device=d),
    ]
    for make in cases:
        ours, theirs = make(ember, device), make(torch, "cpu")
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.dtype.name == str(theirs.dtype)[6:]


def test_normal_with_tensor_parameters_is_normal(device):
    n = 20000
    means, stds = np.tile([-3.0, 5.0], n), np.tile([0.5, 2.0], n)
    draws = _host(ember.normal(ember.tensor(means, device=device), ember.tensor(stds, device=device)))
    reference = torch.normal(torch.tensor(means), torch.tensor(stds)).numpy()
    for k in range(2):
        assert _two_sample_ks_ok(draws[k::2], reference[k::2])


def test_normal_errors(device):
    with pytest.raises(ValueError, match=r"normal.*std >= 0"):
        ember.normal(ember.zeros(3, device=device), ember.tensor([1.0, -1.0, 1.0], device=device))
    with pytest.raises(ValueError, match="normal"):
        ember.normal(ember.zeros(3, device=device), -1.0)
    with pytest.raises(ember.DtypeError, match="normal"):
        ember.normal(ember.zeros(3, dtype=ember.int64, device=device), 1.0)
    with pytest.raises(ember.ShapeError, match="normal"):
        ember.normal(ember.zeros(3, device=device), ember.ones(4, device=device))
    with pytest.raises(TypeError, match="normal"):
        ember.normal(0.0, 1.0)


# -- *_like --------------------------------------------------------------------------------------

def test_like_functions_match_pytorch(device):
    x = ember.ones(3, 4, device=device)
    for name in ("rand_like", "randn_like"):
        assert getattr(ember, name)(x).dtype == ember.float32
        assert tuple(getattr(ember, name)(x, dtype=ember.float64).shape) == (3, 4)
        assert getattr(ember, name)(x).device == x.device
        with pytest.raises(ember.DtypeError, match=name):
            getattr(ember, name)(ember.ones(2, dtype=ember.int64, device=device))
    assert torch.randint_like(torch.ones(3, 4), 5).dtype == torch.float32
    assert ember.randint_like(x, 5).dtype == ember.float32  # the input's dtype, as in PyTorch
    values = _host(ember.randint_like(ember.ones(20000, device=device), 3, 7))
    assert set(np.unique(values)) == {3, 4, 5, 6}
    assert _host(ember.randint_like(x, high=2)).max() <= 1
    small = ember.randint_like(ember.ones(3, dtype=ember.int16, device=device), 5, dtype=ember.int64)
    assert small.dtype == ember.int64
    with pytest.raises(ValueError, match="randint_like"):
        ember.randint_like(ember.ones(3, dtype=ember.uint8, device=device), 300)
    with pytest.raises(ValueError, match="randint_like"):
        ember.randint_like(x, 5, 3)
    uniform = _host(ember.rand_like(ember.ones(20000, device=device)))
    assert _two_sample_ks_ok(uniform, torch.rand(20000).numpy())


# -- random_ -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool"])
def test_random_defaults_per_dtype_match_pytorch(device, dtype):
    if device == "opencl" and dtype in ("float16", "bfloat16"):
        pytest.skip("opencl has no half precision")
    ours = _host(ember.empty(20000, dtype=getattr(ember, dtype), device=device).random_()).astype(np.float64)
    theirs = torch.empty(20000, dtype=getattr(torch, dtype)).random_().double().numpy()
    # both span [0, top] for the dtype: the same top (within sampling), the same mean
    top = max(theirs.max(), ours.max())
    assert ours.min() >= 0 and theirs.min() >= 0 and ours.max() <= (1 if dtype == "bool" else top)
    assert _two_sample_ks_ok(ours / top, theirs / top)


def test_random_overloads(device):
    x = ember.empty(20000, device=device)
    assert set(np.unique(_host(x.random_(4)))) == {0, 1, 2, 3}
    assert set(np.unique(_host(x.random_(3, 6)))) == {3, 4, 5}
    assert set(np.unique(_host(x.random_(**{"from": -2, "to": 1})))) == {-2, -1, 0}
    assert set(np.unique(_host(x.random_(to=2)))) == {0, 1}
    everything = _host(ember.empty(20000, dtype=ember.int64, device=device).random_(-2 ** 63, None))
    assert 0.45 < (everything < 0).mean() < 0.55
    generated = [_host(ember.empty(10, dtype=ember.int32, device=device).random_(
        generator=ember.Generator(device).manual_seed(5))) for _ in range(2)]
    np.testing.assert_array_equal(*generated)


def test_random_errors(device):
    with pytest.raises(ValueError, match=r"random_.*from=10 >= to=3"):
        ember.empty(3, device=device).random_(10, 3)
    with pytest.raises(ValueError, match=r"random_.*out of bounds for uint8"):
        ember.empty(3, dtype=ember.uint8, device=device).random_(0, 300)
    with pytest.raises(ValueError, match=r"random_.*out of bounds for int8"):
        ember.empty(3, dtype=ember.int8, device=device).random_(-200, 3)


# -- in-place fills --------------------------------------------------------------------------------

FILLS = [
    ("uniform_", {"from": -2.0, "to": 3.0}),
    ("normal_", {"mean": 1.0, "std": 3.0}),
    ("exponential_", {"lambd": 2.5}),
    ("geometric_", {"p": 0.3}),
    ("log_normal_", {"mean": 0.5, "std": 0.75}),
    ("cauchy_", {"median": 1.0, "sigma": 2.0}),
]


@pytest.mark.parametrize("name,params", FILLS, ids=[f[0] for f in FILLS])
def test_fills_match_pytorch(device, name, params):
    x = ember.empty(30000, dtype=ember.float64, device=device)
    assert getattr(x, name)(**params) is x
    theirs = getattr(torch.empty(30000, dtype=torch.float64), name)(**params).numpy()
    assert _two_sample_ks_ok(_host(x), theirs)


def test_geometric_fills_integers(device):
    draws = _host(ember.empty(20000, dtype=ember.int64, device=device).geometric_(0.5))
    assert draws.min() == 1 and abs(draws.mean() - 2.0) < 0.06
    with pytest.raises(ember.DtypeError, match="geometric_"):
        ember.empty(3, dtype=ember.bool, device=device).geometric_(0.5)


@pytest.mark.parametrize("call,fragment", [
    (lambda x: x.uniform_(4, 2), "uniform_"), (lambda x: x.normal_(0, -1), "normal_"),
    (lambda x: x.exponential_(0), "exponential_"), (lambda x: x.geometric_(1.0), "geometric_"),
    (lambda x: x.log_normal_(1, 0), "log_normal_"), (lambda x: x.cauchy_(0, -1), "cauchy_")])
def test_fill_errors(device, call, fragment):
    with pytest.raises(ValueError, match=fragment):
        call(ember.empty(3, device=device))
    for name in ("uniform_", "normal_", "exponential_", "log_normal_", "cauchy_"):
        with pytest.raises(ember.DtypeError, match=name):
            getattr(ember.empty(3, dtype=ember.int64, device=device), name)()
