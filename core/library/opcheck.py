"""``opcheck``: the schema's conformance checks, run on one custom op with one set of arguments.

Each check gets its own copies of the arguments and answers "SUCCESS", raises, or (Ember's two extra checks only)
answers "SKIPPED: why" where it does not apply:

- ``test_schema``: the kernel wrote into no argument the schema does not declare mutated, and returned new tensors;
- ``test_autograd_registration``: where an input requires grad, a formula is registered (``register_autograd``, or a
  decomposition), the outputs are differentiable and backward runs;
- ``test_faketensor``: the fake function (or the decomposition, on fake tensors) predicts each output's shape,
  dtype and device, reading no values;
- ``test_aot_dispatch_dynamic``: ``ember.compile(fullgraph=True)`` captures the call whole, with the op as one
  node, and gives the eager results and gradients (PyTorch's name for its compile check);
- ``test_gradcheck`` (Ember's): gradients against finite differences, in float64 (``ember.autograd.gradcheck``);
- ``test_backends`` (Ember's): every available backend with an implementation of the op gives the values and
  gradients of the reference device (cpu where the op runs there) within the conformance suite's per-dtype
  tolerances (``ember.conformance.compare``).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..dispatch.contract import registry
from ..dispatch.execution import dispatcher, user_kernels
from ..dispatch.schema.binding import bind
from ..tensor import Tensor
from .registration import resolve

DEFAULT_TEST_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic",
                      "test_gradcheck", "test_backends")


class OpCheckError(Exception):
    """A check of ``opcheck`` failed (the cause is chained)."""


def opcheck(op, args: tuple, kwargs: dict | None = None, *, test_utils: str | Sequence[str] = DEFAULT_TEST_UTILS,
            raise_exception: bool = True, atol: float | None = None, rtol: float | None = None) -> dict[str, Any]:
    """Run the checks ``test_utils`` (default: all, see the module docstring) on custom op ``op`` called with
    ``args`` and ``kwargs``: a dict of check name -> "SUCCESS" (or "SKIPPED: ..."), or the exception where a check
    failed and ``raise_exception`` is False (else ``OpCheckError``). ``atol``/``rtol`` (both or neither)
    replace the per-dtype tolerances of value comparisons and gradcheck's."""
    if (rtol is None) != (atol is None):
        raise ValueError("opcheck(op, ...): if you specify one of rtol/atol, you must specify both")
    definition = resolve(op, "opcheck")
    kwargs = kwargs or {}
    if test_utils == "ALL":
        test_utils = DEFAULT_TEST_UTILS
    if isinstance(test_utils, str):
        test_utils = (test_utils,)
    if not isinstance(test_utils, (tuple, list)) or not set(test_utils) <= set(DEFAULT_TEST_UTILS):
        raise ValueError(f"opcheck(op, ..., test_utils={test_utils}), expected test_utils to be subset of "
                         f"{DEFAULT_TEST_UTILS} but it was not")
    results: dict[str, Any] = {}
    for name in test_utils:
        try:
            results[name] = _CHECKS[name](definition, args, kwargs, (rtol, atol)) or "SUCCESS"
        except Exception as ex:  # noqa: BLE001  a failed check is the answer
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {name} failed with {ex} (scroll up for stack trace)") from ex
            results[name] = ex
    return results


# -- arguments -------------------------------------------------------------------------------------------------

def _map(value, fn):
    if isinstance(value, Tensor):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_map(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _map(v, fn) for k, v in value.items()}
    return value


def _copy(t: Tensor, device=None, dtype=None, requires_grad: bool | None = None) -> Tensor:
    """A fresh leaf with ``t``'s values, on ``device`` in ``dtype`` where given."""
    out = t.detach().to(device or t.device)
    out = out.to(dtype) if dtype is not None and t.dtype.is_floating_point else out.clone()
    wants = t.requires_grad if requires_grad is None else requires_grad
    return out.requires_grad_(wants and out.dtype.is_floating_point)


def _copies(args, kwargs, **how):
    return _map(args, lambda t: _copy(t, **how)), _map(kwargs, lambda t: _copy(t, **how))


def _tensors(value) -> list[Tensor]:
    found = []
    _map(value, found.append)
    return found


def _outputs(definition, result) -> list[Tensor]:
    if definition.void:
        return []
    return list(result) if definition.many else [result]


def _host(t: Tensor) -> np.ndarray:
    return np.array(t.detach().cpu().numpy(), copy=True)


def _close(what: str, actual: Tensor, expected: Tensor, tolerance: tuple) -> None:
    """``actual`` has ``expected``'s dtype and shape and, within the dtype's tolerance, its values."""
    from ember.conformance.compare import DEFAULT_TOLERANCES, mismatch
    if actual.dtype is not expected.dtype or tuple(actual.shape) != tuple(expected.shape):
        raise AssertionError(f"{what}: got {actual.dtype.name} {tuple(actual.shape)}, expected "
                             f"{expected.dtype.name} {tuple(expected.shape)}")
    rtol, atol = tolerance if tolerance[0] is not None else DEFAULT_TOLERANCES.get(actual.dtype.name, (0.0, 0.0))
    problem = mismatch(_host(actual), _host(expected), actual.dtype, rtol, atol)
    if problem is not None:
        raise AssertionError(f"{what}: {problem}")


def _gradients(definition, args, kwargs, inputs: list[Tensor], seed: int = 0) -> list:
    """The gradients of ``inputs`` for fixed random weights on the floating outputs (the same on every device)."""
    from ..autograd import grad
    outputs = [o for o in _outputs(definition, _call(definition, args, kwargs))
               if o.dtype.is_floating_point and o.requires_grad]
    if not outputs:
        return []
    rng = np.random.default_rng(seed)
    weights = [_copy(o.detach(), requires_grad=False) for o in outputs]
    weights = [w.new_tensor(rng.standard_normal(tuple(w.shape))).to(w.dtype) for w in weights]
    return grad(outputs, inputs, weights, allow_unused=True)


def _call(definition, args, kwargs):
    return dispatcher.call(definition.op, tuple(args), dict(kwargs))


def _differentiable(definition) -> bool:
    return not definition.mutated and (definition.backward is not None or definition.implicit is not None
                                       or definition.autograd_impl is not None)


# -- the checks ------------------------------------------------------------------------------------------------

def _test_schema(definition, args, kwargs, tolerance) -> None:
    from ..autograd import no_grad
    args, kwargs = _copies(args, kwargs, requires_grad=False)
    values = bind(definition.op, args, kwargs)
    named = {p.name: _tensors(v) for p, v in zip(definition.params, values) if p.is_tensor}
    before = {name: [_host(t) for t in ts] for name, ts in named.items()}
    with no_grad():
        _call(definition, args, kwargs)
    for name, tensors in named.items():
        changed = any(not np.array_equal(b, _host(t), equal_nan=b.dtype.kind == "f")
                      for b, t in zip(before[name], tensors))
        if changed and name not in definition.mutated:
            declared = ", ".join(definition.mutated) or "none"
            raise AssertionError(f"{definition.qualname}: the kernel wrote into argument '{name}', which the schema "
                                 f"does not declare mutated (declared: {declared}); add it to mutates_args "
                                 f"(Tensor(a!) in a schema string), or write into a copy")


def _test_autograd_registration(definition, args, kwargs, tolerance) -> None:
    wanting = [t for t in _tensors((args, kwargs)) if t.requires_grad]
    if definition.mutated or not wanting:
        return
    if not _differentiable(definition):
        raise AssertionError(f"{definition.qualname}: inputs require grad, but no autograd formula is registered "
                             f"(register_autograd, or a CompositeImplicitAutograd decomposition); its forward works, "
                             f"but backward through it raises")
    args, kwargs = _copies(args, kwargs)
    inputs = [t for t in _tensors((args, kwargs)) if t.requires_grad]
    outputs = [o for o in _outputs(definition, _call(definition, args, kwargs)) if o.dtype.is_floating_point]
    if not all(o.requires_grad and o.grad_fn is not None for o in outputs):
        raise AssertionError(f"{definition.qualname}: its floating outputs do not require grad although inputs do")
    from ..autograd import grad
    grads = grad(outputs, inputs, [o.detach() * 0 + 1 for o in outputs], allow_unused=True)
    for t, g in zip(inputs, grads):
        if g is not None and tuple(g.shape) != tuple(t.shape):
            raise AssertionError(f"{definition.qualname}: a gradient of shape {tuple(g.shape)} reached an input of "
                                 f"shape {tuple(t.shape)}")


def _test_faketensor(definition, args, kwargs, tolerance) -> None:
    from ..autograd import no_grad
    if definition.void:
        return
    if definition.fake is None and definition.implicit is None:
        raise AssertionError(f"{definition.qualname} has no fake function: register one with register_fake "
                             f"(without it, each new kind of call runs the kernel once more to learn its outputs' "
                             f"shapes, and export cannot know them without running it)")
    args, kwargs = _copies(args, kwargs, requires_grad=False)
    plan, _, meta = dispatcher.infer(definition.op, args, kwargs)
    shapes = list(meta) if definition.many else [meta]
    dtypes = plan.out if isinstance(plan.out, tuple) else (plan.out,)
    with no_grad():
        real = _outputs(definition, _call(definition, args, kwargs))
    if len(real) != len(shapes):
        raise AssertionError(f"{definition.qualname}: the fake function gives {len(shapes)} outputs, the kernel "
                             f"{len(real)}")
    for k, (t, shape, dt) in enumerate(zip(real, shapes, dtypes)):
        if tuple(t.shape) != tuple(shape) or t.dtype is not dt or t.device != plan.device:
            raise AssertionError(f"{definition.qualname}: output {k}: the fake function gives {dt.name} "
                                 f"{tuple(shape)} on {plan.device}, the kernel {t.dtype.name} {tuple(t.shape)} on "
                                 f"{t.device}")


def _test_aot_dispatch_dynamic(definition, args, kwargs, tolerance) -> None:
    from ..compiler.api import compile as ember_compile
    from ..compiler.explain import explain

    def program(*a, **k):
        return _call(definition, a, k)

    explained_args, explained_kwargs = _copies(args, kwargs)
    report = explain(program)(*explained_args, **explained_kwargs)
    nodes = [name for ops in report.ops_per_graph for name in ops if name == definition.qualname]
    if report.graph_break_count or len(nodes) != 1:
        raise AssertionError(f"{definition.qualname}: ember.compile captured {len(nodes)} node(s) of it with "
                             f"{report.graph_break_count} graph break(s) ({'; '.join(map(str, report.break_reasons))})")
    compiled = ember_compile(program, fullgraph=True)
    eager_args, eager_kwargs = _copies(args, kwargs)
    eager = _call(definition, eager_args, eager_kwargs)
    for attempt in ("captured", "replayed"):
        c_args, c_kwargs = _copies(args, kwargs)
        result = compiled(*c_args, **c_kwargs)
        for k, (o, e) in enumerate(zip(_outputs(definition, result), _outputs(definition, eager))):
            _close(f"{definition.qualname}: output {k} of the {attempt} program", o, e, tolerance)
        for k, (o, e) in enumerate(zip(_tensors((c_args, c_kwargs)), _tensors((eager_args, eager_kwargs)))):
            _close(f"{definition.qualname}: argument tensor {k} after the {attempt} program", o, e, tolerance)
        inputs = [t for t in _tensors((c_args, c_kwargs)) if t.requires_grad]
        if inputs and _differentiable(definition):
            wanted = [t for t in _tensors((eager_args, eager_kwargs)) if t.requires_grad]
            expected = _gradients(definition, eager_args, eager_kwargs, wanted)
            got = _compiled_gradients(definition, result, inputs)
            for k, (g, e) in enumerate(zip(got, expected)):
                if g is not None and e is not None:
                    _close(f"{definition.qualname}: gradient {k} through the {attempt} program", g, e, tolerance)


def _compiled_gradients(definition, result, inputs) -> list:
    from ..autograd import grad
    outputs = [o for o in _outputs(definition, result) if o.dtype.is_floating_point and o.requires_grad]
    rng = np.random.default_rng(0)
    weights = [o.detach().new_tensor(rng.standard_normal(tuple(o.shape))).to(o.dtype) for o in outputs]
    return grad(outputs, inputs, weights, allow_unused=True) if outputs else []


def _test_gradcheck(definition, args, kwargs, tolerance) -> str | None:
    from ..autograd import gradcheck
    from ..dispatch.schema.dtypes import float64
    if not _differentiable(definition):
        return f"SKIPPED: {definition.qualname} has no autograd formula (or writes into its arguments)"
    floating = [t for t in _tensors((args, kwargs)) if t.dtype.is_floating_point]
    if not floating:
        return "SKIPPED: no floating tensor input"
    device = floating[0].device
    if float64 not in registry.get_backend(device.type).supported_dtypes(device.index):
        device = registry.resolve_device("cpu")
    chosen = {id(t) for t in floating if t.requires_grad} or {id(t) for t in floating}
    copies = _map((args, kwargs), lambda t: _copy(t, device, float64 if t.dtype.is_floating_point else None,
                                                  requires_grad=id(t) in chosen))
    inputs = [t for t in _tensors(copies) if t.requires_grad]

    def fn(*xs):
        replaced = iter(xs)
        a, k = _map(copies, lambda t: next(replaced) if t.requires_grad else t)
        return tuple(o for o in _outputs(definition, _call(definition, a, k)) if o.dtype.is_floating_point)

    rtol, atol = tolerance
    gradcheck(fn, inputs, atol=1e-5 if atol is None else atol, rtol=1e-3 if rtol is None else rtol)
    return None


def _implemented_on(definition, device_type: str) -> bool:
    op = definition.op
    return (user_kernels.function_for(op, device_type) is not None or op.composite is not None
            or op.name in registry.get_backend(device_type).kernels)


def _test_backends(definition, args, kwargs, tolerance) -> str | None:
    tensors = _tensors((args, kwargs))
    available = [name for name, status in registry.available().items() if status == "available"]
    runnable = [name for name in available if _implemented_on(definition, name) and all(
        t.dtype in registry.get_backend(name).supported_dtypes(registry.resolve_device(name).index) for t in tensors)]
    home = tensors[0].device.type if tensors else "cpu"
    reference = "cpu" if "cpu" in runnable else home
    if reference not in runnable or len(runnable) < 2:
        return f"SKIPPED: {definition.qualname} runs on {', '.join(runnable) or 'no device'} only"
    floating = bool(_differentiable(definition) and any(t.dtype.is_floating_point for t in tensors))

    def run(device_type: str):
        device = registry.resolve_device(device_type)
        a, k = _copies(args, kwargs, device=device, requires_grad=floating or None)
        from ..autograd import no_grad
        if floating:
            inputs = [t for t in _tensors((a, k)) if t.requires_grad]
            result = _call(definition, a, k)
            return result, _gradients(definition, a, k, inputs), (a, k)
        with no_grad():
            return _call(definition, a, k), [], (a, k)

    expected, expected_grads, expected_args = run(reference)
    for name in runnable:
        if name == reference:
            continue
        try:
            result, grads, moved = run(name)
        except Exception as ex:
            raise AssertionError(f"{definition.qualname}: on {name}: {type(ex).__name__}: {ex}") from ex
        for i, (o, e) in enumerate(zip(_outputs(definition, result), _outputs(definition, expected))):
            _close(f"{definition.qualname}: output {i} on {name} against {reference}", o, e, tolerance)
        for i, (o, e) in enumerate(zip(_tensors(moved), _tensors(expected_args))):
            _close(f"{definition.qualname}: argument tensor {i} on {name} against {reference}", o, e, tolerance)
        for i, (g, e) in enumerate(zip(grads, expected_grads)):
            if (g is None) != (e is None):
                raise AssertionError(f"{definition.qualname}: gradient {i} is None on only one of {name} and "
                                     f"{reference}")
            if g is not None:
                _close(f"{definition.qualname}: gradient {i} on {name} against {reference}", g, e, tolerance)
    return None


_CHECKS = {"test_schema": _test_schema, "test_autograd_registration": _test_autograd_registration,
           "test_faketensor": _test_faketensor, "test_aot_dispatch_dynamic": _test_aot_dispatch_dynamic,
           "test_gradcheck": _test_gradcheck, "test_backends": _test_backends}

__all__ = ["opcheck", "OpCheckError", "DEFAULT_TEST_UTILS"]
