"""Complex numbers through the elementwise ops, against PyTorch itself: which ops accept complex operands (exactly
those PyTorch accepts), their values on complex64 and complex128 (special values included: signed zeros, infinities,
NaN, negative reals on the branch cuts), the new ops of complex numbers (angle, sgn, conj_physical, complex, polar)
and PyTorch's own refusals. Gradients are in test_complex_elementwise_grad.py."""
from __future__ import annotations

import math
import os

import numpy as np
import pytest

import ember
from ember.dispatch import OPS
from ember.dispatch.ops.namespace import F
from ember.dispatch.ops.elementwise.complex_support import conj

torch = pytest.importorskip("torch")

INF, NAN = math.inf, math.nan
#: signed zeros, both branch cuts' sides, infinities, NaN, magnitudes near overflow and underflow
SPECIAL = [0j, complex(-0.0, 0.0), complex(0.0, -0.0), 1 + 2j, -0.5 + 0.3j, -2 + 0j, complex(-2, -0.0), 3 + 0j, 2j, -2j,
           complex(INF, 0), complex(-INF, 0), complex(0, INF), complex(INF, INF), complex(NAN, 0), complex(0, NAN),
           complex(INF, 1), complex(1, INF), complex(-INF, 1), 1e30 + 1e30j, 3e38 + 3e38j, 1e-30 + 1e-30j,
           1e-10 + 1e-10j, 0.5 - 1j]
DTYPES = [(ember.complex64, torch.complex64), (ember.complex128, torch.complex128)]
#: Values where PyTorch's own results depend on its code path (its vectorized and scalar loops differ), or on an
#: implementation artifact: sgn with an infinite part (0 + NaN j or NaN + NaN j for 1 + inf j)
UNSETTLED = {"sgn": [v for v in SPECIAL if math.isinf(abs(v))]}
UNARY = ["neg", "abs", "exp", "expm1", "log", "log1p", "sqrt", "sin", "cos", "tan", "tanh", "logical_not", "isnan",
         "log2", "reciprocal", "rsqrt", "sigmoid", "isinf", "isfinite", "asin", "acos", "atan", "sinh", "cosh", "asinh",
         "acosh", "atanh", "log10", "square", "angle", "sgn", "conj_physical", "exp2", "sinc", "isreal", "nan_to_num"]


def torch_function(name: str):
    """PyTorch's function of an Ember op name: torch.<name>, torch.special, torch.nn.functional or aten."""
    for namespace, key in ((torch, name), (torch.special, name.removeprefix("special_")),
                           (torch.nn.functional, name), (torch.ops.aten, name)):
        function = getattr(namespace, key, None)
        if function is not None:
            return function
    raise LookupError(name)


def assert_same(got, want, dtype, atol: float = 0.0) -> None:
    """An Ember result against PyTorch's: the dtype, NaN and infinities part by part, and finite values within a
    tolerance relative to each number's magnitude (x^2 - y^2 of 1e30 + 1e30j is 0 give or take 1e44)."""
    got, want = np.asarray(got.numpy()), want.numpy()
    assert got.dtype == want.dtype
    if got.dtype.kind == "b":
        np.testing.assert_array_equal(got, want)
        return
    for part in (np.real, np.imag):
        np.testing.assert_array_equal(np.isnan(part(got)), np.isnan(part(want)))
        np.testing.assert_array_equal(np.where(np.isinf(part(got)), part(got), 0),
                                      np.where(np.isinf(part(want)), part(want), 0))
    tolerance = 1e-5 if dtype in (ember.complex64, ember.float32) else 1e-12
    finite = np.isfinite(got) & np.isfinite(want)
    with np.errstate(all="ignore"):
        error = np.abs(got - want)[finite].astype(np.float64)
        allowed = tolerance * np.abs(want)[finite].astype(np.float64) + atol
    assert (error <= allowed).all(), (got[finite][error > allowed], want[finite][error > allowed])


# -- which ops take complex operands -----------------------------------------------------------------------------

_FOLDER = os.path.join("ops", "elementwise") + os.sep
ELEMENTWISE_OPS = sorted(name for name, op in OPS.items() if op.source and _FOLDER in op.source[0])
_ANY_NUMBER = {"int": 1, "float": 0.5, "bool": False, "Scalar": 0.5}


def _arguments(op, z, as_tensor):
    """Positional arguments of one call: a complex tensor for every tensor operand, a bool mask for an index,
    simple values for required attributes (defaults are left to the op)."""
    args = []
    for p in op.params:
        if p.kw_only:
            break
        if p.type.startswith("Index"):
            args.append(as_tensor([True, False]))
        elif p.is_tensor:
            args.append(z)
        elif p.default is not ember.dispatch.schema.REQUIRED:
            break
        else:
            args.append(_ANY_NUMBER[p.type.rstrip("?")])
    return args


def _raises(call) -> bool:
    try:
        call()
    except (RuntimeError, TypeError, ValueError, NotImplementedError):
        return True
    return False


@pytest.mark.parametrize("name", ELEMENTWISE_OPS)
def test_complex_acceptance_is_pytorchs(name):
    """An op computes on complex tensors exactly where PyTorch's does (called on a complex tensor, it raises
    where PyTorch's raises)."""
    op = OPS[name]
    try:
        function = torch_function(name)
    except LookupError:
        pytest.skip(f"{name} has no PyTorch function to compare with")
    z = [0.5 + 0.3j, -0.25 + 0.75j]
    refused_by_torch = _raises(lambda: function(*_arguments(op, torch.tensor(z), torch.tensor))) if name not in (
        "gelu_backward",) else True
    refused_by_ember = _raises(lambda: getattr(F, name)(*_arguments(op, ember.tensor(z), ember.tensor)))
    assert refused_by_ember == refused_by_torch
    assert (ember.complex64 in op.accepted_dtypes) == (not refused_by_torch) or name in ("complex", "polar")


# -- values ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtypes", DTYPES, ids=["complex64", "complex128"])
def test_unary_values_match_pytorch(name, dtypes):
    dtype, torch_dtype = dtypes
    values = [v for v in SPECIAL if v not in UNSETTLED.get(name, ())]
    got = getattr(F, name)(ember.tensor(values, dtype=dtype))
    assert_same(got, torch_function(name)(torch.tensor(values, dtype=torch_dtype)), dtype)


def test_log1p_is_accurate_near_zero():
    """NumPy's complex log1p loses 7 digits at 1e-10 (it computes log(1 + z)); PyTorch's does not."""
    z = [1e-10 + 1e-10j, -1e-8 + 3e-9j, 1e-300 + 1e-300j, -0.0198 + 0.198j, 0.25 - 0.4j]  # (|1 + z| near 1)
    got = F.log1p(ember.tensor(z, dtype=ember.complex128))
    assert_same(got, torch.log1p(torch.tensor(z, dtype=torch.complex128)), ember.complex128)


_BINARY = {"add": {}, "add_alpha": {"alpha": 2 - 1j}, "sub": {}, "sub_alpha": {"alpha": 0.5j}, "mul": {}, "div": {},
           "pow": {}, "eq": {}, "ne": {}, "logical_and": {}, "logical_or": {}, "logical_xor": {}, "rsub": {},
           "float_power": {}, "ldexp": {}, "xlogy": None, "isclose": {}}


def _unsettled_operand(name: str, value: complex) -> bool:
    """Operands left out where PyTorch's result is an artifact of how it computes: add and sub multiply other by
    alpha = 1 + 0j even when alpha is 1 (0 + (inf + 0j) is inf + NaN j there); complex pow is exp(y log x)
    (0 ** 0 is NaN for tensors but 1 for a number exponent). The rest of their values are compared."""
    if name in ("add", "sub", "rsub"):
        return not math.isfinite(abs(value))
    if name in ("pow", "float_power"):  # (and powers beyond float32's range: the phase of an infinity, NaN, or
        # inf + inf j in PyTorch's float32 exp(y log x); see test_complex64_pow_does_not_overflow_on_the_way)
        return not 1e-20 < abs(value) < 1e20
    if name in ("mul", "div"):  # products overflowing into inf - inf: the NaN depends on the order of operations
        return abs(value) > 1e20
    return False


@pytest.mark.parametrize("case", [c for c, kw in _BINARY.items() if kw is not None])
@pytest.mark.parametrize("dtypes", DTYPES, ids=["complex64", "complex128"])
def test_binary_values_match_pytorch(case, dtypes):
    dtype, torch_dtype = dtypes
    name, kwargs = case.split("_alpha")[0], _BINARY[case]
    values = [v for v in SPECIAL if not _unsettled_operand(name, v)]
    grid_a = [a for a in values for _ in values]
    grid_b = [b for _ in values for b in values]
    got = getattr(F, name)(ember.tensor(grid_a, dtype=dtype), ember.tensor(grid_b, dtype=dtype), **kwargs)
    want = torch_function(name)(torch.tensor(grid_a, dtype=torch_dtype), torch.tensor(grid_b, dtype=torch_dtype),
                                **kwargs)
    assert_same(got, want, dtype)


def test_complex64_pow_does_not_overflow_on_the_way():
    """NumPy's complex64 power gives NaN for (1e30 + 1e30j) ** (-0.5 + 0.3j), whose value is a float32."""
    base, exponent = [1e30 + 1e30j, 3e38 + 1j, 1e-30 - 1e-30j], [-0.5 + 0.3j, 0.5, 0.25j]
    got = F.pow(ember.tensor(base), ember.tensor(exponent))
    want = torch.pow(torch.tensor(base, dtype=torch.complex128), torch.tensor(exponent, dtype=torch.complex128))
    assert_same(got, want.to(torch.complex64), ember.complex64)


@pytest.mark.parametrize("number", [2j, 1.5 - 0.5j, 3, 0.5])
@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow", "eq", "rsub"])
def test_python_numbers_with_complex_tensors(name, number):
    """A Python number on either side of a complex tensor, and a complex number with a float tensor (promoted as
    PyTorch promotes: float32 with 1j is complex64)."""
    z = [1 + 2j, -0.5 + 0.25j, 0j]
    got = getattr(F, name)(ember.tensor(z), number)
    assert_same(got, torch_function(name)(torch.tensor(z), number), ember.complex64)
    if name in ("add", "sub", "mul", "div", "pow"):  # PyTorch's ops with a number first
        got = getattr(F, name)(number, ember.tensor(z))
        assert_same(got, torch_function(name)(number, torch.tensor(z)), ember.complex64)
    if isinstance(number, complex):
        x = [1.0, -2.0, 0.5]
        assert_same(getattr(F, name)(ember.tensor(x), number), torch_function(name)(torch.tensor(x), number),
                    ember.complex64)


@pytest.mark.parametrize("dtypes", DTYPES, ids=["complex64", "complex128"])
def test_lerp_where_and_mixed_operands(dtypes):
    dtype, torch_dtype = dtypes
    a, b = [1 + 2j, -0.5 + 0.3j, 4 - 1j], [0.5 - 1j, 2 + 2j, -3j]
    ea, eb, ta, tb = (ember.tensor(a, dtype=dtype), ember.tensor(b, dtype=dtype), torch.tensor(a, dtype=torch_dtype),
                      torch.tensor(b, dtype=torch_dtype))
    for weight in (0.25, 0.75, 0.1 + 0.6j, -0.8 + 0.2j):
        assert_same(F.lerp(ea, eb, weight), torch.lerp(ta, tb, weight), dtype)
    mask = [True, False, True]
    assert_same(F.where(ember.tensor(mask), ea, eb), torch.where(torch.tensor(mask), ta, tb), dtype)
    real = [1.0, -2.0, 0.5]
    assert_same(F.add(ember.tensor(real), ea), torch.add(torch.tensor(real), ta), dtype)
    assert_same(F.mul(ea, ember.tensor(real)), torch.mul(ta, torch.tensor(real)), dtype)


@pytest.mark.parametrize("dtypes", DTYPES, ids=["complex64", "complex128"])
def test_logaddexp_picks_the_larger_real_part(dtypes):
    dtype, torch_dtype = dtypes
    a = [1 + 2j, -0.5 + 0.3j, complex(-INF, 1), complex(INF, 0), 3 - 1j, -40 + 1j]
    b = [0.5 - 1j, 2 + 2j, complex(-INF, 2), complex(INF, 1), 3 + 1j, 2 - 3j]
    got = F.logaddexp(ember.tensor(a, dtype=dtype), ember.tensor(b, dtype=dtype))
    assert_same(got, torch.logaddexp(torch.tensor(a, dtype=torch_dtype), torch.tensor(b, dtype=torch_dtype)), dtype,
                atol=1e-6)


_COMPOSITES = {"asin": 1, "acos": 1, "atan": 1, "sinh": 1, "cosh": 1, "asinh": 1, "acosh": 1, "atanh": 1, "log10": 1,
               "log2": 1, "exp2": 1, "sinc": 1, "sigmoid": 1, "rsqrt": 1, "reciprocal": 1, "square": 1, "isinf": 1,
               "isfinite": 1, "isreal": 1, "nan_to_num": 1, "angle": 1, "sgn": 1, "conj_physical": 1, "logaddexp": 2,
               "lerp": 3, "isclose": 2}


@pytest.mark.parametrize("name", sorted(_COMPOSITES))
def test_composites_compute_complex_numbers(name):
    """What a backend without a kernel of its own runs: the composite definition, in Ember ops."""
    z = [0.5 + 0.3j, -0.7 - 0.2j, 1.5 - 2j, -3 + 0.5j, 0.1j, complex(NAN, 1), complex(INF, -INF)]
    operands = [z[i:] + z[:i] for i in range(_COMPOSITES[name])]
    with ember.dispatch.use_composite(name):
        got = getattr(F, name)(*[ember.tensor(v, dtype=ember.complex128) for v in operands])
    finite = slice(None) if name in ("isinf", "isfinite", "isreal", "nan_to_num", "angle", "conj_physical") else \
        slice(0, 5)
    want = torch_function(name)(*[torch.tensor(v, dtype=torch.complex128) for v in operands])
    assert_same(got[finite], want[finite], ember.complex128)


@pytest.mark.parametrize("name", ["complex", "polar"])
def test_complex_and_polar_composites(name):
    first, second = [[1.0, INF, -0.0, 2.5]], [[0.5], [-INF]]
    with ember.dispatch.use_composite(name):
        got = getattr(F, name)(ember.tensor(first, dtype=ember.float64), ember.tensor(second, dtype=ember.float64))
    want = getattr(torch, name)(torch.tensor(first, dtype=torch.float64), torch.tensor(second, dtype=torch.float64))
    assert_same(got, want, ember.complex128)


# -- the ops of complex numbers on real tensors, complex and polar ----------------------------------------------------

@pytest.mark.parametrize("name", ["angle", "sgn", "conj_physical", "abs", "isreal"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_complex_ops_on_real_tensors(name, dtype):
    """angle of a real number is pi where negative (0 for -0.0, NaN for NaN); integers' angle is float32."""
    values = [-1.5, 2.0, -0.0, 0.0, INF, -INF] if dtype != "int64" else [-3, 0, 5]
    if name != "sgn":  # (Ember's sign and sgn keep NaN, as NumPy's sign; PyTorch's give 0)
        values += [NAN] if dtype != "int64" else []
    got = getattr(F, name)(ember.tensor(values, dtype=getattr(ember, dtype)))
    want = torch_function(name)(torch.tensor(values, dtype=getattr(torch, dtype)))
    assert_same(got, want, getattr(ember, dtype))


@pytest.mark.parametrize("name", ["complex", "polar"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_complex_and_polar_match_pytorch(name, dtype):
    """Infinite parts stay exact (real + imag * 1j would make NaN of them); the parts broadcast."""
    first = [[1.0, INF, -0.0, 2.5], [NAN, 0.0, -1.0, 3.0]]
    second = [0.5, -INF, 2.0, -0.0]
    got = getattr(F, name)(ember.tensor(first, dtype=getattr(ember, dtype)),
                           ember.tensor(second, dtype=getattr(ember, dtype)))
    want = getattr(torch, name)(torch.tensor(first, dtype=getattr(torch, dtype)),
                                torch.tensor(second, dtype=getattr(torch, dtype)))
    assert_same(got, want, getattr(ember, dtype))


@pytest.mark.parametrize("name", ["complex", "polar"])
def test_complex_and_polar_refuse_what_pytorch_refuses(name):
    """PyTorch's words: two tensors of one floating dtype."""
    with pytest.raises(TypeError, match="Expected both inputs to be Half, Float or Double tensors but got Long"):
        getattr(F, name)(ember.tensor([1, 2]), ember.tensor([3, 4]))
    with pytest.raises(TypeError, match="Expected object of scalar type Float but got scalar type Double"):
        getattr(F, name)(ember.tensor([1.0]), ember.tensor([2.0], dtype=ember.float64))
    with pytest.raises(TypeError, match="Expected both inputs to be Half, Float or Double tensors"):
        getattr(F, name)(ember.tensor([1j]), ember.tensor([2j]))


def test_abs_of_complex_is_real_and_does_not_overflow():
    z = [3e38 + 3e38j, -3 + 4j, complex(NAN, INF)]
    assert F.abs(ember.tensor(z)).dtype is ember.float32
    assert F.abs(ember.tensor(z, dtype=ember.complex128)).dtype is ember.float64
    assert_same(F.abs(ember.tensor(z)), torch.abs(torch.tensor(z)), ember.float32)
    assert F.abs(ember.tensor([-3], dtype=ember.int16)).dtype is ember.int16


def test_public_names_reach_the_ops():
    """ember.sgn is the sgn op (PyTorch's torch.sgn), not an alias of sign, which refuses complex numbers."""
    z = ember.tensor([3 + 4j, 0j])
    assert_same(ember.sgn(z), torch.sgn(torch.tensor([3 + 4j, 0j])), ember.complex64)
    for name in ("angle", "conj_physical", "complex", "polar"):
        assert callable(getattr(ember, name))
    assert_same(z.sgn(), torch.sgn(torch.tensor([3 + 4j, 0j])), ember.complex64)


def test_conj_is_free_on_real_values():
    """The helper derivatives use: real tensors and numbers come back as they are (no op call)."""
    x = ember.tensor([1.0, 2.0])
    assert conj(x) is x and conj(2.5) == 2.5 and conj(None) is None
    assert conj(1 + 2j) == 1 - 2j
    assert_same(conj(ember.tensor([1 + 2j])), torch.tensor([1 - 2j]), ember.complex64)


# -- PyTorch's refusals --------------------------------------------------------------------------------------------

_REFUSALS = {
    "maximum": "maximum not implemented for complex tensors.",
    "minimum": "minimum not implemented for complex tensors.",
    "fmax": "fmax not implemented for complex tensors.", "fmin": "fmin not implemented for complex tensors.",
    "clamp_min": "clamp is not supported for complex types", "relu": "clamp is not supported for complex types",
    "hardtanh": "clamp is not supported for complex types", "floor": "floor is not supported for complex inputs",
    "ceil": "ceil is not supported for complex inputs", "trunc": "trunc is not supported for complex inputs",
    "sign": "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use torch.sgn instead.",
    "deg2rad": "deg2rad is not supported for complex tensors.", "signbit": "signbit is not implemented for complex",
    "heaviside": "heaviside is not yet implemented for complex tensors.",
    "isposinf": "isposinf does not support complex inputs.", "frexp": "torch.frexp() only supports floating-point",
    "lt": "not implemented for 'ComplexFloat'", "erf": "not implemented for 'ComplexFloat'",
}


@pytest.mark.parametrize("name", sorted(_REFUSALS))
def test_refusals_use_pytorchs_words(name):
    op = OPS[name]

    def arguments(as_tensor):
        """clamp_min with a number bound: PyTorch's Scalar overload (its Tensor one says "maximum_cpu")."""
        args = _arguments(op, as_tensor([0.5 + 0.3j, -1j]), as_tensor)
        return args[:1] + [0.5] if name == "clamp_min" else args
    with pytest.raises(NotImplementedError) as caught:
        getattr(F, name)(*arguments(ember.tensor))
    assert _REFUSALS[name] in str(caught.value)
    with pytest.raises(Exception, match=_REFUSALS[name].split(" ")[0]):
        torch_function(name)(*arguments(torch.tensor))


def test_clamp_and_rounding_division_refuse_complex():
    z = ember.tensor([0.5 + 0.3j])
    with pytest.raises(NotImplementedError, match="clamp is not supported for complex types"):
        F.clamp(z, 0.0, 1.0)
    with pytest.raises(NotImplementedError, match="rounding_mode='floor' not implemented for 'ComplexFloat'"):
        F.div(z, z, rounding_mode="floor")
