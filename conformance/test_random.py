"""Random ops: no reference values, so shape and dtype (test_meta), ranges, seeding and loose statistics.

Every op of category ``random`` gets the seeding checks from its samples. The range and
distribution of each op are written down in ``DISTRIBUTIONS`` (the schema cannot say them).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.conformance.cases import op_dtype_params
from ember.conformance.checks import Unsupported, call, expected_types, on_device
from ember.conformance.oracle import host
from ember.conformance.samples import fixed_samples

#: Enough draws for the statistics below (the samples' "many draws" cases have a few thousand).
MANY = 1000


def _uniform(low, high):
    return {"range": (low, high), "mean": (low + high) / 2, "std": (high - low) / math.sqrt(12)}


def _integers(low, high):
    return {"range": (low, high), "integral": True, "mean": (low + high - 1) / 2,
            "std": math.sqrt(((high - low) ** 2 - 1) / 12)}


#: op name -> (bound arguments by parameter name, input values or None) -> what the draws must satisfy
DISTRIBUTIONS = {
    "rand_uniform": lambda a, x: _uniform(a["low"], a["high"]),
    "uniform_": lambda a, x: _uniform(a["from"], a["to"]),
    "rand": lambda a, x: _uniform(0.0, 1.0),
    "rand_normal": lambda a, x: {"mean": a["mean"], "std": a["std"]},
    "normal_": lambda a, x: {"mean": a["mean"], "std": a["std"]},
    "randn": lambda a, x: {"mean": 0.0, "std": 1.0},
    "rand_int": lambda a, x: _integers(a["low"], a["high"]),
    "randint": lambda a, x: _integers(a["low"], a["high"]),
    "randperm": lambda a, x: {"permutation": a["n"]},
    "bernoulli": lambda a, x: {"range": (0, 2), "integral": True,
                               "mean": float(np.mean(x)) if a["p"] is None else a["p"]},
    "bernoulli_": lambda a, x: {"range": (0, 2), "integral": True, "mean": float(np.mean(_values(a["p"])))},
    "multinomial": lambda a, x: {"range": (0, x.shape[-1]), "integral": True,
                                 **({} if a["replacement"] else {"distinct_rows": True}), **_categorical(x)},
    "poisson": lambda a, x: {"range": (0, math.inf), "integral": True, **_mixture(x, x)},
    "binomial": lambda a, x: {"range": (0, float(np.max(x, initial=0)) + 1), "integral": True,
                              **_binomial_moments(_values(a["count"]), _values(a["prob"]))},
    "normal": lambda a, x: _mixture(*np.broadcast_arrays(_values(a["mean"]), _values(a["std"]) ** 2)),
    "rand_like": lambda a, x: _uniform(0.0, 1.0),
    "randn_like": lambda a, x: {"mean": 0.0, "std": 1.0},
    "randint_like": lambda a, x: _integers(a["low"], a["high"]),
    "random_": lambda a, x: _integers(a["from"], a["to"]),
    "exponential_": lambda a, x: {"range": (0, math.inf), "mean": 1 / a["lambd"], "std": 1 / a["lambd"]},
    "geometric_": lambda a, x: {"range": (1, math.inf), "integral": True, "mean": 1 / a["p"],
                                "std": math.sqrt(1 - a["p"]) / a["p"]},
    "log_normal_": lambda a, x: {"range": (0, math.inf), **_log_normal(a["mean"], a["std"])},
    "cauchy_": lambda a, x: {"median": a["median"], "quartiles": a["sigma"]},
}


def _values(value) -> np.ndarray:
    """A parameter given as a tensor or a number, as float64 values."""
    return np.asarray(host(value) if hasattr(value, "_data") else value, np.float64)


def _mixture(means, variances) -> dict:
    """Mean and std of the draws pooled over elements with these means and variances."""
    means, variances = np.asarray(means, np.float64), np.asarray(variances, np.float64)
    if means.size == 0:
        return {}
    mean = float(means.mean())
    return {"mean": mean, "std": math.sqrt(float((variances + means ** 2).mean()) - mean ** 2)}


def _binomial_moments(count, prob) -> dict:
    count, prob = np.broadcast_arrays(count, prob)
    return _mixture(count * prob, count * prob * (1 - prob))


def _categorical(weights) -> dict:
    """Pooled mean and std of category indices drawn from each row of weights."""
    rows = np.atleast_2d(np.asarray(weights, np.float64))
    if rows.size == 0:
        return {}
    p = rows / rows.sum(-1, keepdims=True)
    index = np.arange(rows.shape[-1])
    means = (p * index).sum(-1)
    return _mixture(means, (p * index ** 2).sum(-1) - means ** 2)


def _log_normal(mu, sigma) -> dict:
    mean = math.exp(mu + sigma ** 2 / 2)
    return {"mean": mean, "std": mean * math.sqrt(math.exp(sigma ** 2) - 1)}


def pytest_generate_tests(metafunc) -> None:
    metafunc.parametrize("op,dtype", op_dtype_params(metafunc.config, where=lambda op: op.category == "random"))


def _runnable(op, dtype, make, backend):
    samples = []
    for sample in fixed_samples(op, make, dtype):
        sample = on_device(op, sample, backend.device)
        try:
            values, _, _ = expected_types(op, sample, backend)
        except Unsupported:
            continue
        samples.append((sample, dict(zip((p.name for p in op.params), values))))
    if not samples:
        pytest.skip(f"no sample of {op.name} runs on {dtype.name} here")
    return samples


def _draw(op, sample) -> np.ndarray:
    return host(call(op, sample)).astype(np.float64)


def test_seeding(op, dtype, make, backend):
    """manual_seed makes draws repeat; without reseeding the next draws differ."""
    for sample, _ in _runnable(op, dtype, make, backend):
        ember.manual_seed(1234)
        first = _draw(op, sample)
        ember.manual_seed(1234)
        again = _draw(op, sample)
        np.testing.assert_array_equal(again, first, err_msg=f"{op.name} {sample.note}: same seed, other draws")
        if first.size >= 16:
            assert not np.array_equal(_draw(op, sample), again), f"{op.name} {sample.note}: draws repeat unseeded"


def test_generator(op, dtype, make, backend):
    """Two generators seeded alike give the same draws; the default generator is left alone."""
    if "generator" not in op.param_index:
        pytest.skip(f"{op.name} takes no generator")
    for sample, _ in _runnable(op, dtype, make, backend):
        draws = []
        for _ in range(2):
            generator = ember.Generator(backend.device).manual_seed(99)
            seeded = type(sample)(sample.args, {**sample.kwargs, "generator": generator}, sample.note)
            draws.append(_draw(op, seeded))
        np.testing.assert_array_equal(draws[0], draws[1], err_msg=f"{op.name} {sample.note}")


def test_distribution(op, dtype, make, backend):
    """Every draw in range (uniform in [low, high), integers in [low, high), ...); loose mean and std."""
    describe = DISTRIBUTIONS.get(op.name)
    if describe is None:
        pytest.skip(f"no distribution written down for {op.name}")
    for sample, args in _runnable(op, dtype, make, backend):
        inputs = _values(sample.args[0]) if op.tensor_positions else None
        expected = describe(args, inputs)
        draws = _draw(op, sample).reshape(-1)
        where = f"{op.name}({sample.note or 'sample'}, {dtype.name})"
        assert not np.any(np.isnan(draws)), f"{where}: NaN drawn"
        if "range" in expected:
            low, high = expected["range"]
            assert np.all((draws >= low) & (draws < high)), \
                f"{where}: draws outside [{low}, {high}): {draws[(draws < low) | (draws >= high)][:5]}"
        if expected.get("integral"):
            assert np.all(draws == np.round(draws)), f"{where}: non-integer draws"
        if "permutation" in expected:
            np.testing.assert_array_equal(np.sort(draws), np.arange(expected["permutation"]), err_msg=where)
        if expected.get("distinct_rows"):
            rows = draws.reshape(-1, args["num_samples"])
            assert all(len(set(row)) == len(row) for row in rows), f"{where}: a category drawn twice"
        if "median" in expected and draws.size >= MANY:
            _check_quartiles(where, draws, expected["median"], expected["quartiles"])
        if draws.size >= MANY:
            _check_moments(where, draws, expected, dtype)


def _check_quartiles(where, draws, median, half_width) -> None:
    """For heavy tails (Cauchy) that have no moments: the median and the quartiles."""
    q1, q2, q3 = np.quantile(draws, [0.25, 0.5, 0.75])
    tolerance = 0.15 * half_width
    assert abs(q2 - median) <= tolerance, f"{where}: median {q2:.4f}, expected {median}"
    assert abs((q3 - q1) / 2 - half_width) <= tolerance, f"{where}: half the interquartile range " \
        f"{(q3 - q1) / 2:.4f}, expected {half_width}"


def _check_moments(where, draws, expected, dtype) -> None:
    n = draws.size
    resolution = 0.02 if dtype.itemsize == 2 else 0.0  # half precision rounds every draw
    if "std" in expected:
        spread = expected["std"]
        assert abs(draws.std() - spread) <= 0.1 * spread + resolution * abs(expected.get("mean", 1)), \
            f"{where}: std {draws.std():.4f}, expected {spread:.4f}"
    if "mean" in expected:
        spread = expected.get("std", 0.5)
        tolerance = 6 * spread / math.sqrt(n) + resolution * max(1.0, abs(expected["mean"]))
        assert abs(draws.mean() - expected["mean"]) <= tolerance, \
            f"{where}: mean {draws.mean():.4f}, expected {expected['mean']:.4f} +- {tolerance:.4f}"
