"""One sample of an op with a scalar formula, as the elementwise programs the compiler hands a backend's
``fuse_elementwise`` hook (``ember.dispatch.fusion``), run through the hook and checked against the same
ops run one by one through Ember on that backend.

Two programs per sample: the op alone (one step), and the op feeding two chains, ``mul`` by a number and
``add`` of another input broadcast along the last dim (the op's value is then an intermediate, never an
output). Steps are built as the compiler builds them: the sample's tensors are the inputs, its Python
numbers ``("number", v)`` operands, the attributes converted, compute and result dtypes from the
promotion rules.

Results must be bitwise equal where nothing rounds: integer and bool results, and float results of
formulas that only select, compare, negate or cast (relu, abs, maximum, where, ...). Anything that rounds
is compared with the op's tolerances: a backend may evaluate ``a * b + c`` as one fused multiply-add, and
its libm's ``exp`` need not be NumPy's.
"""
from __future__ import annotations

import numpy as np

from ember.dispatch import OPS, Backend
from ember.dispatch.fusion import ElementwiseProgram, Step, fusible, lower
from ember.dispatch.ops import F

from .checks import describe, expected_types
from .compare import mismatch, tolerance
from .make import Unsupported
from .oracle import bound_values, expected_dtypes, expected_shapes, host, is_tensor, numpy_dtype

_NUMBER = (bool, int, float)
#: lowered instructions that never round, and the functions among ``call``s that never round either
_EXACT_KINDS = frozenset({"input", "const", "cast", "neg", "compare", "and", "or", "not", "where"})
_EXACT_CALLS = frozenset({"max", "min", "abs", "floor", "ceil"})


class NotAProgram(Exception):
    """The sample is not something the compiler would fuse (an operand of None, or an input the op refuses)."""


class Declined(Exception):
    """The backend's hook answered None for a program: the compiler would run its steps op by op."""


def has_hook(impl: Backend) -> bool:
    """Whether the backend overrides ``Backend.fuse_elementwise`` (the hook is optional)."""
    return type(impl).fuse_elementwise is not Backend.fuse_elementwise


def exact(program: ElementwiseProgram) -> bool:
    """Whether no instruction of the program rounds, so every correct backend gives the same bits."""
    instrs, _ = lower(program)
    return all(i.kind in _EXACT_KINDS or (i.kind == "call" and i.args[0] in _EXACT_CALLS) for i in instrs)


def one_step(op, sample, target) -> tuple[ElementwiseProgram, list, object]:
    """The sample as a one-step program, its input tensors, and the op's result run through Ember."""
    try:
        values, compute, out = expected_types(op, sample, target)
        shape = tuple(expected_shapes(op, values))
        expected = getattr(F, op.name)(*sample.args, **sample.kwargs)
    except Unsupported:
        raise
    except Exception as refused:  # the op refuses the sample (checked by test_values): nothing to fuse
        raise NotAProgram(f"{describe(op, sample)} is refused: {refused}") from None
    attrs = tuple(values[i] for i in op.attr_positions)
    if not fusible(op, attrs):
        raise NotAProgram(f"{op.name} has no formula for the attributes {attrs!r}")
    tensors, operands = [], []
    for i in op.tensor_positions:
        v = values[i]
        if is_tensor(v):
            operands.append(("input", len(tensors)))
            tensors.append(v)
        elif isinstance(v, _NUMBER):
            operands.append(("number", v))
        else:
            raise NotAProgram(f"{op.name}: operand {op.params[i].name}={v!r} is neither a tensor nor a number")
    step = Step(op.name, tuple(operands), attrs, compute if compute is not None else tensors[0].dtype, out)
    program = ElementwiseProgram(tuple((tuple(t.shape), t.dtype) for t in tensors), (step,), (0,), shape)
    return program, tensors, expected


def chains(program: ElementwiseProgram, tensors: list, result, make) -> tuple[ElementwiseProgram, list, list]:
    """``program``'s op feeding ``mul`` by a number and ``add`` of a new input (broadcast along the last
    dim): the program of both chains, its inputs, and the two ops run through Ember on ``result``."""
    number = {"float": 0.5, "complex": 0.5 - 0.25j, "int": 3}.get(result.dtype.kind, 2)
    other = make(tuple(program.shape[-1:]), dtype=result.dtype)
    extra = ("input", len(tensors))
    steps = [program.steps[0]]
    expected = []
    for name, operand, value in (("mul", ("number", number), number), ("add", extra, other)):
        chained = OPS[name]
        values = bound_values(chained, (result, value), {})
        compute, out = expected_dtypes(chained, values)
        attrs = tuple(values[i] for i in chained.attr_positions)
        steps.append(Step(name, (("step", 0), operand), attrs, compute, out))
        expected.append(getattr(F, name)(result, value))
    inputs = program.inputs + ((tuple(other.shape), other.dtype),)
    return ElementwiseProgram(inputs, tuple(steps), (1, 2), program.shape), [*tensors, other], expected


def run(target, program: ElementwiseProgram, tensors: list) -> list[np.ndarray]:
    """The hook's kernel for ``program`` run on the tensors' native arrays, as host arrays (checked to be
    one per output, of the program's shape and the outputs' dtypes); Declined where the hook answers None."""
    kernel = target.impl.fuse_elementwise(program, target.device.index)
    if kernel is None:
        raise Declined(f"the hook declined {program.key()}")
    results = kernel(*(t._data for t in tensors))
    assert isinstance(results, tuple) and len(results) == len(program.outputs), \
        f"the kernel returned {type(results).__name__} of {len(results)}; expected a tuple of {len(program.outputs)}"
    arrays = [target.impl.to_numpy(r) for r in results]
    for array, j in zip(arrays, program.outputs):
        want = numpy_dtype(program.steps[j].out)
        assert array.shape == tuple(program.shape) and array.dtype == want, \
            f"output {j}: {array.dtype}{list(array.shape)}, expected {want}{list(program.shape)}"
    return arrays


def check(op, program: ElementwiseProgram, actual: list, expected: list, scale: float = 1.0) -> None:
    """Each output against the op-by-op tensor: bitwise where nothing rounds, else within ``op``'s tolerance
    for its dtype (``atol`` times ``scale``: a chain carries the op's error on values of that size)."""
    bitwise = exact(program)
    for k, (got, want, j) in enumerate(zip(actual, expected, program.outputs)):
        dt = program.steps[j].out
        rtol, atol = (0.0, 0.0) if bitwise else tolerance(op, dt)
        problem = mismatch(got, host(want), dt, rtol, atol * scale)
        assert problem is None, f"fused {program.key()}: output {k} ({dt.name}): {problem}"


def magnitude(result) -> float:
    """The largest finite absolute value of a tensor (at least 1)."""
    values = host(result).astype(np.float64)
    finite = np.abs(values[np.isfinite(values)]) if values.size else values
    return max(1.0, float(finite.max())) if finite.size else 1.0


__all__ = ["Declined", "NotAProgram", "chains", "check", "exact", "has_hook", "magnitude", "one_step", "run"]
