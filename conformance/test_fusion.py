"""The optional ``fuse_elementwise`` hook: every op with a scalar formula, on every dtype it accepts, fused.

``test_fused_op`` runs the op's fixed samples as one-step programs through the hook and compares each with
the op run through Ember on the same backend; ``test_fused_chain`` does the same for the op feeding ``mul``
by a number and ``add`` of another input (``fused``). Building a kernel is what these tests spend their
time on (0.1 to 0.2 s a program where numba or PoCL compiles), so the default (``quick``) profile checks
one sample per op and dtype, the one that exercises the most per kernel (special floats broadcast
against each other, else strided inputs, else its last); ``--hypothesis-profile thorough`` checks every
sample, and the chains on two. A backend without the hook skips both tests; a program the hook declines (None:
the compiler then runs it op by op) is tallied, and a case whose every program is declined skips with the
hook's reason.
"""
from __future__ import annotations

import pytest

from ember.conformance import profiles
from ember.conformance.cases import op_dtype_params
from ember.conformance.checks import Unsupported, on_device
from ember.conformance.fused import Declined, NotAProgram, chains, check, has_hook, magnitude, one_step, run
from ember.conformance.plugin import count
from ember.conformance.samples import fixed_samples


#: the notes of the samples tried first, in this order: the quick profile checks the first that is a program,
#: the thorough one the chains of the first two
CHOSEN_SAMPLES = ("special values", "non-contiguous")


def pytest_generate_tests(metafunc) -> None:
    metafunc.parametrize("op,dtype", op_dtype_params(metafunc.config, where=lambda op: op.scalar is not None))


@pytest.fixture
def hooked(backend):
    if not has_hook(backend.impl):
        pytest.skip(f"backend {backend.name!r} has no fuse_elementwise hook (it is optional)")
    return backend


def _each_sample(op, dtype, make, backend, request, check_sample, limit: int | None) -> None:
    """``check_sample`` on the op's samples, the chosen ones first, until ``limit`` were compared."""
    compared, declined = 0, []
    for sample in _prioritized(fixed_samples(op, make, dtype)):
        if compared == limit:
            break
        try:
            compared += check_sample(on_device(op, sample, backend.device))
        except (Unsupported, NotAProgram):
            continue
        except Declined as why:
            declined.append(str(why))
    count(request.config, "fused programs compared", compared)
    count(request.config, "fused programs declined by the hook", len(declined))
    if not compared:
        reason = declined[0] if declined else f"no sample of {op.name} on {dtype.name} is a fusible program"
        pytest.skip(f"{backend.name}: {reason}")


def _prioritized(samples: list) -> list:
    """The samples in CHOSEN_SAMPLES order first, then the others from the last."""
    def rank(sample) -> int:
        return next((k for k, note in enumerate(CHOSEN_SAMPLES) if sample.note.startswith(note)), len(CHOSEN_SAMPLES))
    return sorted(samples[::-1], key=rank)


def _thorough(request) -> bool:
    return (profiles.requested(request.config) or profiles.DEFAULT) == "thorough"


def test_fused_op(op, dtype, make, hooked, request):
    """(a) The op alone as a one-step program equals the op."""
    def check_sample(sample) -> int:
        program, tensors, expected = one_step(op, sample, hooked)
        check(op, program, run(hooked, program, tensors), [expected])
        return 1
    _each_sample(op, dtype, make, hooked, request, check_sample, None if _thorough(request) else 1)


def test_fused_chain(op, dtype, make, hooked, request):
    """(b) The op feeding ``mul`` by a number and ``add`` of another input equals the three ops."""
    def check_sample(sample) -> int:
        program, tensors, result = one_step(op, sample, hooked)
        program, tensors, expected = chains(program, tensors, result, make)
        check(op, program, run(hooked, program, tensors), expected, scale=magnitude(result))
        return 1
    _each_sample(op, dtype, make, hooked, request, check_sample, len(CHOSEN_SAMPLES) if _thorough(request) else 1)
