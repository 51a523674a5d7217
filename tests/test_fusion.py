"""Elementwise fusion: the formula language, the renderers, and the backends' ``fuse_elementwise`` hooks.

Every formula is checked against its op's kernel (the rendered Python evaluated element by element, bitwise
where it is the kernel's own arithmetic); hand-built programs run through each backend's hook are checked
against the same ops run one by one through Ember.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from ember.backends.cpu import fusion as cpu_fusion
from ember.backends.cpu.dtypes import LOW_PRECISION, NUMPY_DTYPE
from ember.conformance.compare import tolerance
from ember.dispatch import OPS, Backend, dtypes as d
from ember.backends.codegen import CUDA, OPENCL, render_c, render_python
from ember.dispatch.fusion import (ElementwiseProgram, FormulaError, Step, UnsupportedProgram, formula, fusible, lower,
                                   parse_formula, value_dtype)
from ember.dispatch.ops import F
from ember.dispatch.schema.promotion import result_type_of
from ember.dispatch.schema import REQUIRED

RNG = np.random.default_rng(0)
#: attribute values checked besides the defaults
ATTR_CASES = {"add": [{"alpha": 2}], "sub": [{"alpha": 3}], "gelu": [{"approximate": "tanh"}],
              "leaky_relu": [{"negative_slope": 0.2}, {"negative_slope": -1.5}], "elu": [{"alpha": 0.5}],
              "softplus": [{"beta": 2.0}, {"beta": 0.5, "threshold": -1.0}], "threshold_backward": [{"threshold": 0.0}, {"threshold": 0.5}]}
#: ops whose formula is not the CPU kernel's arithmetic, so they agree within the op's tolerance only:
#: the kernel calls scipy's expit and erf, or NumPy's log2, where the formula spells the function out;
#: and NumPy's vectorized float32 power differs in the last bit from its scalar one; float32 exp renders as
#: ember.dispatch.fast_exp's (within 1 ulp of NumPy's), so do the ops whose formulas call it; atanh and log10
#: spell out through log1p and log what the kernel calls NumPy for, logaddexp's composite calls fast exp
NOT_THE_KERNELS_ARITHMETIC = {"sigmoid", "erf", "gelu", "gelu_backward", "log2", "pow", "exp", "silu", "mish", "softplus",
                              "logsigmoid", "atanh", "log10", "logaddexp"}


def _attr_cases(op):
    """The attribute values checked: the defaults (where every attribute has one) and ATTR_CASES."""
    required = any(op.params[i].default is REQUIRED for i in op.attr_positions)
    return ([] if required else [{}]) + ATTR_CASES.get(op.name, [])


def _random(shape, dt, name=""):
    if dt is d.bool_ or name == "condition":
        return RNG.random(shape) < 0.5
    if dt.is_floating_point:
        values = RNG.standard_normal(shape) * 3
        if values.size >= 4:
            values.flat[:4] = [0.0, -0.0, np.inf, np.nan]  # special values, where the semantics differ most
        return values.astype(NUMPY_DTYPE[dt])
    low, high = (0, 200) if dt is d.uint8 else (-100, 100)
    return RNG.integers(low, high, shape).astype(NUMPY_DTYPE[dt])


# -- building programs the way the compiler does -------------------------------------------------------------

def build(inputs: list[np.ndarray], calls: list, outputs: tuple) -> ElementwiseProgram:
    """A program over ``inputs`` of ``calls`` = [(op, operands, attrs)], with compute and result dtypes
    from the ops' own promotion rules (operands: ("input", k), ("step", j) or a Python number)."""
    in_dtypes = [ember.tensor(a).dtype for a in inputs]
    shape = np.broadcast_shapes(*(a.shape for a in inputs))
    steps, out_dtypes = [], []
    for name, operands, attrs in calls:
        op = OPS[name]
        values = list(op.default_values)
        for i in op.attr_positions:
            values[i] = attrs.get(op.params[i].name, values[i])
        dims, zero_dims, scalars, encoded = [], [], [], []
        for position, operand in zip(op.tensor_positions, operands):
            if isinstance(operand, tuple):
                kind, index = operand
                dt = in_dtypes[index] if kind == "input" else out_dtypes[index]
                rank = inputs[index].ndim if kind == "input" else len(shape)
                encoded.append(operand)
            else:
                dt, rank = None, None
                encoded.append(("number", operand))
            if op.params[position].type.startswith("Index"):
                continue
            if dt is None:
                scalars.append(operand)
            else:
                (dims if rank else zero_dims).append(dt)
        compute, out = op.promote(result_type_of(dims, zero_dims, scalars), values)
        attr_values = tuple(values[i] for i in op.attr_positions)
        steps.append(Step(name, tuple(encoded), attr_values, compute, out))
        out_dtypes.append(out)
    return ElementwiseProgram(tuple((a.shape, dt) for a, dt in zip(inputs, in_dtypes)), tuple(steps), outputs,
                              tuple(shape))


def op_by_op(program: ElementwiseProgram, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The program's outputs computed by calling each op through Ember."""
    tensors = [ember.tensor(a) for a in inputs]
    values = []
    for step in program.steps:
        op = OPS[step.op]
        args = [tensors[v] if kind == "input" else values[v] if kind == "step" else v for kind, v in step.operands]
        kwargs = {op.params[i].name: value for i, value in zip(op.attr_positions, step.attrs)}
        result = getattr(F, step.op)(*args, **kwargs)
        values.append(result)
    return [np.broadcast_to(values[j].numpy(), program.shape) for j in program.outputs]


def evaluate_python(program: ElementwiseProgram, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """``render_python``'s element function applied to every element, in plain Python on NumPy scalars."""
    namespace = {"np": np, "math": math}
    exec(render_python(program), namespace)
    element = namespace["element"]
    widened = [np.broadcast_to(a.astype(np.float32) if a.dtype in LOW_PRECISION else a, program.shape)
               for a in inputs]
    outs = [np.empty(program.shape, NUMPY_DTYPE[value_dtype(program.steps[j].out)]) for j in program.outputs]
    with np.errstate(all="ignore"):
        for index in np.ndindex(*program.shape):
            for out, value in zip(outs, element(*(a[index] for a in widened))):
                out[index] = value
    return [out.astype(NUMPY_DTYPE[program.steps[j].out]) for out, j in zip(outs, program.outputs)]


def assert_same(actual, expected, dt, rtol_atol=None, exact=False):
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    if exact or not dt.is_floating_point:
        np.testing.assert_array_equal(actual, expected)
        return
    rtol, atol = rtol_atol
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol)


# -- the formula language ------------------------------------------------------------------------------------

def test_every_declared_formula_parses():
    checked = 0
    for op in OPS.values():
        if op.scalar is None:
            continue
        for attrs in _attr_cases(op):
            values = tuple(attrs.get(op.params[i].name, op.params[i].default) for i in op.attr_positions)
            assert fusible(op, values), op.name
            checked += 1
    assert checked >= 50


@pytest.mark.parametrize("text, complaint", [
    ("foo(input)", "unknown function 'foo'"),
    ("input + beta", "names 'beta'"),
    ("0 < input < 1", "chains comparisons"),
    ("max(input)", "takes 2 positional"),
    ("input ** 2", "not in the formula language"),
    ("input +", "not an expression"),
    ("input if other else 0", "not in the formula language"),
    ("'text'", "only int and float numbers"),
])
def test_bad_formulas_name_the_op(text, complaint):
    with pytest.raises(FormulaError, match="add: formula") as info:
        parse_formula(OPS["add"], text)
    assert complaint in str(info.value)


def test_callable_formulas_decline_attribute_combinations():
    assert formula(OPS["div"], (None,)) == "input / other"
    assert not fusible(OPS["div"], ("floor",)) and not fusible(OPS["div"], ("trunc",))
    assert fusible(OPS["gelu"], ("tanh",)) and "erf" in formula(OPS["gelu"], ("none",))
    assert not fusible(OPS["matmul"], ())  # no formula at all


def _formula_cases():
    for op in OPS.values():
        if op.scalar is None:
            continue
        for attrs in _attr_cases(op):
            for dt in (dt for dt in d.REAL_DTYPES if dt in op.accepted_dtypes):  # numba renders real programs
                yield pytest.param(op.name, attrs, dt, id=f"{op.name}-{attrs}-{dt.name}".replace(" ", ""))


@pytest.mark.parametrize("name, attrs, dt", list(_formula_cases()))
def test_formula_matches_the_kernel(name, attrs, dt):
    op = OPS[name]
    inputs = [_random((24,), dt, op.params[i].name) for i in op.tensor_positions]
    if name == "pow" and dt.is_floating_point:
        inputs[1] = RNG.integers(-3, 4, 24).astype(inputs[1].dtype)  # also a few exact integer powers
    program = build(inputs, [(name, tuple(("input", k) for k in range(len(inputs))), attrs)], (0,))
    if "pow(" in formula(op, program.steps[0].attrs) and not program.steps[0].compute.is_floating_point:
        with pytest.raises(UnsupportedProgram, match="pow"):
            render_python(program)
        return
    expected = op_by_op(program, inputs)[0]
    actual = evaluate_python(program, inputs)[0]
    out = program.steps[0].out
    exact = not (out.itemsize == 2 and out.is_floating_point) and name not in NOT_THE_KERNELS_ARITHMETIC
    assert_same(actual, expected, out, tolerance(op, out), exact=exact)


# -- the C renderer ------------------------------------------------------------------------------------------

def test_render_c_dialects():
    x, b = np.zeros((4, 3), np.float32), np.zeros((3,), np.float16)
    program = build([x, b], [("add", (("input", 0), ("input", 1)), {"alpha": 0.5}),
                             ("gelu", (("step", 0),), {"approximate": "tanh"}),
                             ("gt", (("step", 1), 0), {}), ("maximum", (("step", 1), math.inf), {})], (3, 2))
    source = render_c(program, OPENCL)
    assert source.startswith("inline void ember_element(float x0, float x1, float *y0, bool *y1) {")
    assert "tanh(" in source and "((float)INFINITY)" in source and "*y1 = " in source
    assert "|| " in source  # NaN-propagating max, not fmax
    cuda = render_c(program, CUDA, name="f")
    assert cuda.startswith("__device__ __forceinline__ void f(") and "CUDART_INF" in cuda
    ints = build([np.zeros(3, np.int64)], [("mul", (("input", 0), -2 ** 40), {})], (0,))
    assert "-1099511627776L" in render_c(ints, OPENCL) and "-1099511627776LL" in render_c(ints, CUDA)


def test_program_checks_its_structure():
    with pytest.raises(ember.dispatch.ShapeError, match="does not broadcast"):
        ElementwiseProgram((((3,), d.float32),), (Step("neg", (("input", 0),), (), d.float32, d.float32),), (0,), (4,))
    with pytest.raises(FormulaError, match="bad operand"):
        ElementwiseProgram((((3,), d.float32),), (Step("neg", (("step", 0),), (), d.float32, d.float32),), (0,), (3,))
    with pytest.raises(FormulaError, match="no scalar formula"):
        ElementwiseProgram((((3,), d.float32),), (Step("sum", (("input", 0),), (), d.float32, d.float32),), (0,), (3,))


def test_key_is_stable_and_names_shapes():
    def make(n):
        return build([np.zeros((n, 3), np.float32)], [("relu", (("input", 0),), {})], (0,))
    assert make(2).key() == make(2).key() and make(2).key() != make(5).key()
    assert "float32[2, 3]" in make(2).key()


# -- the backends' hooks -------------------------------------------------------------------------------------

def _hooked(name):
    backend = ember.backends.registered().get(name)
    if backend is None or backend.unavailable_reason() is not None:
        pytest.skip(f"backend {name} is not available here")
    if type(backend).fuse_elementwise is Backend.fuse_elementwise:
        pytest.skip(f"backend {name} has no fuse_elementwise hook yet")
    if name == "cpu":
        pytest.importorskip("numba")
    return backend


def _x(*shape, dt=np.float32):
    return (RNG.standard_normal(shape) * 2).astype(dt)


def _programs():
    x, bias, w = _x(8, 6), _x(6), _x(6)
    mean, rstd = _x(8, 1), np.abs(_x(8, 1)) + 0.5
    i32, i8, i16 = (RNG.integers(-100, 100, (5, 4)).astype(t) for t in (np.int32, np.int8, np.int16))
    u8 = RNG.integers(0, 250, (4,)).astype(np.uint8)
    yield "add-relu", [x, x[::-1].copy()], [("add", (("input", 0), ("input", 1)), {}),
                                           ("relu", (("step", 0),), {})], (1,)
    yield "gelu of x + bias, both forms", [x, bias], [
        ("add", (("input", 0), ("input", 1)), {}), ("gelu", (("step", 0),), {"approximate": "tanh"}),
        ("gelu", (("step", 0),), {})], (1, 2)
    yield "layer norm's elementwise part", [x, mean, rstd, w, bias], [
        ("sub", (("input", 0), ("input", 1)), {}), ("mul", (("step", 0), ("input", 2)), {}),
        ("mul", (("step", 1), ("input", 3)), {}), ("add", (("step", 2), ("input", 4)), {})], (3,)
    yield "six ops, numbers as operands", [x], [
        ("mul", (("input", 0), 0.5), {}), ("sub", (("step", 0), 2), {"alpha": 3}), ("exp", (("step", 1),), {}),
        ("pow", (("step", 2), 2), {}), ("div", (1.5, ("step", 3)), {}), ("maximum", (("step", 4), -1.0), {})], (5,)
    yield "mixed dtypes, promotion casts", [i32, x[:5, :4].copy(), i8], [
        ("add", (("input", 0), ("input", 2)), {}), ("mul", (("step", 0), ("input", 1)), {}),
        ("lt", (("step", 1), ("input", 0)), {}), ("where", (("step", 2), ("input", 2), ("step", 1)), {})], (3, 2)
    yield "integer wrap-around", [i8, i16, u8], [
        ("mul", (("input", 0), ("input", 0)), {}), ("add", (("step", 0), 100), {"alpha": 2}),
        ("neg", (("step", 1),), {}), ("abs", (("step", 2),), {}), ("sub", (("input", 2), 7), {}),
        ("maximum", (("step", 3), ("input", 1)), {})], (3, 4, 5)
    yield "bools", [x[:5, :4] > 0, i32 > 0, i8], [
        ("logical_and", (("input", 0), ("input", 1)), {}), ("logical_not", (("step", 0),), {}),
        ("logical_xor", (("step", 1), ("input", 2)), {}), ("add", (("step", 2), ("input", 0)), {})], (2, 3)
    yield "0-d", [np.array(1.5, np.float32), np.array(-2.0, np.float32)], [
        ("mul", (("input", 0), ("input", 1)), {}), ("tanh", (("step", 0),), {}),
        ("ge", (("step", 1), 0), {})], (1, 2)
    yield "0-d with a vector", [np.array(1.5, np.float32), bias], [("sub", (("input", 1), ("input", 0)), {}),
                                                                   ("silu", (("step", 0),), {})], (1,)
    yield "empty", [np.zeros((0, 3), np.float32), _x(3)], [("add", (("input", 0), ("input", 1)), {}),
                                                           ("sigmoid", (("step", 0),), {})], (1,)
    yield "non-contiguous", [x.T, _x(12, 16)[::2, ::2], _x(6, 1)[::-1]], [
        ("mul", (("input", 0), ("input", 2)), {}), ("add", (("step", 0), 1), {}),
        ("log1p", (("step", 1),), {}), ("isnan", (("step", 2),), {})], (2, 3)
    half = x.astype(np.float16)
    yield "float16 in float32", [half, bias.astype(np.float16)], [
        ("add", (("input", 0), ("input", 1)), {}), ("silu", (("step", 0),), {}), ("mul", (("step", 1), 3), {})], (2,)
    bf16 = x.astype(NUMPY_DTYPE[d.bfloat16])
    yield "bfloat16 and float32", [bf16, x], [
        ("mul", (("input", 0), ("input", 0)), {}), ("add", (("step", 0), ("input", 1)), {}),
        ("leaky_relu", (("step", 0),), {}), ("softplus", (("step", 1),), {"beta": 2.0})], (2, 3)
    grad, out = _x(7), _x(7)
    yield "relu backward and friends", [grad, out], [
        ("threshold_backward", (("input", 0), ("input", 1)), {"threshold": 0.0}), ("sign", (("input", 1),), {}),
        ("mul", (("step", 0), ("step", 1)), {}), ("isfinite", (("step", 2),), {})], (2, 3)


#: the op-by-op kernels of these call NumPy's and SciPy's vectorized exp/log/tanh/erf/expit, which may
#: differ in the last bit from the scalar libm versions the fused loop calls
TRANSCENDENTAL = {"exp", "expm1", "log", "log1p", "tanh", "erf", "sigmoid", "silu", "gelu", "softplus", "pow",
                  "sin", "cos", "tan", "mish", "logsigmoid", "elu", "log2"}


def _calls(program, functions) -> bool:
    return any(ins.kind == "call" and ins.args[0] in functions for ins in lower(program)[0])


TOLERANCES = {"float16": 1e-2, "bfloat16": 4e-2, "float32": 1e-5, "float64": 1e-12}


@pytest.mark.parametrize("backend_name", ["cpu", "opencl"])
@pytest.mark.parametrize("case", list(_programs()), ids=lambda case: case[0])
def test_fused_program_matches_op_by_op(backend_name, case):
    backend = _hooked(backend_name)
    _, inputs, calls, outputs = case
    program = build(inputs, calls, outputs)
    kernel = backend.fuse_elementwise(program, backend.default_index())
    if backend_name == "cpu" and _calls(program, cpu_fusion.SLOWER_FUSED):
        assert kernel is None, "the CPU hook fuses a program NumPy runs faster op by op"
        kernel = cpu_fusion.fuse_elementwise(program, slower=frozenset())  # still check that it computes right
    if kernel is None and backend_name != "cpu":  # a backend may decline what it cannot do (half types)
        pytest.skip(f"{backend_name} declines this program")
    assert kernel is not None, "the CPU backend declined a program it should fuse"
    index = backend.default_index()
    natives = [backend.from_numpy(a, ember.tensor(a).dtype, index) for a in inputs] if backend_name != "cpu" \
        else inputs
    results = kernel(*natives)
    expected = op_by_op(program, inputs)
    assert len(results) == len(outputs)
    transcendental = any(s.op in TRANSCENDENTAL for s in program.steps)
    for result, want, j in zip(results, expected, outputs):
        got = backend.to_numpy(result)
        dt = program.steps[j].out
        assert got.shape == program.shape and got.dtype == NUMPY_DTYPE[dt]
        # fused chains keep half-precision intermediates in float32 where op by op rounds each one to half
        halves = [s.compute.name for s in program.steps if value_dtype(s.compute) is not s.compute]
        exact = backend_name == "cpu" and not transcendental and not halves
        rtol = max(TOLERANCES.get(name, 0) for name in [dt.name, *halves])
        assert_same(got, want, dt, (rtol, rtol), exact=exact)


def test_cpu_declines_integer_powers():
    backend = _hooked("cpu")
    program = build([np.arange(4)], [("pow", (("input", 0), 2), {})], (0,))
    assert backend.fuse_elementwise(program, None) is None


def test_cpu_kernel_is_cached_in_process():
    backend = _hooked("cpu")
    program = build([_x(3, 4)], [("exp", (("input", 0),), {}), ("neg", (("step", 0),), {})], (1,))
    same = build([_x(3, 4)], [("exp", (("input", 0),), {}), ("neg", (("step", 0),), {})], (1,))
    assert backend.fuse_elementwise(program, None) is backend.fuse_elementwise(same, None)


def test_second_process_loads_the_compiled_kernel(tmp_path):
    pytest.importorskip("numba")
    script = textwrap.dedent("""
        import numpy as np
        import ember
        from ember.backends.cpu import fusion
        from ember.dispatch import dtypes as d
        from ember.dispatch.fusion import ElementwiseProgram, Step
        program = ElementwiseProgram((((5,), d.float32),), (Step("mul", (("input", 0), ("number", 3)), (),
                                     d.float32, d.float32), Step("exp", (("step", 0),), (), d.float32, d.float32)),
                                     (1,), (5,))
        out, = fusion.fuse_elementwise(program)(np.arange(5, dtype=np.float32))
        assert np.allclose(out, np.exp(3 * np.arange(5)))
        kernel = next(iter(fusion._modules.values())).kernel
        print(len(kernel.stats.cache_hits), len(kernel.stats.cache_misses))
    """)
    env = dict(os.environ, EMBER_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
            for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert runs[0].stdout.split() == ["0", "1"]  # compiled
    assert runs[1].stdout.split() == ["1", "0"]  # loaded from the disk cache, not compiled again


def test_cpu_works_without_numba():
    script = textwrap.dedent("""
        import sys
        sys.modules["numba"] = None  # as if numba were not installed
        import numpy as np
        import ember
        from ember.backends.cpu import optim_kernels
        from ember.dispatch import dtypes as d
        from ember.dispatch.fusion import ElementwiseProgram, Step
        program = ElementwiseProgram((((3,), d.float32),), (Step("neg", (("input", 0),), (), d.float32, d.float32),),
                                     (0,), (3,))
        assert ember.backends.registered()["cpu"].fuse_elementwise(program, None) is None
        assert optim_kernels.KERNELS["adam_step"] is optim_kernels.numpy_adam_step
        from ember.backends.cpu import kernels, row_kernels
        assert row_kernels.build(kernels.KERNELS) == {}
        assert kernels.KERNELS["layer_norm"].__module__ != row_kernels.__name__
        y = ember.nn.functional.layer_norm(ember.tensor([[1.0, 3.0]]), (2,))
        assert np.allclose(y.numpy(), [[-1, 1]], atol=1e-4)
        p, m, v = ember.dispatch.ops.F.adam_step(*(ember.ones(3) for _ in range(4)), 1, 0.1, 0.9, 0.999, 1e-8)
        assert np.allclose(p.numpy(), 1 - 0.1 * 10 / (1000 ** 0.5 + 1e-8))  # m_hat = 10, v_hat = 1000
        print("ok")
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr


# -- programs ending with a reduction -------------------------------------------------------------------------

def _reduced(program: ElementwiseProgram, reduction: tuple) -> ElementwiseProgram:
    return ElementwiseProgram(program.inputs, program.steps, program.outputs, program.shape, reduction)


def _reduction_programs():
    x, bias, mean = _x(8, 6), _x(6), _x(8, 1)
    cube = _x(3, 8, 5)[:, ::2, :]
    nans = _x(5, 4)
    nans[1, 2], nans[3, 0] = np.nan, np.inf
    i8 = RNG.integers(-100, 100, (6, 5)).astype(np.int8)
    yield "softmax's denominator", [x, mean], [("sub", (("input", 0), ("input", 1)), {}),
                                               ("exp", (("step", 0),), {})], ("sum", (1,), True)
    yield "sum over the leading dim", [x, bias], [("add", (("input", 0), ("input", 1)), {})], ("sum", (0,), False)
    yield "mean of squares, two dims, strided", [cube], [("mul", (("input", 0), ("input", 0)), {})], \
        ("mean", (0, 2), False)
    yield "amax propagates NaN", [nans], [("mul", (("input", 0), 2), {})], ("amax", (1,), False)
    yield "amin over everything", [nans[[0, 2, 4]]], [("neg", (("input", 0),), {})], ("amin", (0, 1), False)
    yield "amin of int8", [i8], [("neg", (("input", 0),), {})], ("amin", (0,), True)
    yield "amax of bools", [i8], [("gt", (("input", 0), 50), {})], ("amax", (1,), False)
    yield "sum of bools is int64", [x], [("gt", (("input", 0), 0), {})], ("sum", (1,), False)
    yield "sum of wrapping int8 products", [i8], [("mul", (("input", 0), ("input", 0)), {})], ("sum", (0, 1), True)
    yield "float16 mean", [x.astype(np.float16), bias.astype(np.float16)], [
        ("add", (("input", 0), ("input", 1)), {}), ("silu", (("step", 0),), {})], ("mean", (1,), False)
    yield "sum over an empty dim", [np.zeros((3, 0), np.float32)], [("exp", (("input", 0),), {})], ("sum", (1,), False)
    yield "mean over an empty dim", [np.zeros((3, 0), np.float32)], [("exp", (("input", 0),), {})], ("mean", (1,), True)
    yield "nothing kept is empty", [np.zeros((0, 3), np.float64)], [("abs", (("input", 0),), {})], ("sum", (1,), False)


@pytest.mark.parametrize("case", list(_reduction_programs()), ids=lambda case: case[0])
def test_cpu_reduction_matches_op_by_op(case):
    backend = _hooked("cpu")
    _, inputs, calls, reduction = case
    elementwise = build(inputs, calls, (len(calls) - 1,))
    program = _reduced(elementwise, reduction)
    kernel = backend.fuse_elementwise(program, None)
    assert kernel is not None and kernel is not backend.fuse_elementwise(elementwise, None)
    got, = kernel(*inputs)
    value = op_by_op(elementwise, inputs)[0]
    name, dims, keepdim = reduction
    want = getattr(F, name)(ember.tensor(value), list(dims), keepdim).numpy()
    assert got.shape == program.result_shape() == want.shape
    assert got.dtype == want.dtype == NUMPY_DTYPE[program.result_dtype()]
    halves = any(value_dtype(s.compute) is not s.compute for s in program.steps)
    exact = name in ("amax", "amin") or not np.issubdtype(got.dtype, np.floating)
    tol = TOLERANCES["float16"] if halves else TOLERANCES.get(str(got.dtype), 0)
    assert_same(got, want, program.result_dtype(), (tol, tol), exact=exact)


def test_reduction_is_validated():
    x = np.zeros((3, 4), np.float32)
    program = build([x], [("exp", (("input", 0),), {})], (0,))
    for reduction, error, complaint in [
            (("prod", (0,), False), FormulaError, "not one of sum, mean, amax, amin"),
            (("sum", (1, 0), False), ember.dispatch.ShapeError, "distinct, ascending"),
            (("sum", (2,), False), ember.dispatch.ShapeError, r"within the program's shape \(3, 4\)"),
            (("sum", (), False), ember.dispatch.ShapeError, "distinct, ascending"),
            (("sum", (0,), 1), FormulaError, "keepdim must be a bool"),
            (("sum", (0,)), FormulaError, "must be a tuple")]:
        with pytest.raises(error, match=complaint):
            _reduced(program, reduction)
    ints = build([np.zeros(3, np.int32)], [("neg", (("input", 0),), {})], (0,))
    with pytest.raises(ember.dispatch.DtypeError, match="mean of int32"):
        _reduced(ints, ("mean", (0,), False))
    empty = build([np.zeros((2, 0), np.float32)], [("neg", (("input", 0),), {})], (0,))
    with pytest.raises(ember.dispatch.ShapeError, match="amax over dims .* empty"):
        _reduced(empty, ("amax", (1,), False))
    two = build([x], [("exp", (("input", 0),), {}), ("neg", (("step", 0),), {})], (0, 1))
    with pytest.raises(FormulaError, match="single output"):
        _reduced(two, ("sum", (0,), False))


def test_reduction_is_in_the_key_and_the_c_source():
    x = np.zeros((3, 4), np.float32)
    program = build([x], [("mul", (("input", 0), 2), {})], (0,))
    keys = {_reduced(program, r).key() for r in [("sum", (0,), False), ("sum", (0,), True), ("amax", (0,), False)]}
    assert len(keys | {program.key()}) == 4 and "reduction=sum[0]keepdim=True" in "".join(keys)
    amax = render_c(_reduced(program, ("amax", (1,), False)))
    assert "inline float ember_element_combine(float acc, float v) { return ((acc >= v) || acc != acc) ? acc : v; }" \
        in amax and "inline float ember_element_init(void) { return (-(float)INFINITY); }" in amax
    mean = render_c(_reduced(program, ("mean", (0, 1), False)), CUDA, accumulator=d.float32)
    assert "__device__ __forceinline__ float ember_element_finish(float acc, long long count) " \
           "{ return (float)(acc / (float)count); }" in mean
    assert "double ember_element_init" in render_c(_reduced(program, ("sum", (0,), False)))
