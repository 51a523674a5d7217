"""The convolution kernels of the cuDNN path: each asks the planner for a plan for its spec and runs it, or calls
its fallback (the shared im2col kernels, or ``fallback.py``) when cuDNN is switched off, refuses the spec, or
has no plan for it.

Written over an array module and a ``run(plan, operands, device)`` function, so CI runs every step but the
launch itself with NumPy (where no plan can be built, so every call takes the fallback).
"""
from __future__ import annotations

from typing import Callable

from ember.dispatch import FLAGS

from .graphs import Planner
from .specs import ConvSpec, forward_spec, transpose_spec, weight_grad_spec

#: the kernels this module provides, by op name (what a fallback table must cover)
OPS = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
       "convolution_backward_weight")


def kernels(xp, planner: Planner, run: Callable, fallbacks: dict, device_of: Callable) -> dict:
    """The override table: one kernel per name in ``OPS``, each with ``fallbacks[name]`` behind it."""

    def launch(spec: ConvSpec | str, inputs: dict, device: int):
        """The op's result through cuDNN, or None where the fallback has to compute it."""
        if isinstance(spec, str) or not FLAGS.cudnn_enabled:
            return None
        plan = planner.plan(spec, device)
        if plan is None:
            return None
        operands = {name: xp.ascontiguousarray(a).reshape(getattr(spec, name)) for name, a in inputs.items()}
        out = operands[spec.output] = xp.empty(getattr(spec, spec.output), inputs["w" if "w" in inputs else "x"].dtype)
        if not planner.execute(run, plan, operands, spec, device, f"cuDNN {spec.kind}"):
            return None
        return out.reshape(spec.shape)

    def add_bias(out, bias, spatial: int):
        if bias is not None:
            out += bias.reshape((-1,) + (1,) * spatial)
        return out

    def forward(name: str):
        fallback = fallbacks[name]

        def conv(x, w, bias, stride, padding, dilation, groups):
            spec = forward_spec(x.shape, w.shape, padding, stride, dilation, groups, x.dtype.name)
            out = launch(spec, {"x": x, "w": w}, device_of(x))
            if out is None:
                return fallback(x, w, bias, stride, padding, dilation, groups)
            return add_bias(out, bias, w.ndim - 2)
        conv.__name__ = name
        return conv

    def transposed(name: str):
        fallback = fallbacks[name]

        def conv_transpose(x, w, bias, stride, padding, output_padding, groups, dilation):
            spec = transpose_spec(x.shape, w.shape, stride, padding, output_padding, groups, dilation, x.dtype.name)
            out = launch(spec, {"y": x, "w": w}, device_of(x))
            if out is None:
                return fallback(x, w, bias, stride, padding, output_padding, groups, dilation)
            return add_bias(out, bias, w.ndim - 2)
        conv_transpose.__name__ = name
        return conv_transpose

    weight_fallback = fallbacks["convolution_backward_weight"]

    def convolution_backward_weight(grad, x, kernel_size, stride, padding, dilation, groups):
        found = weight_grad_spec(grad.shape, x.shape, kernel_size, stride, padding, dilation, groups, x.dtype.name)
        out = None
        if not isinstance(found, str):
            spec, crop = found
            n = len(kernel_size)
            image = x[(Ellipsis,) + tuple(slice(0, c) for c in crop)] if crop != tuple(x.shape[-n:]) else x
            out = launch(spec, {"x": image, "y": grad}, device_of(x))
        if out is None:
            return weight_fallback(grad, x, kernel_size, stride, padding, dilation, groups)
        return out

    table = {name: forward(name) for name in ("conv1d", "conv2d", "conv3d")}
    table.update({name: transposed(name) for name in ("conv_transpose1d", "conv_transpose2d", "conv_transpose3d")})
    table["convolution_backward_weight"] = convolution_backward_weight
    return table
