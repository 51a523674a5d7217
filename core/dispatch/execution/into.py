"""In-place kernels: the part of a call plan that runs an in-place call (``x.add_(y)``) as one kernel writing
into its target, where the backend offers one (``Backend.out_kernels``).

The plan is the out-of-place op's own (validated, cached, keyed as usual); ``into_runner`` adds what an
in-place call of it needs, decided once per plan: the op is elementwise (or has a formula, so its result has
its operands' broadcast shape), nothing records for autograd, the target reaches the kernel as it is (no move,
no cast) and the result has the target's dtype. A call that does not qualify takes the copy road (the
out-of-place kernel, then ``copy_``), which raises the errors of in-place calls (a result dtype that cannot
be cast, a broadcast shape that is not the target's) and records autograd's history. Per call the runner
checks only what the plan cannot know: that every operand broadcasts to the target's shape, and, where the
backend asks for it (``writes_into_any`` False), that the target and operands do not overlap in a way the
kernel cannot write through.
"""
from __future__ import annotations

from typing import Any, Callable

from .arguments import DATA, PASS, Native, constant_arguments
from .plan import CallPlan


def into_runner(plan: CallPlan, arguments: tuple) -> Callable[[list], Any] | None:
    """The function writing calls of ``plan`` into their first operand, or None where its calls cannot.
    ``arguments``: the plan's argument recipes (``plan.arguments``; worked out apart for a composite plan
    whose op the backend writes in one out-kernel)."""
    op, backend = plan.op, plan.backend
    kernel = backend.out_kernels.get(op.name)
    if kernel is None or plan.grad_on or plan.kind == "fallback":
        return None
    if not (op.category == "elementwise" or op.scalar is not None) or op.mutates or op.view:
        return None
    if plan.kind == "kernel" and plan.impl is not backend.kernels.get(op.name):
        return None  # the kernel runs wrapped (a storage-only dtype computes in float32): no out= there
    recipes = dict(arguments)
    if not op.tensor_positions or op.tensor_positions[0] != 0 or recipes.get(0) != DATA:
        return None  # the target would reach the kernel moved or cast: compute, then cast into it
    if plan.compute is None or plan.out is not plan.compute:
        return None  # the result's dtype is not the target's (x.eq_(y) on floats, int.div_(int)): compute, cast
    data_at = tuple(i for i, how in arguments if how == DATA and i != 0)
    converted = tuple((i, how) for i, how in arguments if how != DATA and how != PASS)
    tensor_at = tuple(i for i, how in arguments if i != 0 and (how == DATA or isinstance(how, Native)))
    arrays_at = data_at + tuple(i for i, _ in converted)
    constants = constant_arguments(plan)
    any_out = backend.writes_into_any
    writes_into = backend.writes_into

    def run_into(values: list):
        target = values[0]
        out = target._data
        shape = out.shape
        for i in tensor_at:
            operand = values[i]._data.shape
            if operand != shape and not broadcasts_to(operand, shape):
                return None  # the result would be larger than the target: the copy road raises
        args = values.copy()
        args[0] = out
        for i in data_at:
            args[i] = values[i]._data
        for i, convert in converted:
            args[i] = convert(values[i])
        for i, value in constants:
            args[i] = value
        if not any_out and not writes_into(out, tuple(args[i] for i in arrays_at)):
            return None
        if kernel(*args, out=out) is None:
            return None  # the backend declined this call
        target._version[0] += 1
        return target
    return run_into


def broadcasts_to(shape: tuple, target: tuple) -> bool:
    """Whether an operand of ``shape`` broadcasts to ``target`` without enlarging it."""
    lead = len(target) - len(shape)
    return lead >= 0 and all(s == 1 or s == t for s, t in zip(shape, target[lead:]))


__all__ = ["into_runner", "broadcasts_to"]
