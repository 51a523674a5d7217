"""The hypothesis profiles of the suite: ``quick`` (the default, CI) and ``thorough`` (on demand)."""
from __future__ import annotations

import os

ENV_VAR = "EMBER_HYPOTHESIS_PROFILE"
DEFAULT = "quick"


def register() -> None:
    """Register both profiles with hypothesis (idempotent)."""
    from hypothesis import HealthCheck, settings

    relaxed = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
               HealthCheck.differing_executors]
    # No example database: the suite runs from any directory and must leave nothing behind.
    settings.register_profile("quick", max_examples=8, derandomize=True, deadline=None, database=None,
                              suppress_health_check=relaxed, print_blob=False)
    settings.register_profile("thorough", max_examples=200, deadline=None, database=None,
                              suppress_health_check=relaxed, print_blob=True)


def requested(config) -> str | None:
    """The profile named on the command line or in the environment, if any."""
    return config.getoption("--hypothesis-profile", None) or os.environ.get(ENV_VAR) or None


#: Under ``quick``, the samples per op that the function-transform checks take (``test_transforms``): the
#: smallest and the largest, which keeps CI's cold OpenCL run (every new kernel compiled) within its time.
QUICK_TRANSFORM_SAMPLES = 2


def transform_samples(config, samples: list) -> list:
    """The samples of an op that ``test_transforms`` checks: all under ``thorough``; under ``quick`` the first and
    the last (the op's samples go from the simplest, 0-d, to the largest shapes)."""
    if (requested(config) or DEFAULT) != "quick" or len(samples) <= QUICK_TRANSFORM_SAMPLES:
        return samples
    return [samples[0], samples[-1]]


def gradient_samples(config, dtype, cases: list) -> list:
    """The gradient cases of an op that ``test_gradients`` checks: all, except for complex dtypes under ``quick``:
    the first and the last, as ``transform_samples`` (the real dtypes' cases check the same derivative formulas
    on more shapes; the complex ones check their conjugations)."""
    return transform_samples(config, cases) if dtype.is_complex else cases


def load_for_conformance(config) -> str:
    """Make the chosen profile (default ``quick``) current; called when the suite is collected."""
    from hypothesis import settings

    register()
    name = requested(config) or DEFAULT
    settings.load_profile(name)
    return name


def generated_dtypes(config, dtypes) -> list:
    """The dtypes that hypothesis generates inputs in (``test_values_generated``): under ``quick``, the real ones
    only (complex dtypes get their fixed samples there: CI compiles each kernel variant on OpenCL)."""
    if (requested(config) or DEFAULT) != "quick":
        return list(dtypes)
    return [d for d in dtypes if not d.is_complex]


#: Under ``quick``, the backends whose complex128 cases run: the CPU (the reference) and the template (NumPy, as CI
#: runs it). Elsewhere complex64 stands for both: complex128 would double the kernel variants that CI's cold
#: OpenCL run compiles, and its semantics differ from complex64's only in precision. ``thorough`` runs both.
QUICK_COMPLEX128_BACKENDS = ("cpu", "template")


def sampled_dtypes(config, target, dtypes) -> list:
    """The dtypes among ``dtypes`` (the target's) that tests are generated for (see QUICK_COMPLEX128_BACKENDS)."""
    if (requested(config) or DEFAULT) != "quick" or not target.available:
        return list(dtypes)
    if target.device.type in QUICK_COMPLEX128_BACKENDS:
        return list(dtypes)
    return [d for d in dtypes if not (d.is_complex and d.to_real().itemsize == 8)]
