"""The executor: turns a call plan into the one function that runs calls of that plan.

Every op call ends here, whichever way it came in (the generic dispatcher or the elementwise fast
path): bound values -> native arguments -> the kernel (or the composite, or the CPU fallback) ->
result tensors -> one autograd recording through ``links.recorder``. The function is built once
per plan, so that per call it only does what the plan says is needed: no checks, no lookups.
"""
from __future__ import annotations

from collections import namedtuple
from typing import Any, Callable

from . import fallback, links
from .arguments import DATA, PASS, constant_arguments, generator_native
from .plan import CallPlan


def runner(plan: CallPlan, run_op: Callable) -> Callable[[list], Any]:
    """The function running ``plan``'s calls on bound, converted values. ``run_op(op, args, kwargs)``
    is the dispatcher's entry point, which the CPU fallback calls for the op on the host."""
    if plan.kind == "composite":
        return _composite(plan)
    if plan.kind == "fallback":
        return lambda values: fallback.run_elsewhere(plan, values, run_op)
    return _kernel(plan)


def _kernel(plan: CallPlan) -> Callable[[list], Any]:
    op, impl, dev, out = plan.op, plan.impl, plan.device, plan.out
    data_at = tuple(i for i, how in plan.arguments if how == DATA)
    converted = tuple((i, how) for i, how in plan.arguments if how != DATA and how != PASS)
    constants = constant_arguments(plan)
    generator_at = op.special_positions[1]
    backend = plan.backend
    first = op.tensor_positions[0] if op.tensor_positions else None
    link = links.tensor
    wrap, wrap_view = link.wrap, link.wrap_view
    many = len(op.outputs) > 1 or op.outputs == ("*",)  # several named outputs, or as many as the call makes
    shape = "mutates" if op.mutates else "view" if op.view else "many" if many else "single"
    recorder = links.recorder
    record = recorder.record if plan.records else None
    check_mutation = recorder.check_mutation if op.mutates and plan.grad_on else None
    if op.mutates.__class__ is tuple:  # writes into the tensors of several lists
        return _list_mutation(plan, impl, check_mutation)

    if shape == "view" and data_at == (0,) and not converted and not constants:
        two = len(op.params) == 2

        def run_view(values: list):  # view, slice, permute, ...: on every indexing expression
            base = values[0]
            outputs = wrap_view(impl(base._data, values[1]) if two else impl(base._data, *values[1:]), out, dev, base)
            if record is not None:
                record(plan, values, outputs)
            return outputs
        return run_view
    if shape == "single" and not converted and generator_at is None and check_mutation is None:
        spelled = _spelled_out(plan, impl, data_at, len(op.params), wrap, out, dev, record, constants)
        if spelled is not None:
            return spelled

        def run_plain(values: list):  # operands as they are, one fresh output
            args = values.copy()
            for i in data_at:
                args[i] = values[i]._data
            for i, value in constants:
                args[i] = value
            outputs = wrap(impl(*args), out, dev)
            if record is not None:
                record(plan, values, outputs)
            return outputs
        return run_plain

    def run(values: list):
        if check_mutation is not None:
            check_mutation(op, values)
        args = values.copy()
        for i in data_at:
            args[i] = values[i]._data
        for i, convert in converted:
            args[i] = convert(values[i])
        for i, value in constants:
            args[i] = value
        if generator_at is not None:
            args[generator_at] = generator_native(backend, dev, values[generator_at])
        result = impl(*args)
        if shape == "single":
            outputs = wrap(result, out, dev)
        elif shape == "view":
            outputs = wrap_view(result, out, dev, values[first])
        elif shape == "mutates":
            outputs = values[first]
            outputs._version[0] += 1
        else:
            outputs = named(op, tuple(wrap(r, d, dev) for r, d in zip(result, out)))
        if record is not None:
            record(plan, values, outputs)
        return outputs
    return run


def _list_mutation(plan: CallPlan, impl, check_mutation) -> Callable[[list], Any]:
    """The runner of an op writing into the tensors its ``op.mutates`` names (the lists of the multi-tensor
    optimizer steps, or single tensors: a custom op's mutated arguments): the kernel gets them as native arrays
    and writes into them; each written tensor's version counts the write; the call returns None, as PyTorch's
    ``_fused_adam_`` returns nothing."""
    op = plan.op
    converted = tuple((i, how) for i, how in plan.arguments if how != DATA and how != PASS)
    data_at = tuple(i for i, how in plan.arguments if how == DATA)
    written = tuple(op.param_index[name] for name in op.mutates)

    def run(values: list):
        if check_mutation is not None:
            for i in written:
                for t in _written(values[i]):
                    check_mutation(op, [t] * len(values))
        args = values.copy()
        for i in data_at:
            args[i] = values[i]._data
        for i, convert in converted:
            args[i] = convert(values[i])
        impl(*args)
        for i in written:
            for t in _written(values[i]):
                t._version[0] += 1
        return None
    return run


def _written(value) -> tuple:
    """The tensors a mutating op's argument holds: a list's (Nones left out), or the tensor itself."""
    if isinstance(value, (list, tuple)):
        return tuple(t for t in value if t is not None)
    return () if value is None else (value,)


def _spelled_out(plan, impl, data_at: tuple, count: int, wrap, out, dev, record, constants: tuple):
    """Runners for the commonest plain calls, with the kernel's arguments spelled out: they run on every
    small op (``x.exp()``, ``x + y``, ``x * 2``, ``add(x, y, alpha=1)``, ``x.sum()``), where building argument
    lists would cost as much as the kernel. None for other shapes of call."""
    if data_at == (0, 1) and count == 2 and record is not None and not constants:
        def binary_recorded(values: list):  # x * y with grad: the hottest recorded call, one function
            outputs = wrap(impl(values[0]._data, values[1]._data), out, dev)
            record(plan, values, outputs)
            return outputs
        return binary_recorded
    compute = _computing(impl, data_at, count, wrap, out, dev, constants)
    if compute is None or record is None:
        return compute

    def run_and_record(values: list):
        outputs = compute(values)
        record(plan, values, outputs)
        return outputs
    return run_and_record


def _computing(impl, data_at: tuple, count: int, wrap, out, dev, constants: tuple):
    """The call of ``impl`` on the values, its result wrapped, for the shapes of call ``_spelled_out`` serves;
    None for others."""
    if constants:  # the result dtype as the last argument: reductions (x.sum()), softmax(x, dim)
        if not (data_at == (0,) and len(constants) == 1 and constants[0][0] == count - 1 and count in (3, 4)):
            return None
        dtype = constants[0][1]
        if count == 3:
            def compute(values: list):
                return wrap(impl(values[0]._data, values[1], dtype), out, dev)
        else:
            def compute(values: list):
                return wrap(impl(values[0]._data, values[1], values[2], dtype), out, dev)
    elif data_at == (0,) and count == 1:
        def compute(values: list):
            return wrap(impl(values[0]._data), out, dev)
    elif data_at == (0,) and count == 2:
        def compute(values: list):
            return wrap(impl(values[0]._data, values[1]), out, dev)
    elif data_at == (0,) and count == 3:
        def compute(values: list):
            return wrap(impl(values[0]._data, values[1], values[2]), out, dev)
    elif data_at == (0,) and count == 4:  # x.mean(dim), x.amax(dim, keepdim)
        def compute(values: list):
            return wrap(impl(values[0]._data, values[1], values[2], values[3]), out, dev)
    elif data_at == (0,):
        def compute(values: list):
            return wrap(impl(values[0]._data, *values[1:]), out, dev)
    elif data_at == (0, 1) and count == 2:
        def compute(values: list):
            return wrap(impl(values[0]._data, values[1]._data), out, dev)
    elif data_at == (0, 1) and count == 3:
        def compute(values: list):
            return wrap(impl(values[0]._data, values[1]._data, values[2]), out, dev)
    else:
        return None
    return compute


def _composite(plan: CallPlan) -> Callable[[list], Any]:
    """A composite runs on the tensors themselves. When it records as one node (it has a derivative),
    its inner ops run without recording; otherwise (and for an op's ``complex_decomposition``) each inner op
    records its own node."""
    op, impl = plan.op, plan.impl
    many = len(op.outputs) > 1
    recorder = links.recorder

    if plan.records and op.derivative is not None and impl is not op.complex_decomposition:
        def run_as_one_node(values: list):
            with recorder.no_grad():
                result = impl(*values)
            if many:
                result = named(op, result)
            recorder.record(plan, values, result)
            return result
        return run_as_one_node

    def run(values: list):
        result = impl(*values)
        return named(op, result) if many else result
    return run


_result_types: dict = {}


def result_type(op) -> type:
    """The named tuple class of ``op``'s results (one per op, so ``isinstance`` checks hold)."""
    cls = _result_types.get(op.name)
    if cls is None:
        cls = _result_types[op.name] = namedtuple(op.name, op.outputs)
    return cls


def named(op, results: tuple):
    """Multi-output results as a named tuple (``values, indices = ember.max(x, 1)``), like torch.return_types."""
    if op.outputs == ("*",):
        return tuple(results)
    return result_type(op)(*results)


__all__ = ["runner", "named", "result_type"]
