"""``fused_ops::bias_gelu``: ``gelu(x + bias)`` in one op, with a kernel per device, a fake and a derivative.

Everything about the op sits here, as an Ember op's declaration does: the CPU kernel (NumPy: one pass over the
data instead of an add and a GELU), the kernel for devices without one of their own (Ember ops, so it runs on
OpenCL and CUDA through their backends), the fake function that says the output's shape and dtype without
computing it, the derivative (written in Ember ops, so it can be differentiated again), a vmap rule, the autocast
category and the ONNX lowering.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.special

import ember
import ember.nn.functional as F
from ember import Tensor
from ember.library import custom_op

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_APPROXIMATIONS = ("none", "tanh")


@custom_op("fused_ops::bias_gelu", mutates_args=(), device_types="cpu")
def bias_gelu(x: Tensor, bias: Tensor, approximate: str = "none") -> Tensor:
    """gelu(x + bias), bias broadcast along x's last dim; ``approximate`` "none" (erf) or "tanh"."""
    dtype = x.numpy().dtype
    work = np.float64 if dtype == np.float64 else np.float32  # half precision computes in float32, as Ember does
    u = x.numpy().astype(work) + bias.numpy().astype(work)
    if approximate == "tanh":
        curve = np.tanh(_SQRT_2_OVER_PI * (u + 0.044715 * u * u * u))
    else:
        curve = scipy.special.erf(u * (1 / math.sqrt(2.0)))
    return ember.from_numpy((0.5 * u * (1 + curve)).astype(dtype))


@bias_gelu.register_kernel(("opencl", "cuda"))
def _bias_gelu_on_device(x, bias, approximate="none"):
    """On a device: Ember's own ops, which the device's backend runs (two kernels, add and gelu)."""
    return F.gelu(x + bias, approximate=approximate)


@bias_gelu.register_fake
def _bias_gelu_fake(x, bias, approximate="none"):
    """The output's shape, dtype and device from the inputs' (fake tensors: no values); and the op's checks."""
    if approximate not in _APPROXIMATIONS:
        raise ValueError(f"fused_ops::bias_gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    if not x.dtype.is_floating_point or bias.dtype != x.dtype:
        raise ember.DtypeError(f"fused_ops::bias_gelu: x and bias must be of one floating dtype, got {x.dtype} "
                               f"and {bias.dtype}")
    if x.dim() == 0 or tuple(bias.shape) != (x.shape[-1],):
        raise ember.ShapeError(f"fused_ops::bias_gelu: bias must have shape ({x.shape[-1] if x.dim() else '?'},) "
                               f"to follow x's last dim; got x {tuple(x.shape)}, bias {tuple(bias.shape)}")
    return ember.empty_like(x)


def _slope(u: Tensor, approximate: str) -> Tensor:
    """d gelu(u) / du, in Ember ops."""
    if approximate == "tanh":
        curve = ember.tanh(_SQRT_2_OVER_PI * (u + 0.044715 * u * u * u))
        return 0.5 * (1 + curve) + 0.5 * u * (1 - curve * curve) * _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * u * u)
    cdf = 0.5 * (1 + ember.erf(u * (1 / math.sqrt(2.0))))
    return cdf + u * ember.exp(-0.5 * u * u) * (1 / math.sqrt(2 * math.pi))


def _setup_context(ctx, inputs, output):
    x, bias, approximate = inputs
    ctx.save_for_backward(x, bias)
    ctx.approximate = approximate


def _backward(ctx, grad):
    x, bias = ctx.saved_tensors
    grad_x = grad * _slope(x + bias, ctx.approximate)
    grad_bias = grad_x.sum(tuple(range(grad_x.dim() - 1))) if grad_x.dim() > 1 else grad_x
    return grad_x, grad_bias, None


bias_gelu.register_autograd(_backward, setup_context=_setup_context)


@bias_gelu.register_vmap
def _bias_gelu_vmap(info, in_dims, x, bias, approximate="none"):
    """A batch of x against one bias is one call (bias broadcasts over the batch dim); a batch of biases is
    the same math in Ember ops, each bias broadcast against its own x."""
    x_dim, bias_dim = in_dims[0], in_dims[1]
    if bias_dim is None:
        return bias_gelu(x, bias, approximate), x_dim
    if x_dim is None:
        x = x.expand(info.batch_size, *x.shape)
    bias = bias.reshape(info.batch_size, *([1] * (x.dim() - 2)), bias.shape[-1])
    return F.gelu(x + bias, approximate=approximate), 0


# under autocast, x (from a low-precision matmul) and bias (a float32 parameter) meet in the wider dtype
bias_gelu.register_autocast("cpu", "promote")
bias_gelu.register_autocast("cuda", "promote")


@bias_gelu.register_onnx
def _bias_gelu_onnx(g, x, bias, approximate):
    """ONNX: Add then Gelu (opset 20), or Gelu's formula with Erf or Tanh before it."""
    u = g.op("Add", x, bias)
    if g.opset >= 20:
        return g.op("Gelu", u, approximate=approximate)
    dtype = g.out_dtypes[0]
    if approximate == "tanh":
        cube = g.op("Mul", g.op("Mul", u, u), u)
        inner = g.op("Add", u, g.op("Mul", cube, g.const(0.044715, dtype)))
        curve = g.op("Tanh", g.op("Mul", inner, g.const(_SQRT_2_OVER_PI, dtype)))
    else:
        curve = g.op("Erf", g.op("Mul", u, g.const(1 / math.sqrt(2.0), dtype)))
    return g.op("Mul", g.op("Mul", u, g.const(0.5, dtype)), g.op("Add", curve, g.const(1.0, dtype)))


__all__ = ["bias_gelu"]
