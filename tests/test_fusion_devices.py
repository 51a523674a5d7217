"""The device backends' ``fuse_elementwise`` hooks (OpenCL here on PoCL, CUDA where a GPU exists): each
program runs as one generated kernel and must give what its steps give op by op on the same device, and
what they give on the CPU, up to the ops' float tolerances (integers and bools exactly).

A case is a list of calls; ``trace`` runs them op by op and builds the program from each call's plan
exactly as the compiler does (compute dtype, result dtype, converted attributes). A backend that is not
available here is skipped with its reason.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest

import ember
from ember.conformance.compare import tolerance
from ember.dispatch import OPS
from ember.dispatch.execution.dispatcher import resolve
from ember.dispatch.fusion import ElementwiseProgram, Step
from ember.dispatch.ops import F

AVAILABLE = ember.backends.available()
DEVICES = [pytest.param(name, marks=pytest.mark.skipif(AVAILABLE.get(name) != "available",
                                                        reason=f"{name} {AVAILABLE.get(name, 'not registered')}"))
           for name in ("opencl", "cuda")]


def backend(device: str):
    return ember.backends.registered()[device]


def rng_array(shape, dtype="float32", low=-3.0, high=3.0, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    values = rng.uniform(low, high, shape)
    return values.astype(dtype) if np.dtype(dtype).kind == "f" else np.round(values).astype(dtype)


# -- cases: (inputs as NumPy arrays, a layout function making device views of them, the calls, the outputs) --

def same(tensors):
    return tensors


def transposed_first(tensors):
    return [tensors[0].t(), *tensors[1:]]


def strided_views(tensors):
    """A column slice with a gap, a transposed matrix and a row expanded to the program's shape."""
    a, b, c = tensors
    return [a[:, ::2], b.t(), c.expand(4, 3)]


CASES = {
    # the measured chain: ((x + b) * 0.5).tanh() * y - 1, b a row broadcast, 0.5 and 1 Python numbers
    "six_op_chain": ([rng_array((4, 5)), rng_array((5,), seed=1), rng_array((4, 1), seed=2)], same, [
        ("add", [("input", 0), ("input", 1)], {}),
        ("mul", [("step", 0), ("number", 0.5)], {}),
        ("tanh", [("step", 1)], {}),
        ("mul", [("step", 2), ("input", 2)], {}),
        ("sub", [("step", 3), ("number", 1)], {}),
        ("abs", [("step", 4)], {}),
    ], (5,)),
    "two_ops_alpha": ([rng_array((3, 4)), rng_array((3, 4), seed=1)], same, [
        ("add", [("input", 0), ("input", 1)], {"alpha": -2.5}),
        ("exp", [("step", 0)], {}),
    ], (1,)),
    "multiple_outputs": ([rng_array((2, 3, 4)), rng_array((3, 1), seed=1)], same, [
        ("sub", [("input", 0), ("input", 1)], {}),
        ("relu", [("step", 0)], {}),
        ("sigmoid", [("step", 0)], {}),
        ("gt", [("step", 2), ("number", 0.5)], {}),
        ("mul", [("step", 1), ("step", 2)], {}),
    ], (1, 3, 4)),
    "activations": ([rng_array((6, 7), low=-30, high=30)], same, [
        ("gelu", [("input", 0)], {}),
        ("gelu", [("input", 0)], {"approximate": "tanh"}),
        ("silu", [("input", 0)], {}),
        ("mish", [("input", 0)], {}),
        ("leaky_relu", [("input", 0)], {"negative_slope": 0.2}),
        ("elu", [("input", 0)], {"alpha": 1.5}),
        ("logsigmoid", [("input", 0)], {}),
        ("softplus", [("input", 0)], {"beta": 2.0, "threshold": 5.0}),
    ], (0, 1, 2, 3, 4, 5, 6, 7)),
    "zero_dim": ([rng_array(()), rng_array((), seed=1)], same, [
        ("mul", [("input", 0), ("input", 1)], {}),
        ("log1p", [("step", 0)], {}),
        ("maximum", [("step", 1), ("input", 1)], {}),
    ], (2,)),
    "empty": ([rng_array((0, 3)), rng_array((3,), seed=1)], same, [
        ("add", [("input", 0), ("input", 1)], {}),
        ("tanh", [("step", 0)], {}),
        ("lt", [("step", 1), ("number", 0)], {}),
    ], (1, 2)),
    "transposed_input": ([rng_array((5, 4)), rng_array((4, 5), seed=1)], transposed_first, [
        ("mul", [("input", 0), ("input", 1)], {}),
        ("sin", [("step", 0)], {}),
        ("add", [("step", 1), ("input", 0)], {}),
    ], (2,)),
    "strided_views": ([rng_array((4, 6)), rng_array((3, 4), seed=1), rng_array((3,), seed=2)], strided_views, [
        ("mul", [("input", 0), ("input", 1)], {}),
        ("sub", [("step", 0), ("input", 2)], {}),
        ("minimum", [("step", 1), ("input", 0)], {}),
        ("cos", [("step", 2)], {}),
    ], (2, 3)),
    "integers": ([rng_array((3, 4), "int32", -50, 50), rng_array((4,), "int32", -50, 50, seed=1)], same, [
        ("mul", [("input", 0), ("number", 3)], {}),
        ("sub", [("step", 0), ("input", 1)], {"alpha": 2}),
        ("abs", [("step", 1)], {}),
        ("neg", [("step", 2)], {}),
        ("maximum", [("step", 3), ("input", 0)], {}),
        ("sign", [("step", 1)], {}),
    ], (4, 5)),
    "int8_wraps": ([rng_array((10,), "int8", -120, 120)], same, [
        ("mul", [("input", 0), ("number", 7)], {}),
        ("add", [("step", 0), ("number", 100)], {}),
    ], (1,)),
    "int_to_float": ([rng_array((3, 4), "int64", -9, 9), rng_array((3, 4), seed=1)], same, [
        ("add", [("input", 0), ("number", 0.5)], {}),
        ("sqrt", [("input", 0)], {}),  # an integer tensor computes in the default float dtype
        ("mul", [("step", 0), ("input", 1)], {}),
        ("isnan", [("step", 1)], {}),
    ], (2, 3)),
    "bools": ([rng_array((5, 3), "bool"), rng_array((5, 3), seed=1), rng_array((3,), seed=2)], same, [
        ("lt", [("input", 1), ("input", 2)], {}),
        ("logical_and", [("input", 0), ("step", 0)], {}),
        ("logical_not", [("step", 1)], {}),
        ("where", [("step", 2), ("input", 1), ("input", 2)], {}),
        ("logical_xor", [("step", 1), ("input", 0)], {}),
        ("eq", [("step", 3), ("input", 1)], {}),
    ], (2, 3, 4, 5)),
    "bool_arithmetic": ([rng_array((4,), "bool"), rng_array((4,), "bool", seed=1)], same, [
        ("add", [("input", 0), ("input", 1)], {}),
        ("mul", [("step", 0), ("input", 1)], {}),
    ], (0, 1)),
    "nan_and_infinities": ([np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 2.0], np.float32),
                            np.array([1.0, np.nan, 3.0, -np.inf, 0.0, np.inf], np.float32)], same, [
        ("maximum", [("input", 0), ("input", 1)], {}),
        ("minimum", [("input", 0), ("input", 1)], {}),
        ("div", [("input", 0), ("input", 1)], {}),
        ("isinf", [("step", 2)], {}),
        ("isfinite", [("step", 0)], {}),
        ("relu", [("input", 0)], {}),
    ], (0, 1, 2, 3, 4, 5)),
    "same_input_twice": ([rng_array((8, 8))], same, [
        ("mul", [("input", 0), ("input", 0)], {}),
        ("pow", [("step", 0), ("number", 0.5)], {}),
        ("div", [("step", 1), ("number", 4)], {}),
        ("lerp", [("input", 0), ("step", 2), ("number", 0.25)], {}),
    ], (3,)),
    "float64": ([rng_array((3, 4), "float64"), rng_array((4,), "float64", seed=1)], same, [
        ("mul", [("input", 0), ("input", 1)], {}),
        ("erf", [("step", 0)], {}),
        ("rsqrt", [("input", 1)], {}),
        ("add", [("step", 1), ("step", 2)], {}),
    ], (3,)),
}


def trace(calls, inputs: list) -> tuple[list[Step], list]:
    """Run ``calls`` op by op on ``inputs``; the program's steps, from each call's plan as the compiler
    builds them, and every call's result tensor."""
    steps, results = [], []
    for name, operands, kwargs in calls:
        args = [inputs[v] if kind == "input" else results[v] if kind == "step" else v for kind, v in operands]
        plan, _ = resolve(OPS[name], tuple(args), kwargs)
        first = next(a for a in args if isinstance(a, ember.Tensor))
        compute = plan.compute if plan.compute is not None else first.dtype
        steps.append(Step(name, tuple(tuple(o) for o in operands), plan.attrs, compute, plan.out))
        results.append(getattr(F, name)(*args, **kwargs))
    return steps, results


def program_of(steps, inputs: list, outputs: tuple, shape: tuple) -> ElementwiseProgram:
    return ElementwiseProgram(tuple((t.shape, t.dtype) for t in inputs), tuple(steps), outputs, shape)


def chain_tolerance(steps, dt) -> tuple[float, float]:
    """The loosest of the chain's ops' tolerances for ``dt``, once per step (rounding compounds)."""
    rtol, atol = (max(values) for values in zip(*(tolerance(OPS[s.op], dt) for s in steps)))
    return rtol * len(steps), atol * len(steps)


def assert_values(actual: np.ndarray, expected: np.ndarray, dt, steps, what: str) -> None:
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    if dt.is_floating_point:
        rtol, atol = chain_tolerance(steps, dt)
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=what)


def fused_run(device: str, case: str) -> tuple:
    """(steps, fused outputs as NumPy, op-by-op outputs on the device, op-by-op outputs on the CPU)."""
    arrays, layout, calls, outputs = CASES[case]
    if any(a.dtype == np.float64 for a in arrays) and ember.float64 not in backend(device).supported_dtypes(0):
        pytest.skip(f"{device}:0 has no float64")
    inputs = layout([ember.tensor(a, device=device) for a in arrays])
    steps, results = trace(calls, inputs)
    shape = tuple(results[outputs[0]].shape)
    kernel = backend(device).fuse_elementwise(program_of(steps, inputs, outputs, shape), 0)
    assert kernel is not None, f"{device} declined {case}"
    fused = kernel(*[t._data for t in inputs])
    fused = [backend(device).to_numpy(y) for y in fused]
    _, on_cpu = trace(calls, layout([ember.tensor(a) for a in arrays]))
    return steps, fused, [results[j].cpu().numpy() for j in outputs], [on_cpu[j].numpy() for j in outputs]


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("device", DEVICES)
def test_fused_kernel_matches_op_by_op_and_cpu(device, case):
    steps, fused, op_by_op, cpu = fused_run(device, case)
    outputs = CASES[case][3]
    assert len(fused) == len(outputs)
    for i, j in enumerate(outputs):
        dt = steps[j].out
        assert_values(fused[i], op_by_op[i], dt, steps, f"{case} output {i} (step {j}, {steps[j].op}) vs op by op")
        assert_values(fused[i], cpu[i], dt, steps, f"{case} output {i} (step {j}, {steps[j].op}) vs cpu")


@pytest.mark.parametrize("device", DEVICES)
def test_outputs_are_fresh_contiguous_arrays_of_the_program_shape(device):
    x = ember.tensor(rng_array((3, 1)), device=device)
    y = ember.tensor(rng_array((4,), seed=1), device=device)
    steps, _ = trace([("add", [("input", 0), ("input", 1)], {}), ("gt", [("step", 0), ("number", 0)], {})], [x, y])
    kernel = backend(device).fuse_elementwise(program_of(steps, [x, y], (0, 1), (3, 4)), 0)
    first, second = kernel(x._data, y._data)
    again, _ = kernel(x._data, y._data)
    assert first.shape == second.shape == (3, 4)
    assert backend(device).strides(first) == (4, 1)
    assert backend(device).storage_id(again) != backend(device).storage_id(first)
    assert backend(device).to_numpy(second).dtype == np.bool_


@pytest.mark.parametrize("device", DEVICES)
def test_the_hook_caches_by_program_key(device):
    x = ember.tensor(rng_array((2, 3)), device=device)
    steps, _ = trace([("exp", [("input", 0)], {}), ("neg", [("step", 0)], {})], [x])
    program = program_of(steps, [x], (1,), (2, 3))
    twin = program_of(steps, [x], (1,), (2, 3))  # equal, built separately
    assert backend(device).fuse_elementwise(program, 0) is backend(device).fuse_elementwise(twin, 0)


def opencl_runtime():
    from ember.backends.opencl.runtime import runtime_of
    return runtime_of(0)


OPENCL = pytest.mark.skipif(AVAILABLE.get("opencl") != "available", reason=f"opencl {AVAILABLE.get('opencl')}")


@OPENCL
def test_opencl_compiles_when_asked_and_per_rank_not_per_size_or_layout():
    calls = [("mul", [("input", 0), ("number", 2.0)], {}), ("tanh", [("step", 0)], {}),
             ("sub", [("step", 1), ("input", 0)], {})]
    runtime = opencl_runtime()
    x = ember.tensor(rng_array((6, 10)), device="opencl")
    steps, _ = trace(calls, [x])
    kernel = backend("opencl").fuse_elementwise(program_of(steps, [x], (2,), (6, 10)), 0)
    compiled = runtime.programs.compiled
    kernel(x._data)  # contiguous inputs: compiled when the hook answered
    assert runtime.programs.compiled == compiled
    kernel(ember.tensor(rng_array((10, 6)), device="opencl").t()._data)  # a transposed input: rank 2, once
    y = ember.tensor(rng_array((9, 12)), device="opencl")[1:, ::3]  # another offset, strides and size, rank 2
    steps, results = trace(calls, [y])
    other = backend("opencl").fuse_elementwise(program_of(steps, [y], (2,), tuple(y.shape)), 0)
    built = set(runtime.programs.kernels)
    (out,) = other(y._data)
    # nothing new but, for a size that fills whole work-groups, the twin of a built kernel without range check
    assert all(options and (source, name, "") in built for source, name, options in set(runtime.programs.kernels) - built)
    np.testing.assert_allclose(backend("opencl").to_numpy(out), results[2].cpu().numpy(), rtol=1e-6, atol=1e-6)


@contextmanager
def counting_launches():
    """The list of kernels the OpenCL runtime launches inside the block (each still runs)."""
    runtime, launches = opencl_runtime(), []

    def counted(launch):
        return lambda kernel, *args, **kwargs: (launches.append(kernel), launch(kernel, *args, **kwargs))

    runtime.launch, runtime.launch_rows = counted(runtime.launch), counted(runtime.launch_rows)
    try:
        yield launches
    finally:
        del runtime.launch, runtime.launch_rows


@OPENCL
def test_opencl_runs_each_program_as_one_launch():
    """The measured six-op chain: six launches op by op, one fused."""
    arrays, layout, calls, outputs = CASES["six_op_chain"]
    inputs = [ember.tensor(a, device="opencl") for a in arrays]
    steps, results = trace(calls, inputs)
    kernel = backend("opencl").fuse_elementwise(program_of(steps, inputs, outputs, tuple(results[-1].shape)), 0)
    kernel(*[t._data for t in inputs])  # compiled now, launched below
    with counting_launches() as op_by_op:
        trace(calls, inputs)
    with counting_launches() as fused:
        kernel(*[t._data for t in inputs])
    assert len(op_by_op) == len(calls)
    assert len(fused) == 1


@OPENCL
def test_compiled_chain_replays_as_one_opencl_kernel():
    """Through ember.compile: the compiler hands the chain to this hook, and a replay is one launch."""
    x, y = (ember.tensor(rng_array((16, 32), seed=s), device="opencl") for s in (0, 1))
    b = ember.tensor(rng_array((32,), seed=2), device="opencl")

    def chain(x, b, y):
        h = (x + b) * 0.5
        return (h.tanh() * y - 1).abs(), h > 0

    compiled = ember.compile(chain)
    for _ in range(2):
        compiled(x, b, y)
    with counting_launches() as launches:
        value, positive = compiled(x, b, y)
    assert len(launches) == 1
    expected_value, expected_positive = chain(x, b, y)
    np.testing.assert_allclose(value.cpu().numpy(), expected_value.cpu().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(positive.cpu().numpy(), expected_positive.cpu().numpy())


def low_precision_program(dt) -> ElementwiseProgram:
    f = ember.float32
    steps = (Step("mul", (("input", 0), ("number", 2.0)), (), dt, dt), Step("exp", (("step", 0),), (), f, f))
    return ElementwiseProgram((((4,), dt),), steps, (0, 1), (4,))


@pytest.mark.parametrize("device", DEVICES)
def test_bfloat16_programs_are_declined(device):
    assert backend(device).fuse_elementwise(low_precision_program(ember.bfloat16), 0) is None


@OPENCL
def test_opencl_float16_follows_the_device():
    """PoCL has no cl_khr_fp16, so float16 cannot even be stored there: the hook declines. On a device with
    it, float16 loads and stores as half and computes in float, as the op-by-op kernels do."""
    program = low_precision_program(ember.float16)
    kernel = backend("opencl").fuse_elementwise(program, 0)
    if not opencl_runtime().fp16:
        assert kernel is None
        return
    x = ember.tensor(rng_array((4,), "float16"), device="opencl")
    doubled, exp = (backend("opencl").to_numpy(y) for y in kernel(x._data))
    np.testing.assert_array_equal(doubled, (x * 2.0).cpu().numpy())
    np.testing.assert_allclose(exp, np.exp(doubled.astype(np.float32)), rtol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_integer_powers_are_declined(device):
    """The renderer does not express integer pow (negative exponents raise op by op)."""
    x = ember.tensor(rng_array((5,), "int64", 0, 4), device=device)
    steps, _ = trace([("add", [("input", 0), ("number", 1)], {}), ("pow", [("step", 0), ("number", 2)], {})], [x])
    assert backend(device).fuse_elementwise(program_of(steps, [x], (1,), (5,)), 0) is None


def test_cuda_hook_declines_where_cuda_cannot_run():
    if AVAILABLE.get("cuda") == "available":
        pytest.skip("cuda runs here: the parametrized tests above check its kernels")
    f = ember.float32
    program = ElementwiseProgram((((3,), f),), (Step("exp", (("input", 0),), (), f, f),), (0,), (3,))
    assert backend("cuda").fuse_elementwise(program, 0) is None
