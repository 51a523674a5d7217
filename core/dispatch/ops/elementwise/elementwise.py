"""Elementwise math, comparisons and logic. Broadcasting meta; the references are NumPy ufuncs."""
from __future__ import annotations

import cmath
import math

import numpy as np

from ...schema import rules
from ...schema.dtypes import SCALAR_TYPE_NAMES, bool_, get_default_dtype
from ...schema.errors import ArgumentError, DtypeError, UnsupportedDtypeError, describe_all
from ...formula_composite import formula_composite
from ...schema.meta import elementwise as broadcast_meta, require, shape
from ...schema import FLOAT32_ON_CUDA, Sample, defop
from ..namespace import F
from ..onnx_support import as_bool, as_ordered, constant_like, python_mod_fix, trunc, where
from .complex_support import conj, or_complex, refusing_complex, scaled
from .opmath import in_opmath

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _unary(name, reference, promotion=rules.same, dtypes="all", inplace=True, **fields):
    return defop(f"{name}(Tensor input)", "elementwise", promotion=promotion, dtypes=dtypes,
                 meta=broadcast_meta(name), reference=reference, inplace=inplace, **fields)


#: The binary ops PyTorch lets take two numbers (``torch.add(1, 2)``), and no other
_NUMBERS_ALONE = ("add", "sub", "mul", "div", "floor_divide")


def _binary(name, reference, promotion=rules.same, dtypes="all", extra="", **fields):
    return defop(f"{name}(Tensor input, Tensor other{extra})", "elementwise", promotion=promotion,
                 dtypes=dtypes, meta=broadcast_meta(name), reference=reference,
                 numbers_alone=name in _NUMBERS_ALONE, **fields)


# -- conformance samples for attributes (the suite adds shape, layout and special-value samples) ---

def _round_samples(make, dtype):
    if dtype.is_floating_point:
        yield Sample((make((2, 3)),), {"decimals": 2}, note="decimals=2")
        yield Sample((make((2, 3), low=-500, high=500),), {"decimals": -2}, note="decimals=-2")


def _alpha_samples(make, dtype):
    if dtype.kind != "bool":
        alpha = 0.5 if dtype.is_floating_point else -3
        yield Sample((make((2, 3)), make((2, 3))), {"alpha": alpha}, note=f"alpha={alpha}")
        yield Sample((make((4, 1), noncontiguous=True), make((3,))), {"alpha": alpha}, note="broadcast")
        yield Sample((make((2, 3)), make(()).item()), {"alpha": alpha}, note="Python number other")


def _div_samples(make, dtype):
    for mode in ("trunc", "floor"):
        kwargs = {"rounding_mode": mode}
        yield Sample((make((2, 3)), make((2, 3), nonzero=True)), kwargs, note=f"rounding_mode={mode}")
        yield Sample((make((4, 1), noncontiguous=True), make((3,), nonzero=True)), kwargs, note="broadcast")
        yield Sample((make((2, 3)), make((), nonzero=True).item()), kwargs, note="Python number divisor")
        yield from _infinite_division_samples(make, dtype, kwargs)


def _infinite_division_samples(make, dtype, kwargs=None):
    """Floats: every special value (infinities, NaN, signed zeros) divided by every other, and infinite Python
    numbers. Division rounded down is where ``floor(a / b)`` goes wrong: ``inf // 2`` is NaN, ``-5 // inf``
    is -1 and ``-5 % inf`` is inf in NumPy and PyTorch."""
    if not dtype.is_floating_point:
        return
    kwargs = kwargs or {}
    yield Sample((make.specials((12, 1)), make.specials((1, 12))), kwargs, note="special values divided by each other")
    for divisor in (math.inf, -math.inf):
        yield Sample((make((2, 3)), divisor), kwargs, note=f"Python number divisor {divisor}")
    yield Sample((-math.inf, make((2, 3), nonzero=True)), kwargs, note="Python number dividend -inf")


def _as_float(x):
    """Integer and bool inputs of a to_float composite, in the default float dtype, before any arithmetic."""
    return x if x.dtype.is_inexact else F.to_dtype(x, get_default_dtype())


# -- unary primitives -----------------------------------------------------------------------
# Derivatives take the names of what they need: ``grad``, op parameters, ``result``.
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _zero_grad(grad):
    """Piecewise-constant ops (floor, sign, ...): the gradient is zero almost everywhere."""
    return F.zeros_like(grad)


def _abs_derivative(grad, input):
    """grad * sign(x); complex z: the real grad times sgn(z) = z / |z|, PyTorch's."""
    return F.mul(grad, F.sgn(input) if input._dtype.kind == "complex" else F.sign(input))


_SIGN_OF_COMPLEX = ("Unlike NumPy, torch.sign is not intended to support complex numbers. Please use torch.sgn "
                    "instead.")


# -- ONNX lowerings of the unary ops (see ember.onnx.builder) ---------------------------------

def _expm1_onnx(g, input):
    """exp(x) - 1 = tanh(x/2) (exp(x) + 1): no cancellation near 0, where exp(x) - 1 loses every digit."""
    half = g.op("Tanh", g.op("Mul", input, g.const(0.5, g.compute)))
    return g.op("Mul", half, g.op("Add", g.op("Exp", input), g.const(1, g.compute)))


def _log1p_onnx(g, input):
    """log(u) * x / (u - 1) with u = 1 + x (Goldberg): exact where 1 + x rounds, which log(1 + x) is not."""
    one, dtype = g.const(1, g.compute), g.compute
    u = g.op("Add", input, one)
    scaled = g.op("Div", g.op("Mul", g.op("Log", u), input), g.op("Sub", u, one))
    at_infinity = g.op("Equal", u, g.const(math.inf, dtype))
    return g.op("Where", g.op("Equal", u, one), input, g.op("Where", at_infinity, u, scaled))


def _integer_identity(op_type):
    """floor and ceil: integers pass through (ONNX Floor and Ceil take floats only)."""
    def lower(g, input):
        return g.op(op_type, input) if g.compute.is_floating_point else g.op("Identity", input)
    return lower


def _round_onnx(g, input, decimals):
    """Round (half to even) of input * 10^decimals, scaled back, as PyTorch computes it."""
    if not g.compute.is_floating_point:
        if decimals >= 0:
            return g.op("Identity", input)
        g.fail(f"decimals={decimals} on integer tensors has no exact ONNX form")
    if decimals == 0:
        return g.op("Round", input)
    scale = g.const(10.0 ** abs(decimals), g.compute)
    if decimals > 0:
        return g.op("Div", g.op("Round", g.op("Mul", input, scale)), scale)
    return g.op("Mul", g.op("Round", g.op("Div", input, scale)), scale)


def _logical_not_onnx(g, input):
    return g.op("Not", as_bool(g, input, g.compute))


def _isnan_onnx(g, input):
    return g.op("IsNaN", input) if g.compute.is_floating_point else constant_like(g, input, False)


def _isinf_onnx(g, input):
    return g.op("IsInf", input) if g.compute.is_floating_point else constant_like(g, input, False)


def _isfinite_onnx(g, input):
    if not g.compute.is_floating_point:
        return constant_like(g, input, True)
    return g.op("Not", g.op("Or", g.op("IsInf", input), g.op("IsNaN", input)))


def _rsqrt_onnx(g, input):
    return g.op("Reciprocal", g.op("Sqrt", input))


_unary("neg", np.negative, dtypes="numeric+complex", doc="-input", scalar="-input", onnx="Neg",
       derivative=lambda grad: F.neg(grad))
_unary("abs", np.abs, promotion=rules.same_real, dtypes="numeric+complex", scalar="abs(input)", onnx="Abs",
       derivative=_abs_derivative, doc="abs'(0) = 0, as in PyTorch; |z| of complex z is real")
_unary("sign", np.sign, dtypes="numeric", promotion=refusing_complex(rules.same, _SIGN_OF_COMPLEX),
       doc="-1, 0 or 1 by the sign of each element", derivative=_zero_grad, onnx="Sign",
       scalar="where(input > 0, 1, where(input < 0, -1, input * 0))")  # input * 0: NaN stays NaN


def _math(name, reference, **fields):
    """A function of the reals and of the complex numbers: integers compute in the default float dtype.
    Derivatives are grad times the conjugate slope (PyTorch's convention; conj is free on real tensors)."""
    return _unary(name, reference, promotion=rules.to_float, dtypes="all+complex", **fields)


_math("exp", np.exp, scalar="exp(input)", onnx="Exp", autocast=FLOAT32_ON_CUDA,
      derivative=lambda grad, result: F.mul(grad, conj(result)))
_math("expm1", np.expm1, scalar="expm1(input)", autocast=FLOAT32_ON_CUDA, onnx=_expm1_onnx,
      derivative=lambda grad, result: F.mul(grad, conj(F.add(result, 1))))
_POSITIVE = {"input": {"low": 0.1, "high": 5.0}}  # grad_domain of functions real only for positive inputs
_math("log", np.log, scalar="log(input)", autocast=FLOAT32_ON_CUDA, onnx="Log", grad_domain=_POSITIVE,
      derivative=lambda grad, input: F.div(grad, conj(input)))
_math("log1p", np.log1p, scalar="log1p(input)", autocast=FLOAT32_ON_CUDA, onnx=_log1p_onnx,
      grad_domain={"input": {"low": -0.9, "high": 5.0}},
      derivative=lambda grad, input: F.div(grad, conj(F.add(input, 1))))
_math("sqrt", np.sqrt, scalar="sqrt(input)", onnx="Sqrt", grad_domain=_POSITIVE,
      derivative=lambda grad, result: F.div(grad, conj(F.mul(result, 2))))
_math("sin", np.sin, scalar="sin(input)", onnx="Sin",
      derivative=lambda grad, input: F.mul(grad, conj(F.cos(input))))
_math("cos", np.cos, scalar="cos(input)", onnx="Cos",
      derivative=lambda grad, input: F.neg(F.mul(grad, conj(F.sin(input)))))
_math("tan", np.tan, scalar="tan(input)", onnx="Tan", autocast=FLOAT32_ON_CUDA,
      derivative=lambda grad, result: F.mul(grad, conj(F.add(F.mul(result, result), 1))))
_math("tanh", np.tanh, scalar="tanh(input)", onnx="Tanh",
      derivative=lambda grad, result: F.mul(grad, conj(F.sub(1, F.mul(result, result)))))
_unary("erf", _erf, promotion=rules.to_float, scalar="erf(input)", onnx="Erf",
       derivative=lambda grad, input: F.mul(grad, F.mul(F.exp(F.neg(F.mul(input, input))), _TWO_OVER_SQRT_PI)))
_unary("floor", np.floor, dtypes="numeric", scalar="floor(input)", doc="integers pass through unchanged",
       promotion=refusing_complex(rules.same, "floor is not supported for complex inputs"), derivative=_zero_grad,
       onnx=_integer_identity("Floor"))
_unary("ceil", np.ceil, dtypes="numeric", scalar="ceil(input)", doc="integers pass through unchanged",
       promotion=refusing_complex(rules.same, "ceil is not supported for complex inputs"), derivative=_zero_grad,
       onnx=_integer_identity("Ceil"))
defop("round(Tensor input, *, int decimals=0)", "elementwise", promotion=rules.same, dtypes="numeric",
      meta=broadcast_meta("round"), reference=lambda x, decimals=0: np.round(x, decimals), inplace=True,
      samples=_round_samples, onnx=_round_onnx,
      derivative=_zero_grad, doc="rounds half to even, like PyTorch")
_unary("logical_not", np.logical_not, dtypes="all+complex", promotion=rules.to_bool, scalar="input == 0",
       differentiable=False, onnx=_logical_not_onnx)
_unary("isnan", np.isnan, dtypes="all+complex", promotion=rules.to_bool, scalar="input != input",
       differentiable=False, inplace=False, onnx=_isnan_onnx)

# -- unary composites -----------------------------------------------------------------------
_LN2 = math.log(2.0)
_math("log2", np.log2, kind="composite", scalar=f"log(input) / {_LN2!r}",
      composite=or_complex(lambda z: scaled(F.log(z), 1 / _LN2))(formula_composite("log2")), grad_domain=_POSITIVE,
      autocast=FLOAT32_ON_CUDA)
_math("reciprocal", np.reciprocal, kind="composite", scalar="1 / input", autocast=FLOAT32_ON_CUDA,
      composite=formula_composite("reciprocal"), onnx="Reciprocal",
      derivative=lambda grad, result: F.neg(F.mul(grad, conj(F.mul(result, result)))))
_math("rsqrt", lambda x: 1 / np.sqrt(x), kind="composite", scalar="rsqrt(input)", autocast=FLOAT32_ON_CUDA,
      composite=lambda x: F.reciprocal(F.sqrt(x)), grad_domain=_POSITIVE, onnx=_rsqrt_onnx)
_math("sigmoid", lambda x: 1 / (1 + np.exp(-x)), kind="composite", scalar="sigmoid(input)",
      composite=lambda x: F.reciprocal(F.add(F.exp(F.neg(_as_float(x))), 1)), doc="1 / (1 + exp(-input))",
      onnx="Sigmoid",
      derivative=lambda grad, result: F.mul(grad, conj(F.mul(result, F.sub(1, result)))))
_unary("isinf", np.isinf, promotion=rules.to_bool, dtypes="numeric+complex", kind="composite", inplace=False,
       differentiable=False, composite=lambda x: F.eq(F.abs(x), math.inf), onnx=_isinf_onnx,
       scalar="input == input and input - input != 0")  # x - x is 0 when finite, NaN when infinite
_unary("isfinite", np.isfinite, promotion=rules.to_bool, dtypes="numeric+complex", kind="composite", inplace=False,
       differentiable=False, scalar="input - input == 0",  # x - x is 0 when finite, NaN otherwise
       composite=formula_composite("isfinite"),
       onnx=_isfinite_onnx)

# -- binary primitives ----------------------------------------------------------------------


def _scaled(a, b, alpha):
    """alpha * b in the dtype of ``a``; integers wrap (alpha=-1 on uint8 is 255), as PyTorch computes it."""
    if alpha == 1:
        return b
    if a.dtype.kind in "iu":
        dt = np.result_type(a, b)
        return np.array(b).astype(dt) * np.array(alpha).astype(dt)
    return alpha * b


def _scaled_onnx(g, other, alpha):
    """alpha * other in the compute dtype (integers wrap, as in PyTorch)."""
    return other if alpha == 1 else g.op("Mul", other, g.const(alpha, g.compute))


def _add_onnx(g, input, other, alpha):
    if g.compute is bool_:  # bool + bool is logical or (alpha is then a bool: True keeps other)
        return g.op("Or", input, other) if alpha else g.op("Identity", input)
    return g.op("Add", input, _scaled_onnx(g, other, alpha))


def _sub_onnx(g, input, other, alpha):
    return g.op("Sub", input, _scaled_onnx(g, other, alpha))


def _mul_onnx(g, input, other):
    return g.op("And" if g.compute is bool_ else "Mul", input, other)


_binary("add", lambda a, b, alpha=1: a + _scaled(a, b, alpha), extra=", *, Scalar alpha=1", inplace=True,
        dtypes="all+complex",
        samples=_alpha_samples, onnx=_add_onnx,
        scalar=lambda alpha: "input + other" if alpha == 1 else "input + alpha * other",
        doc="input + alpha * other",
        derivative=lambda grad, alpha: (grad, grad if alpha == 1 else F.mul(grad, conj(alpha))))


def _is_bool(value) -> bool:
    """A bool tensor or a Python bool (which PyTorch wraps as a bool tensor)."""
    return value.__class__ is bool or getattr(value, "_dtype", None) is bool_


def _sub_promotion(rt, op, args):
    """PyTorch's rule (sub and rsub): no bool operand at all, with its hint at what was meant."""
    operands = [args["input"], args["other"]]
    if _is_bool(operands[0]) and _is_bool(operands[1]):
        raise DtypeError(f"{op.name}: Subtraction, the `-` operator, with two bool tensors is not supported. Use "
                         f"the `^` or `logical_xor()` operator instead. ({describe_all(operands)})")
    if _is_bool(operands[0]) or _is_bool(operands[1]):
        raise DtypeError(f"{op.name}: Subtraction, the `-` operator, with a bool tensor is not supported. If you "
                         "are trying to invert a mask, use the `~` or `logical_not()` operator instead. "
                         f"({describe_all(operands)})")
    return rules.same(rt, op, args)


_binary("sub", lambda a, b, alpha=1: a - _scaled(a, b, alpha), extra=", *, Scalar alpha=1", dtypes="numeric+complex",
        promotion=_sub_promotion, inplace=True, samples=_alpha_samples, doc="input - alpha * other", onnx=_sub_onnx,
        scalar=lambda alpha: "input - other" if alpha == 1 else "input - alpha * other",
        derivative=lambda grad, alpha: (grad, F.neg(grad) if alpha == 1 else F.mul(grad, -conj(alpha))))


def _rsub_reference(a, b, alpha=1):
    a = np.asarray(a)
    return b - _scaled(a, a, alpha)


def _rsub_normalize(op, args):
    """input must be a tensor (other may be a number), as in PyTorch."""
    if not hasattr(args["input"], "_data"):
        raise TypeError(f"{op.name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(args['input']).__name__}")


_binary("rsub", _rsub_reference, extra=", *, Scalar alpha=1", dtypes="numeric+complex", promotion=_sub_promotion,
        kind="composite", method=False, samples=_alpha_samples, normalize=_rsub_normalize,
        composite=lambda x, other, alpha=1: F.sub(other, x, alpha=alpha),
        scalar=lambda alpha: "other - input" if alpha == 1 else "other - alpha * input",
        doc="other - alpha * input: sub with the operands swapped (torch.rsub; no Tensor method, as in PyTorch)")
_binary("mul", np.multiply, inplace=True, scalar="input * other", onnx=_mul_onnx, dtypes="all+complex",
        derivative={"input": lambda grad, other: F.mul(grad, conj(other)),
                    "other": lambda grad, input: F.mul(grad, conj(input))})


def _div_promotion(rt, op, args):
    mode = args["rounding_mode"]
    if mode is None:
        return rules.to_float(rt, op, args)
    if rt.kind == "complex":  # PyTorch: "div_floor_cpu" not implemented for 'ComplexFloat'
        raise UnsupportedDtypeError(f"div: rounding_mode={mode!r} not implemented for '{SCALAR_TYPE_NAMES[rt]}' "
                                    f"({describe_all([args['input'], args['other']])})")
    if rt is bool_:
        raise DtypeError(f"div: rounding_mode={mode!r} is not supported for bool tensors, as in PyTorch")
    return rules.same(rt, op, args)


def _div_reference(a, b, rounding_mode=None):
    if rounding_mode is None:
        return np.true_divide(a, b)
    if rounding_mode == "floor":
        return np.floor_divide(a, b)
    return np.trunc(np.true_divide(a, b)).astype(np.result_type(a, b))


def _check_rounding_mode(op, args):
    mode = args["rounding_mode"]
    if mode not in (None, "trunc", "floor"):
        raise ArgumentError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {mode!r}")


def _div_input_derivative(grad, other, rounding_mode):
    return F.zeros_like(grad) if rounding_mode is not None else F.div(grad, conj(other))


def _div_other_derivative(grad, other, rounding_mode, result):
    """d(a/b)/db = -(a/b)/b, from the saved result, so the dividend need not be kept."""
    if rounding_mode is not None:
        return F.zeros_like(grad)
    return F.neg(F.div(F.mul(grad, conj(result)), conj(other)))


def _pow_derivative(grad, input, other, result):
    """d/dx x^y = y x^(y-1) (0 where y == 0); d/dy x^y = x^y log x, taken as 0 where x == 0 and y is a real
    y >= 0 (PyTorch's choices); complex slopes conjugated."""
    if not hasattr(other, "_data"):
        if other == 0:
            return F.zeros_like(grad), None
        return F.mul(grad, conj(F.mul(F.pow(input, other - 1), other))), None
    slope = F.mul(other, F.pow(input, F.sub(other, 1)))
    grad_input = F.mul(grad, conj(F.where(F.eq(other, 0), F.zeros_like(slope), slope)))
    complex_result = result._dtype.kind == "complex"  # a real base's log is then taken as complex, as PyTorch
    if not hasattr(input, "_data"):  # a Python number base (2 ** t): its log is a number too
        log_input = _log_of_number(complex(input) if complex_result else input)
        log_base = F.where(_nonnegative_real(other), 0.0, log_input) if input == 0 else log_input
        return grad_input, F.mul(grad, conj(F.mul(result, log_base)))
    base = F.to_dtype(input, result.dtype) if complex_result and input._dtype.kind != "complex" else input
    log_base = F.where(F.logical_and(F.eq(input, 0), _nonnegative_real(other)), F.zeros_like(result), F.log(base))
    return grad_input, F.mul(grad, conj(F.mul(result, log_base)))


def _log_of_number(x):
    """log of a Python number, -inf at 0 and NaN for a negative real (not a complex), as the tensor log."""
    if x == 0:
        return -math.inf
    if x.__class__ is complex:
        return cmath.log(x)
    return math.log(x) if x > 0 else math.nan


def _nonnegative_real(y):
    """y >= 0 for a real tensor; a complex one must also have no imaginary part: y == |y|."""
    return F.eq(y, F.abs(y)) if y._dtype.kind == "complex" else F.ge(y, 0)


def _extremum_derivative(pick):
    """maximum/minimum: the gradient goes to the chosen operand; ties split it evenly, as in PyTorch."""
    def derivative(grad, input, other):
        chosen = F.to_dtype(pick(input, other), grad.dtype)
        tied = F.mul(F.to_dtype(F.eq(input, other), grad.dtype), 0.5)
        share = F.add(chosen, tied)
        return F.mul(grad, share), F.mul(grad, F.sub(1, share))
    return derivative


def _floor_divide_onnx(g, input, other):
    """Division rounded down. Integers: ONNX Div truncates, so step down where the remainder's sign differs
    from the divisor's. Floats: PyTorch's (and NumPy's) divmod, exact where floor(a / b) is not."""
    dtype = g.compute
    if not dtype.is_floating_point:
        quotient = g.op("Div", input, other)
        remainder = g.op("Sub", input, g.op("Mul", quotient, other))
        return g.op("Sub", quotient, g.cast(python_mod_fix(g, remainder, other), dtype))
    zero, one, half = (g.const(v, dtype) for v in (0, 1, 0.5))
    mod = g.op("Mod", input, other, fmod=1)
    div = g.op("Div", g.op("Sub", input, mod), other)
    div = g.op("Sub", div, g.cast(python_mod_fix(g, mod, other), dtype))
    floored = g.op("Floor", div)
    floored = g.op("Add", floored, g.cast(g.op("Greater", g.op("Sub", div, floored), half), dtype))
    floored = g.op("Where", g.op("Equal", div, zero), g.op("Mul", div, zero), floored)
    return g.op("Where", g.op("Equal", other, zero), g.op("Div", input, other), floored)


def _div_onnx(g, input, other, rounding_mode):
    if rounding_mode == "floor":
        return _floor_divide_onnx(g, input, other)
    quotient = g.op("Div", input, other)  # integers truncate, as rounding_mode="trunc" asks
    return trunc(g, quotient) if rounding_mode == "trunc" and g.compute.is_floating_point else quotient


def _remainder_onnx(g, input, other):
    """Python's modulo (the divisor's sign): ONNX Mod does it for integers; for floats it has only C's fmod,
    shifted by the divisor where the signs differ."""
    if not g.compute.is_floating_point:
        return g.op("Mod", input, other, fmod=0)
    mod = g.op("Mod", input, other, fmod=1)
    return g.op("Where", python_mod_fix(g, mod, other), g.op("Add", mod, other), mod)


def _constant_exponent(g, other):
    """The exponent of pow when it is a constant integer (x ** 2), else None."""
    array = g.constant_arrays.get(other)
    if array is None or array.ndim != 0 or array.dtype.kind not in "iu" or array < 0:
        return None
    return int(array)


def _pow_onnx(g, input, other):
    """Pow; integers to a constant power multiply by squaring, exactly (onnxruntime's integer Pow goes through
    double and rounds results beyond 2**53)."""
    exponent = None if g.compute.is_floating_point else _constant_exponent(g, other)
    if exponent is None:
        return g.op("Pow", input, other)
    result, square = None, input
    while True:
        if exponent & 1:
            result = square if result is None else g.op("Mul", result, square)
        exponent >>= 1
        if not exponent:
            break
        square = g.op("Mul", square, square)
    if result is None:  # x ** 0 is 1, NaN and 0 included
        return g.op("Add", g.op("Mul", input, g.const(0, g.compute)), g.const(1, g.compute))
    return result if result != input else g.op("Identity", input)


def _extremum_onnx(op_type, bool_op):
    """maximum/minimum: ONNX Max/Min propagate NaN as PyTorch does; bools take or/and (no bool kernel)."""
    def lower(g, input, other):
        return g.op(bool_op if g.compute is bool_ else op_type, input, other)
    return lower


def _comparison_onnx(op_type, negate=False):
    """eq, lt, ...: bools compare as int32 (onnxruntime has no bool Less/Greater)."""
    def lower(g, input, other):
        dtype = g.compute
        if op_type != "Equal":
            input, other = as_ordered(g, input, dtype), as_ordered(g, other, dtype)
        out = g.op(op_type, input, other)
        return g.op("Not", out) if negate else out
    return lower


def _logical_onnx(op_type):
    def lower(g, input, other):
        return g.op(op_type, as_bool(g, input, g.compute), as_bool(g, other, g.compute))
    return lower


_binary("div", _div_reference, promotion=_div_promotion, extra=", *, str? rounding_mode=None", dtypes="all+complex",
        normalize=_check_rounding_mode, inplace=True, samples=_div_samples, onnx=_div_onnx,
        scalar=lambda rounding_mode: "input / other" if rounding_mode is None else None,  # floor/trunc: op by op
        derivative={"input": _div_input_derivative, "other": _div_other_derivative},
        doc="true division; rounding_mode 'trunc' or 'floor' keeps integer dtypes")
_NONZERO_DIVISOR = {"other": {"nonzero": True}}  # sample hint: integer division by zero raises
_binary("floor_divide", np.floor_divide, dtypes="numeric", inplace=True, differentiable=False, onnx=_floor_divide_onnx,
        domain=_NONZERO_DIVISOR, samples=_infinite_division_samples)
_binary("remainder", np.remainder, dtypes="numeric", inplace=True, doc="Python's modulo: the sign of other",
        domain=_NONZERO_DIVISOR, onnx=_remainder_onnx, samples=_infinite_division_samples,
        derivative=lambda grad, input, other: (grad, F.neg(F.mul(grad, F.floor_divide(input, other)))))
_binary("pow", np.power, dtypes="numeric+complex", inplace=True, scalar="pow(input, other)", derivative=_pow_derivative,
        autocast=FLOAT32_ON_CUDA, torch_keywords={"exponent": "other"},
        onnx=_pow_onnx,
        domain={"other": {"low": 0, "high": 4}},  # integers to negative powers raise
        grad_domain=_POSITIVE)  # a negative base has no real non-integer power
_binary("maximum", np.maximum, promotion=refusing_complex(rules.same, "maximum not implemented for complex tensors."),
        doc="elementwise max; NaN propagates", scalar="max(input, other)",
        onnx=_extremum_onnx("Max", "Or"),
        derivative=_extremum_derivative(lambda a, b: F.gt(a, b)))
_binary("minimum", np.minimum, promotion=refusing_complex(rules.same, "minimum not implemented for complex tensors."),
        doc="elementwise min; NaN propagates", scalar="min(input, other)",
        onnx=_extremum_onnx("Min", "And"),
        derivative=_extremum_derivative(lambda a, b: F.lt(a, b)))


def _predicate(name: str, reference, formula: str, onnx, dtypes: str = "all+complex") -> None:
    """A comparison or logical connective: bool out, not differentiable. Complex numbers have no order."""
    _binary(name, reference, promotion=rules.to_bool, differentiable=False, inplace=True, scalar=formula, onnx=onnx,
            dtypes=dtypes)


_predicate("eq", np.equal, "input == other", _comparison_onnx("Equal"))
_predicate("ne", np.not_equal, "input != other", _comparison_onnx("Equal", True))
_predicate("lt", np.less, "input < other", _comparison_onnx("Less"), dtypes="all")
_predicate("le", np.less_equal, "input <= other", _comparison_onnx("LessOrEqual"), dtypes="all")
_predicate("gt", np.greater, "input > other", _comparison_onnx("Greater"), dtypes="all")
_predicate("ge", np.greater_equal, "input >= other", _comparison_onnx("GreaterOrEqual"), dtypes="all")
_predicate("logical_and", np.logical_and, "input != 0 and other != 0", _logical_onnx("And"))
_predicate("logical_or", np.logical_or, "input != 0 or other != 0", _logical_onnx("Or"))
_predicate("logical_xor", np.logical_xor, "(input != 0) != (other != 0)", _logical_onnx("Xor"))


# -- selection and interpolation --------------------------------------------------------------

def _where_meta(condition, input, other):
    require(getattr(condition, "_dtype", None) is not None and condition._dtype.name == "bool", "where",
            "condition must be a bool tensor", condition)
    return broadcast_meta("where")(condition, input, other)


def _where_derivative(grad, condition):
    zeros = F.zeros_like(grad)
    return None, F.where(condition, grad, zeros), F.where(condition, zeros, grad)


def _where_onnx(g, condition, input, other):
    return where(g, condition, input, other, g.compute)


defop("where(Index condition, Tensor input, Tensor other)", "elementwise", promotion=rules.same, onnx=_where_onnx,
      dtypes="all+complex",
      meta=_where_meta, reference=np.where, method=False, derivative=_where_derivative,
      domain={"condition": {"dtype": "bool"}}, scalar="where(condition, input, other)",
      doc="input where condition is true, else other")


def _clamp(x, min=None, max=None):
    if min is not None:
        x = F.maximum(x, min)
    if max is not None:
        x = F.minimum(x, max)
    return x


def _clamp_check(op, args):
    """PyTorch's overloads: bounds are both numbers (a 0-d tensor counts as one) or both tensors; not both None."""
    x, low, high = args["input"], args["min"], args["max"]
    if low is None and high is None:
        raise ArgumentError("clamp: at least one of 'min' or 'max' must not be None")
    tensors = [b for b in (low, high) if hasattr(b, "_data") and b._data.shape != ()]
    numbers = [b for b in (low, high) if b is not None and not hasattr(b, "_data")]
    if tensors and numbers:
        raise TypeError(f"clamp(): min and max must both be numbers or both be tensors, got min={describe_all([low])} "
                        f"and max={describe_all([high])} for input {describe_all([x])}")


def _clamp_reference(x, min=None, max=None):
    if min is not None:
        x = np.maximum(x, min)
    if max is not None:
        x = np.minimum(x, max)
    return x


def _clamp_derivative(grad, input, min, max):
    """The gradient passes where min <= input <= max (bounds included), as in PyTorch. Where min > max the
    result is max whatever the input, so max alone gets the gradient there."""
    zeros = F.zeros_like(grad)
    below = None if min is None else F.lt(input, min)
    above = None if max is None else F.gt(input, max)
    inside = grad
    for beyond in (below, above):
        if beyond is not None:
            inside = F.where(beyond, zeros, inside)
    tensor_min, tensor_max = hasattr(min, "_data"), hasattr(max, "_data")
    if below is not None and above is not None and (tensor_min or tensor_max):
        crossed = F.gt(min, max)
        below, above = F.logical_and(below, F.logical_not(crossed)), F.logical_or(above, crossed)
    return (inside, F.where(below, grad, zeros) if tensor_min else None,
            F.where(above, grad, zeros) if tensor_max else None)


def _clamp_onnx(g, input, min, max):
    """Max then Min (Clip wants 0-d bounds; these broadcast). NaN propagates, and max wins where min > max."""
    out = input if min is None else g.op("Max", input, min)
    return out if max is None else g.op("Min", out, max)


defop("clamp(Tensor input, Tensor? min=None, Tensor? max=None)", "elementwise", kind="composite", onnx=_clamp_onnx,
      promotion=refusing_complex(rules.same, "clamp is not supported for complex types"), dtypes="numeric",
      meta=broadcast_meta("clamp"), normalize=_clamp_check,
      derivative=_clamp_derivative,
      composite=_clamp, reference=_clamp_reference, inplace=True, doc="min(max(input, min), max)")


def _complex_lerp(x, end, weight):
    """The formula's two sides, picked by |weight| < 0.5 as PyTorch picks them (complex numbers have no order)."""
    difference = F.sub(end, x)
    if not hasattr(weight, "_data"):  # a number: one side, decided here
        return F.add(x, F.mul(difference, weight)) if abs(weight) < 0.5 else F.sub(end, F.mul(difference, 1 - weight))
    near = F.add(x, F.mul(weight, difference))
    far = F.sub(end, F.mul(difference, F.sub(1, weight)))
    return F.where(F.lt(F.abs(weight), 0.5), near, far)


# PyTorch's two-sided formula (exact at weight 0 and 1), in float32 for half precision; a Python number weight
# picks its side once
defop("lerp(Tensor input, Tensor end, Tensor weight)", "elementwise", kind="composite",
      promotion=rules.same, dtypes="float+complex", meta=broadcast_meta("lerp"),
      composite=in_opmath(or_complex(_complex_lerp)(formula_composite("lerp"))),
      reference=lambda x, end, w: np.where(np.abs(w) < 0.5 if np.iscomplexobj(w) else np.less(w, 0.5),
                                           x + w * (end - x), end - (end - x) * (1 - w)),
      inplace=True, doc="input + weight * (end - input)",
      scalar="where(weight < 0.5, input + weight * (end - input), end - (end - input) * (1 - weight))")

__all__ = ["shape"]
