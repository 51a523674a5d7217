"""Complex arithmetic on OpenCL (the renderer's complex dialect and the kernels written with it) against the CPU
backend's kernels (NumPy's complex loops) and PyTorch: every formula op whose complex program renders, the
hand-written inverse functions, add/sub with an alpha, special values on branch cuts, reductions, matmul,
view_as_real/view_as_complex and fused complex programs. Kernels are called directly where an op's schema
may not enable complex yet. Skipped, with the reason, where no OpenCL device works.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.backends.codegen import one_step_program
from ember.dispatch import OPS, ElementwiseProgram, Step, UnsupportedProgram, bool_

STATUS = ember.backends.available().get("opencl", "unavailable: not registered")
pytestmark = pytest.mark.skipif(STATUS != "available", reason=f"opencl {STATUS}")

COMPLEX = [np.complex64, np.complex128]
#: relative and absolute tolerance per dtype: the device's libm is not NumPy's
TOLERANCE = {np.complex64: 2e-5, np.complex128: 1e-11}
#: parts that reach the interesting places: zeros of both signs, the unit circle, large and tiny magnitudes
PARTS = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 1e-3, 30.0, -30.0]


def backend(name="opencl"):
    return ember.backends.registered()[name]


def to_device(x):
    from ember.backends.opencl.cltypes import EMBER_DTYPE
    x = np.asarray(x)
    return backend().from_numpy(x, EMBER_DTYPE[x.dtype], 0)


def to_host(a):
    return backend().to_numpy(a)


def grid(dtype):
    """Every pair of PARTS as one complex number."""
    return np.array([complex(re, im) for re in PARTS for im in PARTS], dtype)


def skip_without(dtype):
    from ember.backends.opencl.cltypes import EMBER_DTYPE
    if EMBER_DTYPE[np.dtype(dtype)] not in backend().supported_dtypes(0):
        pytest.skip(f"the device has no {np.dtype(dtype)}")


def assert_matches(got, expected, dtype, what):
    tol = TOLERANCE[dtype]
    assert got.dtype == expected.dtype, f"{what}: {got.dtype} != {expected.dtype}"
    close = np.isclose(got, expected, rtol=tol, atol=tol, equal_nan=True)
    assert close.all(), f"{what}: {[(i, got[i], expected[i]) for i in np.flatnonzero(~close)[:5]]}"


def _renders_on_complex(name: str) -> bool:
    op = OPS[name]
    dtypes = [ember.complex64 if op.params[i].type.startswith("Tensor") else bool_ for i in op.tensor_positions]
    defaults = tuple(op.params[i].default for i in op.attr_positions)
    try:
        from ember.backends.codegen import OPENCL, c_value_function
        c_value_function(one_step_program(name, dtypes, defaults), OPENCL, "probe")
    except UnsupportedProgram:
        return False
    return True


def _formula_ops():
    from ember.backends.opencl.kernels.elementwise import FORMULA_OPS
    return [name for name in FORMULA_OPS if _renders_on_complex(name)]


def _arguments(name: str, dtype):
    z = grid(dtype)
    op = OPS[name]
    args = []
    for k, i in enumerate(op.tensor_positions):
        if not op.params[i].type.startswith("Tensor"):
            args.append(np.abs(z) > 1)  # where's condition
        else:
            args.append(z if k == 0 else np.roll(z, 7 * k))
    return args + [op.params[i].default for i in op.attr_positions]


def test_the_formula_ops_rendered_on_complex_are_the_expected_ones():
    rendered = set(_formula_ops())
    assert {"add", "sub", "mul", "div", "neg", "exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "pow",
            "sigmoid", "reciprocal", "eq", "ne", "where", "abs", "expm1", "log1p"} <= rendered
    assert not rendered & {"lt", "le", "gt", "ge", "maximum", "minimum", "floor", "ceil", "erf"}


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", _formula_ops() if STATUS == "available" else [])
def test_formula_ops_match_the_cpu(name, dtype):
    skip_without(dtype)
    args = _arguments(name, dtype)
    with np.errstate(all="ignore"):
        expected = backend("cpu").kernels[name](*args)
    got = to_host(backend().kernels[name](*[to_device(a) if isinstance(a, np.ndarray) else a for a in args]))
    assert_matches(got, np.asarray(expected), dtype, name)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", ["asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh"])
def test_hand_written_inverse_and_hyperbolic_functions_match_numpy(name, dtype):
    skip_without(dtype)
    z = grid(dtype)
    reference = {"asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh,
                 "acosh": np.arccosh}.get(name, getattr(np, name))
    with np.errstate(all="ignore"):
        expected = reference(z)
    got = to_host(backend().kernels[name](to_device(z)))
    tol = TOLERANCE[dtype] * 10  # the logarithm forms lose a few bits next to the cuts
    close = np.isclose(got, expected, rtol=tol, atol=tol, equal_nan=True)
    assert close.all(), [(z[i], got[i], expected[i]) for i in np.flatnonzero(~close)[:5]]


@pytest.mark.parametrize("dtype", COMPLEX)
def test_special_values_of_sqrt_log_exp_and_division(dtype):
    skip_without(dtype)
    inf, nan = np.inf, np.nan
    z = np.array([complex(-4, 0.0), complex(-4, -0.0), complex(inf, 1), complex(-inf, 1), complex(1, inf),
                  complex(nan, 1), complex(0, 0), complex(-0.0, -0.0), complex(1e30, 1e30), complex(1e-30, 3)],
                 dtype)
    kernels = backend().kernels
    with np.errstate(all="ignore"):
        assert_matches(to_host(kernels["sqrt"](to_device(z))), np.sqrt(z), dtype, "sqrt")
        assert_matches(to_host(kernels["log"](to_device(z[:2]))), np.log(z[:2]), dtype, "log")
        finite = z[np.isfinite(z)]
        assert_matches(to_host(kernels["exp"](to_device(finite[:2]))), np.exp(finite[:2]), dtype, "exp")
        big = np.array([complex(1e30, 1e30), complex(3e-30, 1e-30), complex(1, 0)], dtype)
        # Smith's division: |b|^2 would overflow (or underflow) where the quotient does not
        assert_matches(to_host(kernels["div"](to_device(big), to_device(big[::-1].copy()), None)),
                       big / big[::-1], dtype, "div")
    # the signed zero picks the side of the branch cut
    roots = to_host(kernels["sqrt"](to_device(z[:2])))
    assert roots[0].imag == 2 and roots[1].imag == -2


#: NaN, infinities and signed zeros in either part
SPECIAL = [complex(np.nan, 1), complex(1, np.nan), complex(np.inf, 0), complex(-np.inf, 2), complex(0.5, np.inf),
           complex(np.inf, np.nan), complex(0, 0), complex(-0.0, -0.0), complex(-2, 0), complex(-2, -0.0),
           complex(1, -1), complex(-0.5, 2.5), complex(3e8, -4e8), complex(-1e30, 1e-30)]


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sinh", "cosh", "sigmoid",
                                  "expm1", "log1p", "asin", "acos", "atan", "asinh", "acosh", "atanh"])
def test_special_values_match_torch(name, dtype):
    torch = pytest.importorskip("torch")
    skip_without(dtype)
    z = np.array(SPECIAL, dtype)
    expected = getattr(torch, name)(torch.from_numpy(z)).numpy()
    got = to_host(backend().kernels[name](to_device(z)))
    tol = TOLERANCE[dtype]
    close = np.isclose(got, expected, rtol=tol, atol=tol, equal_nan=True)
    assert close.all(), [(z[i], got[i], expected[i]) for i in np.flatnonzero(~close)]


@pytest.mark.parametrize("dtype", COMPLEX)
def test_add_and_sub_with_a_complex_alpha(dtype):
    skip_without(dtype)
    a, b = grid(dtype), np.roll(grid(dtype), 3)
    for name, sign in (("add", 1), ("sub", -1)):
        got = to_host(backend().kernels[name](to_device(a), to_device(b), 2 - 1j))
        assert_matches(got, (a + sign * (2 - 1j) * b).astype(dtype), dtype, name)


def _sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return ((rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) * 0.7).astype(dtype)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("shape, dim", [((3, 40), 1), ((3000,), 0), ((400, 5), 0), ((2, 3), None)])
def test_sum_and_prod_match_numpy(dtype, shape, dim):
    """Short rows (one work-item per output), long ones (a work-group's tree) and whole tensors."""
    skip_without(dtype)
    x = _sample(shape, dtype)
    kernels = backend().kernels
    assert_matches(to_host(kernels["sum"](to_device(x), dim, False)), np.asarray(x.sum(axis=dim)), dtype, "sum")
    x = x / np.abs(x)  # unit magnitudes: long products neither overflow nor vanish
    expected = np.asarray(np.prod(x, axis=dim))
    got = to_host(kernels["prod"](to_device(x), dim, False))
    assert np.allclose(got, expected, rtol=1e-3 if dtype == np.complex64 else 1e-9)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_cumsum_and_cumprod_match_numpy(dtype):
    skip_without(dtype)
    x = _sample((4, 9), dtype)
    kernels = backend().kernels
    assert_matches(to_host(kernels["cumsum"](to_device(x), 1)), np.cumsum(x, 1), dtype, "cumsum")
    assert_matches(to_host(kernels["cumprod"](to_device(x), 0)), np.cumprod(x, 0), dtype, "cumprod")


@pytest.mark.parametrize("dtype", COMPLEX)
def test_matmul_batched_broadcast_and_transposed(dtype):
    skip_without(dtype)
    a, b = _sample((2, 5, 70), dtype, 1), _sample((70, 3), dtype, 2)
    matmul = backend().kernels["matmul"]
    tol = 1e-4 if dtype == np.complex64 else 1e-12
    np.testing.assert_allclose(to_host(matmul(to_device(a), to_device(b))), a @ b, rtol=tol, atol=tol)
    transposed = backend().kernels["permute"](to_device(b.T.copy()), (1, 0))
    np.testing.assert_allclose(to_host(matmul(to_device(a), transposed)), a @ b, rtol=tol, atol=tol)
    v, w = a[0, 0], b[:, 1].copy()
    np.testing.assert_allclose(to_host(matmul(to_device(v), to_device(w))), v @ w, rtol=tol, atol=tol)
    empty = to_host(matmul(to_device(a[:, :, :0].copy()), to_device(b[:0].copy())))
    np.testing.assert_array_equal(empty, np.zeros((2, 5, 3), dtype))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_view_as_real_and_back_share_the_buffer(dtype):
    skip_without(dtype)
    x = _sample((3, 4), dtype)
    kernels = backend().kernels
    a = to_device(x)
    column = kernels["slice"](a, 1, 1, 4, 2)  # strides (4, 2), offset 1
    pairs = kernels["view_as_real"](column)
    assert pairs.buffer is a.buffer and pairs.strides == (8, 4, 1) and pairs.offset == 2
    np.testing.assert_array_equal(to_host(kernels["clone"](pairs)), np.stack([x[:, 1::2].real, x[:, 1::2].imag], -1))
    back = kernels["view_as_complex"](kernels["view_as_real"](a))
    assert back.dtype == dtype and back.shape == (3, 4) and back.buffer is a.buffer
    np.testing.assert_array_equal(to_host(back), x)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_fused_complex_programs_agree_with_op_by_op(dtype):
    skip_without(dtype)
    from ember.backends.opencl import fusion
    from ember.backends.opencl.cltypes import EMBER_DTYPE
    dt = EMBER_DTYPE[np.dtype(dtype)]
    shape = (5, 7)
    program = ElementwiseProgram(((shape, dt), (shape, dt)), (
        Step("mul", (("input", 0), ("input", 1)), (), dt, dt),
        Step("exp", (("step", 0),), (), dt, dt),
        Step("abs", (("step", 1),), (), dt, dt.to_real()),
        Step("sub", (("step", 1), ("number", 1 + 2j)), (1,), dt, dt)), (2, 3), shape)
    x, y = _sample(shape, dtype, 3), _sample(shape, dtype, 4)
    magnitude, shifted = fusion.fuse_elementwise(program, 0)(to_device(x), to_device(y))
    assert_matches(to_host(magnitude), np.abs(np.exp(x * y)), dtype, "fused abs")
    assert_matches(to_host(shifted), np.exp(x * y) - (1 + 2j), dtype, "fused sub")
    less = Step("lt", (("input", 0), ("input", 1)), (), dt, bool_)
    ordered = ElementwiseProgram(((shape, dt), (shape, dt)), (less,), (0,), shape)
    assert fusion.fuse_elementwise(ordered, 0) is None  # complex numbers are not ordered: op by op refuses it


@pytest.mark.parametrize("dtype", COMPLEX)
def test_front_end_parity_with_torch(dtype):
    torch = pytest.importorskip("torch")
    skip_without(dtype)
    x, y = _sample((4, 3), dtype, 5), _sample((4, 3), dtype, 6)
    ex, ey = ember.tensor(x, device="opencl"), ember.tensor(y, device="opencl")
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    tol = 1e-5 if dtype == np.complex64 else 1e-12
    for got, want in [((ex * ey + ex / ey).exp(), (tx * ty + tx / ty).exp()), (ex.abs(), tx.abs()),
                      (ex.sum(0), tx.sum(0)), (ember.view_as_real(ex), torch.view_as_real(tx)),
                      (ex.sqrt(), tx.sqrt()), (ex == ey, tx == ty)]:
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_rendered_complex_reductions_accumulate_both_parts(dtype, reduction):
    """The renderer's reduction functions (init, combine, finish) for a complex program, in a loop of one
    work-item: what a backend fusing reductions in C would run."""
    skip_without(dtype)
    from ember.backends.codegen import OPENCL, render_c
    from ember.backends.opencl.backend import runtime_of
    from ember.backends.opencl.cltypes import EMBER_DTYPE, STORAGE_CTYPE
    dt = EMBER_DTYPE[np.dtype(dtype)]
    n = 50
    program = ElementwiseProgram((((n,), dt), ((n,), dt)), (Step("mul", (("input", 0), ("input", 1)), (), dt, dt),),
                                 (0,), (n,), reduction=(reduction, (0,), False))
    runtime = runtime_of(0)
    accumulator = None if runtime.fp64 else ember.float32
    t = STORAGE_CTYPE[np.dtype(dtype)]
    acc = "double2" if runtime.fp64 else "float2"  # (complex128 sums, complex64 without doubles)
    source = OPENCL.helpers + render_c(program, OPENCL, "f", accumulator) + f"""
__kernel void ember_reduce_test(__global const {t} *a, __global const {t} *b, __global {t} *out, const long n) {{
    {acc} acc = f_init();
    for (long k = 0; k < n; ++k) {{ {t} v; f(a[k], b[k], &v); acc = f_combine(acc, v); }}
    out[0] = f_finish(acc, n);
}}
"""
    kernel = runtime.programs.kernel(source, "ember_reduce_test", [None, None, None, np.int64])
    x, y = _sample((n,), dtype, 7), _sample((n,), dtype, 8)
    out = to_device(np.zeros(1, dtype))
    runtime.enqueue(kernel, (1,), (1,), to_device(x).buffer, to_device(y).buffer, out.buffer, n)
    expected = (x * y).sum() / (n if reduction == "mean" else 1)
    assert_matches(to_host(out), np.array([expected], dtype), dtype, reduction)
