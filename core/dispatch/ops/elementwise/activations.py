"""The activation functions (relu's relatives, gelu, softplus, hardtanh, logsigmoid ...) and threshold_backward.

Each is a composite with an ONNX lowering and, where fusion can render it, a ``scalar`` formula. Where the formula
says exactly what the composite does, the composite is the formula computed over ``F`` (``formula_composite``);
the others are written here in Ember ops (``ember.dispatch.formula_composite.HAND_COMPOSITES`` says why).
"""
from __future__ import annotations

import math

import numpy as np

from ...schema import rules
from ...schema.binding import tensor_argument, wrap_dim
from ...formula_composite import formula_composite
from ...schema.meta import require, shape
from ...schema.overflow import check_fits
from ...schema import FLOAT32_ON_CUDA, Sample, defop
from ..namespace import F
from .complex_support import refusing_complex
from .opmath import in_opmath
from ...schema.errors import ArgumentError


_erf = np.vectorize(math.erf, otypes=[np.float64])


# -- activations ------------------------------------------------------------------------------------------------

def _activation(signature: str, composite, reference, dtypes="float", promotion=rules.same, **fields):
    return defop(signature, "nn", kind="composite", promotion=promotion, dtypes=dtypes,
                 meta=lambda x, *attrs: shape(x), composite=in_opmath(composite), reference=reference,
                 samples=fields.pop("samples", _activation_samples), method=fields.pop("method", False), **fields)


_CLAMP_OF_COMPLEX = "clamp is not supported for complex types"  # PyTorch's words for relu and hardtanh too


def _activation_samples(make, dtype):
    low, high = (-8, 8) if dtype.is_floating_point else (-20, 20)
    yield Sample((make((4, 5), low=low, high=high),))
    yield Sample((make((2, 3, 4), low=low, high=high, noncontiguous=True),))
    yield Sample((make(()),), note="0-d")
    yield Sample((make((0, 3)),), note="empty")


def _with_attrs(*samples):
    """Samples that also pass attributes, after the plain ones."""
    def generate(make, dtype):
        yield from _activation_samples(make, dtype)
        for args, kwargs in samples:
            yield Sample((make((3, 7), low=-30, high=30),) + args, kwargs)
    return generate


def _elu(x, alpha=1.0):
    # expm1 sees only the non-positive part, so the unused branch cannot overflow (nor its gradient)
    return F.where(F.gt(x, 0), x, F.mul(F.expm1(F.minimum(x, 0)), alpha))


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _gelu_check(op, args):
    if args["approximate"] not in ("none", "tanh"):
        raise ArgumentError(f"gelu: approximate must be 'none' or 'tanh', got {args['approximate']!r}")


def _gelu_reference(x, approximate="none"):
    x = np.asarray(x, np.float64)
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2.0)))


def _softplus(x, beta=1.0, threshold=20.0):
    scaled = F.mul(x, beta)
    # log(1 + exp(z)) = max(z, 0) + log1p(exp(-|z|)): exp never overflows, even in float16
    soft = F.add(F.maximum(scaled, 0), F.log1p(F.exp(F.neg(F.abs(scaled)))))
    return F.where(F.gt(scaled, threshold), x, F.div(soft, beta))


def _gelu_formula(approximate):
    if approximate == "tanh":
        return f"input * 0.5 * (tanh((input + input * input * input * 0.044715) * {_SQRT_2_OVER_PI!r}) + 1)"
    return f"input * 0.5 * (erf(input * {1 / math.sqrt(2.0)!r}) + 1)"


def _softplus_formula(beta, threshold):
    """max(z, 0) + log1p(exp(-|z|)) for z = beta * x, with the log1p term masked off above a non-negative
    threshold (where it is tiny and the result is z / beta), as the CPU kernel computes it."""
    soft = "max(input * beta, 0) + log1p(exp(-abs(input * beta)))"
    if threshold < 0:
        return f"where(input * beta > threshold, input, ({soft}) / beta)"
    return "(max(input * beta, 0) + log1p(exp(-abs(input * beta))) * (input * beta <= threshold)) / beta"


def _softplus_reference(x, beta=1.0, threshold=20.0):
    x = np.asarray(x, np.float64)
    with np.errstate(over="ignore"):
        return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


def _hardtanh_check(op, args):
    if args["min_val"] > args["max_val"]:
        raise ArgumentError(f"hardtanh: min_val cannot be greater than max_val, got {args['min_val']} > "
                            f"{args['max_val']}")


def _hardtanh(x, min_val=-1.0, max_val=1.0):
    if not x.dtype.is_floating_point:  # integer tensors stay integer; limits outside the dtype's range clip
        bits = 8 * x.dtype.itemsize
        low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if x.dtype.is_signed else (0, 2 ** bits - 1)
        min_val, max_val = (min(max(int(v), low), high) for v in (min_val, max_val))
    # where rather than clamp: PyTorch's gradient is zero at the limits themselves, clamp's passes there
    return F.where(F.le(x, min_val), min_val, F.where(F.ge(x, max_val), max_val, x))


def _sigmoid_reference(x):
    x = np.asarray(x)
    return 1 / (1 + np.exp(-x.astype(np.result_type(x, np.float64))))


# -- ONNX lowerings of the activations ------------------------------------------------------------------------

def _number(g, value):
    """A 0-d constant in the call's compute dtype."""
    return g.const(value, g.compute)


def _leaky_relu_onnx(g, input, negative_slope):
    return g.op("LeakyRelu", input, alpha=float(negative_slope))


def _elu_onnx(g, input, alpha):
    return g.op("Elu", input, alpha=float(alpha))


def _gelu_onnx(g, input, approximate):
    """ONNX Gelu from opset 20; before it the same formula as the composite, with Erf or Tanh."""
    if g.opset >= 20:
        return g.op("Gelu", input, approximate=approximate)
    if approximate == "tanh":
        cube = g.op("Mul", g.op("Mul", input, input), input)
        inner = g.op("Mul", g.op("Add", input, g.op("Mul", cube, _number(g, 0.044715))), _number(g, _SQRT_2_OVER_PI))
        curve = g.op("Tanh", inner)
    else:
        curve = g.op("Erf", g.op("Mul", input, _number(g, 1 / math.sqrt(2.0))))
    return g.op("Mul", g.op("Mul", input, _number(g, 0.5)), g.op("Add", curve, _number(g, 1.0)))


def _silu_onnx(g, input):
    return g.op("Mul", input, g.op("Sigmoid", input))


def _mish_onnx(g, input):
    if g.opset >= 18:
        return g.op("Mish", input)
    return g.op("Mul", input, g.op("Tanh", g.op("Softplus", input)))


def _softplus_onnx(g, input, beta, threshold):
    scaled = input if beta == 1 else g.op("Mul", input, _number(g, beta))
    soft = g.op("Softplus", scaled)
    if beta != 1:
        soft = g.op("Div", soft, _number(g, beta))
    return g.op("Where", g.op("Greater", scaled, _number(g, threshold)), input, soft)


def _hardtanh_onnx(g, input, min_val, max_val):
    """Clip; integer inputs clip at the limits truncated to the dtype's range, as the composite does."""
    if not g.compute.is_floating_point:
        bits = 8 * g.compute.itemsize
        low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if g.compute.is_signed else (0, 2 ** bits - 1)
        min_val, max_val = (min(max(int(v), low), high) for v in (min_val, max_val))
    return g.op("Clip", input, _number(g, min_val), _number(g, max_val))


def _logsigmoid_onnx(g, input):
    return g.op("Neg", g.op("Softplus", g.op("Neg", input)))


_activation("relu(Tensor input)", formula_composite("relu"), lambda x: np.maximum(x, 0),
            dtypes="numeric", method=True, inplace=True, doc="max(x, 0); NaN stays NaN; relu'(0) = 0",
            promotion=refusing_complex(rules.same, _CLAMP_OF_COMPLEX),
            scalar="max(input, 0)", onnx="Relu",
            derivative=lambda grad, result: F.threshold_backward(grad, result, 0.0))


def _gradient_meta(op_name: str):
    """The meta of an activation's backward op: grad_output and input of one shape, which the result has."""
    def meta(grad_output, input, *attrs):
        require(shape(grad_output) == shape(input), op_name,
                "grad_output and input must have one shape", grad_output, input)
        return shape(input)
    return meta


def _threshold_backward_samples(make, dtype):
    yield Sample((make((4, 5)), make((4, 5), low=-2, high=2), 0.0))
    yield Sample((make((2, 3, 4), noncontiguous=True), make((2, 3, 4), low=-2, high=2, noncontiguous=True), 0.5))
    yield Sample((make(()), make(()), -1.0), note="0-d")
    yield Sample((make((0, 3)), make((0, 3)), 0.0), note="empty")


defop("threshold_backward(Tensor grad_output, Tensor input, float threshold)", "nn", kind="composite",
      promotion=rules.same, dtypes="float", meta=_gradient_meta("threshold_backward"),
      composite=formula_composite("threshold_backward"),
      reference=lambda grad_output, x, threshold: np.where(np.asarray(x) > threshold, grad_output, 0.0),
      samples=_threshold_backward_samples, method=False, scalar="grad_output * (input > threshold)",
      doc="grad_output where input > threshold, else 0: relu's gradient (threshold 0, input its result) in one "
          "op instead of a comparison, a cast and a product")
_activation("leaky_relu(Tensor input, float negative_slope=0.01)", formula_composite("leaky_relu"),
            lambda x, negative_slope=0.01: np.where(x > 0, x, x * negative_slope),
            samples=_with_attrs(((0.2,), {}), ((), {"negative_slope": -1.5})), doc="x if x > 0 else x * slope",
            onnx=_leaky_relu_onnx,
            scalar="where(input > 0, input, input * negative_slope)")
_activation("elu(Tensor input, float alpha=1.0)", _elu,
            lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0))),
            samples=_with_attrs(((0.5,), {}), ((), {"alpha": 2.0})), doc="x if x > 0 else alpha * (exp(x) - 1)",
            onnx=_elu_onnx,
            scalar="max(input, 0) + expm1(min(input, 0)) * alpha")
_activation("gelu(Tensor input, *, str approximate='none')", formula_composite("gelu"), _gelu_reference,
            normalize=_gelu_check, samples=_with_attrs(((), {"approximate": "tanh"})), scalar=_gelu_formula,
            onnx=_gelu_onnx,
            derivative=lambda grad, input, approximate: F.gelu_backward(grad, input, approximate=approximate),
            doc="x * Phi(x) with the normal CDF via erf, or its tanh approximation")
_activation("silu(Tensor input)", lambda x: F.mul(x, F.sigmoid(x)), lambda x: x * _sigmoid_reference(x),
            doc="x * sigmoid(x) (swish)", scalar="input / (1 + exp(-input))", onnx=_silu_onnx,
            dtypes="float+complex")
_activation("mish(Tensor input)", lambda x: F.mul(x, F.tanh(F.softplus(x))),
            lambda x: x * np.tanh(_softplus_reference(x)), doc="x * tanh(softplus(x))", onnx=_mish_onnx,
            scalar="input * tanh(max(input, 0) + log1p(exp(-abs(input))) * (input <= 20))")
_activation("softplus(Tensor input, float beta=1.0, float threshold=20.0)", _softplus, _softplus_reference,
            samples=_with_attrs(((2.0,), {}), ((0.5, 5.0), {})), autocast=FLOAT32_ON_CUDA, scalar=_softplus_formula,
            onnx=_softplus_onnx,
            doc="log(1 + exp(beta * x)) / beta, the identity where beta * x > threshold")
_activation("hardtanh(Tensor input, float min_val=-1.0, float max_val=1.0)", _hardtanh,
            lambda x, min_val=-1.0, max_val=1.0: np.clip(np.asarray(x, np.float64), min_val, max_val),
            dtypes="numeric", normalize=_hardtanh_check, samples=_with_attrs(((-2.0, 3.0), {})), onnx=_hardtanh_onnx,
            promotion=refusing_complex(rules.same, _CLAMP_OF_COMPLEX),
            doc="x clamped to [min_val, max_val]")
_activation("logsigmoid(Tensor input)", formula_composite("logsigmoid"),  # finite for every x
            lambda x: -_softplus_reference(-np.asarray(x, np.float64), 1.0, np.inf),
            doc="log(sigmoid(x)), stable for large |x|", scalar="min(input, 0) - log1p(exp(-abs(input)))",
            onnx=_logsigmoid_onnx)


def _gelu_backward(grad_output, input, approximate="none"):
    """grad * d gelu / dx: Phi(x) + x * phi(x) exactly, or the tanh form's derivative."""
    x = input
    if approximate == "tanh":
        cube_slope = F.add(F.mul(F.mul(x, x), 3 * 0.044715), 1)
        curve = F.tanh(F.mul(F.add(x, F.mul(F.mul(F.mul(x, x), x), 0.044715)), _SQRT_2_OVER_PI))
        slope = F.mul(F.mul(F.mul(F.sub(1, F.mul(curve, curve)), x), cube_slope), 0.5 * _SQRT_2_OVER_PI)
        return F.mul(grad_output, F.add(F.mul(F.add(curve, 1), 0.5), slope))
    cdf = F.mul(F.add(F.erf(F.mul(x, 1 / math.sqrt(2.0))), 1), 0.5)
    density = F.mul(F.exp(F.mul(F.mul(x, x), -0.5)), 1 / math.sqrt(2 * math.pi))
    return F.mul(grad_output, F.add(cdf, F.mul(x, density)))


def _gelu_backward_reference(grad_output, x, approximate="none"):
    x = np.asarray(x, np.float64)
    if approximate == "tanh":
        curve = np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x ** 3))
        slope = 0.5 * x * (1 - curve ** 2) * _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x ** 2)
        return grad_output * (0.5 * (1 + curve) + slope)
    return grad_output * (0.5 * (1 + _erf(x / math.sqrt(2.0))) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi))


def _gelu_backward_formula(approximate):
    if approximate == "tanh":
        curve = f"tanh((input + input * input * input * 0.044715) * {_SQRT_2_OVER_PI!r})"
        return (f"grad_output * (({curve} + 1) * 0.5 + (1 - {curve} * {curve}) * input"
                f" * (input * input * {3 * 0.044715!r} + 1) * {0.5 * _SQRT_2_OVER_PI!r})")
    return (f"grad_output * ((erf(input * {1 / math.sqrt(2.0)!r}) + 1) * 0.5"
            f" + input * exp(input * input * -0.5) * {1 / math.sqrt(2 * math.pi)!r})")


def _gelu_backward_samples(make, dtype):
    yield Sample((make((4, 5)), make((4, 5), low=-6, high=6)))
    # tanh's form: within [-2, 2], where 1 - tanh^2 keeps float32 digits for the second derivative
    yield Sample((make((4, 5)), make((4, 5), low=-2, high=2)), {"approximate": "tanh"})
    yield Sample((make((2, 3, 4), noncontiguous=True), make((2, 3, 4), low=-6, high=6, noncontiguous=True)),
                 note="non-contiguous")
    yield Sample((make((0, 3)), make((0, 3))), note="empty")


defop("gelu_backward(Tensor grad_output, Tensor input, *, str approximate='none')", "nn", kind="composite",
      promotion=rules.same, dtypes="float", meta=_gradient_meta("gelu_backward"), normalize=_gelu_check,
      composite=in_opmath(_gelu_backward), reference=_gelu_backward_reference, samples=_gelu_backward_samples,
      method=False, scalar=_gelu_backward_formula,
      doc="gelu's gradient, grad_output * gelu'(input), in one op: one kernel where the chain of its composite "
          "would be a dozen ops, each a pass over the activations")


# -- selu, celu, the hard and shrinking activations, threshold, rrelu, prelu and glu -------------------------
# selu's and celu's derivatives read only the result, as PyTorch's do, so that their in-place forms can overwrite
# the input that a derivative of the input would need.

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _celu_check(op, args):
    if args["alpha"] == 0:
        raise ArgumentError("celu: alpha must not be 0 (the negative part is alpha * (exp(x / alpha) - 1))")


def _celu(x, alpha=1.0):
    return F.where(F.gt(x, 0), x, F.mul(F.expm1(F.div(F.minimum(x, 0), alpha)), alpha))


def _shrink_check(op, args):
    if args["lambd"] < 0:
        raise ArgumentError(f"{op.name}: lambda must be greater or equal to 0, but found to be {args['lambd']}.")


_activation("selu(Tensor input)", formula_composite("selu"),
            lambda x: _SELU_SCALE * np.where(x > 0, x, _SELU_ALPHA * np.expm1(np.minimum(x, 0))), inplace=True,
            scalar=f"(max(input, 0) + expm1(min(input, 0)) * {_SELU_ALPHA!r}) * {_SELU_SCALE!r}",
            onnx=lambda g, input: g.op("Selu", input, alpha=_SELU_ALPHA, gamma=_SELU_SCALE),
            derivative=lambda grad, result: F.mul(grad, F.where(F.gt(result, 0), _SELU_SCALE,
                                                                F.add(result, _SELU_SCALE * _SELU_ALPHA))),
            doc="scale * elu(x, alpha) with the self-normalizing constants of Klambauer et al. (2017)")
_activation("celu(Tensor input, float alpha=1.0)", _celu,
            lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0) / alpha)), inplace=True,
            normalize=_celu_check, samples=_with_attrs(((0.5,), {}), ((), {"alpha": 2.5})),
            scalar="max(input, 0) + expm1(min(input, 0) / alpha) * alpha",
            onnx=lambda g, input, alpha: g.op("Celu", input, alpha=float(alpha)),
            derivative=lambda grad, result, alpha: F.mul(grad, F.where(F.gt(result, 0), 1.0,
                                                                       F.add(F.div(result, alpha), 1.0))),
            doc="x if x > 0 else alpha * (exp(x / alpha) - 1): elu made continuously differentiable for any alpha")
_activation("hardswish(Tensor input)", formula_composite("hardswish"),
            lambda x: x * np.clip(x + 3, 0, 6) / 6, onnx="HardSwish",
            scalar="where(input < -3, 0, where(input <= 3, input * (input + 3) / 6, input))",
            doc="x * relu6(x + 3) / 6 (MobileNetV3); the slope is x / 3 + 0.5 on [-3, 3] as PyTorch's")
_activation("hardsigmoid(Tensor input)", formula_composite("hardsigmoid"),
            lambda x: np.clip(x + 3, 0, 6) / 6,
            scalar="where(input <= -3, 0, where(input >= 3, 1, input / 6 + 0.5))",
            onnx=lambda g, input: g.op("HardSigmoid", input, alpha=1 / 6, beta=0.5),
            doc="relu6(x + 3) / 6: a piecewise-linear sigmoid")
_activation("softshrink(Tensor input, float lambd=0.5)", formula_composite("softshrink"),
            lambda x, lambd=0.5: np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, 0)),
            normalize=_shrink_check, samples=_with_attrs(((2.0,), {}), ((), {"lambd": 0.0})),
            scalar="where(input > lambd, input - lambd, where(input < -lambd, input + lambd, 0))",
            onnx=lambda g, input, lambd: g.op("Shrink", input, lambd=float(lambd), bias=float(lambd)),
            doc="x - lambd above lambd, x + lambd below -lambd, 0 between: soft thresholding")
_activation("hardshrink(Tensor input, float lambd=0.5)", formula_composite("hardshrink"),
            lambda x, lambd=0.5: np.where(np.abs(x) <= lambd, 0, x), method=True,
            samples=_with_attrs(((2.0,), {}), ((), {"lambd": -1.0})),
            scalar="where(abs(input) <= lambd, 0, input)",
            doc="x where |x| > lambd, 0 elsewhere: hard thresholding")


def _threshold_check(op, args):
    """An integer input takes threshold and value as PyTorch converts its Scalars to the input's dtype: refused
    outside the dtype's range (a negative float does not wrap into uint8), truncated toward zero inside it.
    The composite then compares with and stores integers, so no float reaches the device to be cast there,
    where CUDA's float-to-unsigned conversion saturates (-2.0 -> 0) and x86's wraps (-2.0 -> 254)."""
    dtype = args["input"]._dtype
    if not dtype.is_floating_point:
        for name in ("threshold", "value"):
            check_fits(op.name, args[name], dtype)
            args[name] = int(args[name])


_activation("threshold(Tensor input, float threshold, float value)", formula_composite("threshold"),
            lambda x, threshold, value: np.where(x > threshold, x, value), dtypes="numeric", inplace=True,
            normalize=_threshold_check,
            samples=lambda make, dtype: (Sample((make((4, 5)), t, v)) for t, v in ((0.0, -2.0), (1.5, 7.0))),
            scalar="where(input > threshold, input, value)",
            doc="x where x > threshold, value elsewhere")


def _rrelu_check(op, args):
    if args["lower"] > args["upper"]:
        raise ArgumentError(f"rrelu: lower bound must be less than or equal to upper bound, got lower={args['lower']} "
                            f"and upper={args['upper']}")


def _rrelu(x, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):
    """Negative inputs times a slope drawn uniformly from [lower, upper) per element in training, times the
    mean slope (lower + upper) / 2 in evaluation."""
    if not training:
        return F.where(F.gt(x, 0), x, F.mul(x, (lower + upper) / 2))
    slopes = F.rand_uniform(tuple(x.shape), lower, upper, generator=generator, dtype=x.dtype, device=x.device)
    return F.where(F.gt(x, 0), x, F.mul(x, slopes))


def _rrelu_samples(make, dtype):
    yield Sample((make((60, 50)), 0.1, 0.3, True), note="many draws")
    yield Sample((make((3, 5)),), note="evaluation: the mean slope")
    yield Sample((make((0, 3)), 0.125, 1 / 3, True), note="empty")


defop("rrelu(Tensor input, float lower=0.125, float upper=0.3333333333333333, bool training=False, *, "
      "Generator? generator=None)", "random", kind="composite", promotion=rules.same, dtypes="float",
      meta=lambda x, *rest: shape(x), normalize=_rrelu_check, composite=_rrelu, samples=_rrelu_samples,
      method=False, inplace=True,
      doc="randomized leaky relu (Xu et al., 2015): x where x > 0, else x times a slope drawn from [lower, upper) "
          "in training, or (lower + upper) / 2 in evaluation")


def _prelu_meta(x, weight):
    require(len(shape(weight)) <= 1, "prelu", f"Expected `weight` to be a scalar or 1D tensor, but got: ndim = "
            f"{len(shape(weight))}", weight)
    count = int(np.prod(shape(weight)))
    if count != 1:
        require(len(shape(x)) > 0, "prelu", "Not allow zero-dim input tensor.", x)
        channels = shape(x)[1] if len(shape(x)) > 1 else 1
        require(channels == count, "prelu", f"Mismatch of parameter numbers and input channel size. Found "
                f"parameter numbers = {count} and channel size = {channels}.", x, weight)
    return shape(x)


def _channel_weight(weight, ndim: int):
    """The (C,) weight shaped to broadcast along dim 1 of an ndim-dim input (a single weight: 0-d)."""
    if weight.numel() == 1:
        return F.reshape(weight, ())
    return F.reshape(weight, (-1,) + (1,) * (ndim - 2))


def _prelu_reference(x, weight):
    weight = np.asarray(weight)
    w = weight.reshape(()) if weight.size == 1 else weight.reshape((-1,) + (1,) * (x.ndim - 2))
    return np.where(x > 0, x, w * x)


def _prelu_samples(make, dtype):
    yield Sample((make((2, 3, 4)), make((3,), low=-1, high=1)), note="one weight per channel")
    yield Sample((make((4, 5), noncontiguous=True), make((1,), low=-1, high=1)), note="a shared weight")
    yield Sample((make((2, 3, 2, 2)), make((3,), low=-1, high=1)), note="4-d")
    yield Sample((make((6,)), make((), low=-1, high=1)), note="1-d input, 0-d weight")


defop("prelu(Tensor input, Tensor weight)", "nn", kind="composite", promotion=rules.same, dtypes="float",
      meta=_prelu_meta, normalize=lambda op, args: tensor_argument("prelu", "weight", args["weight"], position=2),
      composite=in_opmath(lambda x, weight: F.where(F.gt(x, 0), x, F.mul(_channel_weight(weight, x.ndim), x))),
      reference=_prelu_reference, samples=_prelu_samples, method=True,
      doc="x where x > 0, else weight * x with a learned weight per channel (dim 1) or one shared weight")


def _glu_meta(x, dim=-1):
    require(len(shape(x)) > 0, "glu", "glu does not support scalars because halving size must be even", x)
    dim = wrap_dim("glu", dim, len(shape(x)), x)  # PyTorch's IndexError for a dim out of range
    size = shape(x)[dim]
    require(size % 2 == 0, "glu", f"Halving dimension must be even, but dimension {dim % len(shape(x))} is size "
            f"{size}", x)
    return tuple(s // 2 if i == dim % len(shape(x)) else s for i, s in enumerate(shape(x)))


def _glu(x, dim=-1):
    half = x.shape[dim] // 2
    return F.mul(F.slice(x, dim, 0, half), F.sigmoid(F.slice(x, dim, half, None)))


def _glu_reference(x, dim=-1):
    a, b = np.split(np.asarray(x, np.float64), 2, axis=dim)
    return a * _sigmoid_reference(b)


def _glu_samples(make, dtype):
    yield Sample((make((4, 6)),), note="last dim")
    yield Sample((make((2, 4, 3), noncontiguous=True), 1), note="dim=1")
    yield Sample((make((8,)), 0), note="1-d")


defop("glu(Tensor input, int dim=-1)", "nn", kind="composite", promotion=rules.same, dtypes="float", meta=_glu_meta,
      composite=in_opmath(_glu), reference=_glu_reference, samples=_glu_samples, method=False,
      doc="gated linear unit (Dauphin et al., 2017): the first half of input along dim times the sigmoid of the "
          "second half")
