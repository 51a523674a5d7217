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
    "uniform_": lambda a, x: _uniform(a["low"], a["high"]),
    "rand": lambda a, x: _uniform(0.0, 1.0),
    "rand_normal": lambda a, x: {"mean": a["mean"], "std": a["std"]},
    "normal_": lambda a, x: {"mean": a["mean"], "std": a["std"]},
    "randn": lambda a, x: {"mean": 0.0, "std": 1.0},
    "rand_int": lambda a, x: _integers(a["low"], a["high"]),
    "randint": lambda a, x: _integers(a["low"], a["high"]),
    "randperm": lambda a, x: {"permutation": a["n"]},
    "bernoulli": lambda a, x: {"range": (0, 2), "integral": True,
                               "mean": float(np.mean(x)) if a["p"] is None else a["p"]},
}


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
        inputs = host(sample.args[0]).astype(np.float64) if op.tensor_positions else None
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
        if draws.size >= MANY:
            _check_moments(where, draws, expected, dtype)


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
