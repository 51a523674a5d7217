"""PyTorch's other names for Ember ops, and its torch-level in-place functions.

An alias is not an op: ``ember.arccos`` *is* ``ember.acos`` (and ``Tensor.arccos`` / ``Tensor.arccos_`` are
``Tensor.acos`` / ``Tensor.acos_``), so the schema, the conformance suite and autograd see one op. The
functions and methods are made from these tables by ``ember.functions.export`` and ``ember.tensor.generated``.
"""
from __future__ import annotations

from typing import Callable

from .dispatch.schema.dtypes import bool_
from .dispatch.schema.errors import DtypeError

#: PyTorch's alias -> the op it names.
ALIASES: dict[str, str] = {
    "absolute": "abs", "negative": "neg", "multiply": "mul", "divide": "div", "true_divide": "div",
    "subtract": "sub", "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le",
    "not_equal": "ne", "clip": "clamp", "concat": "cat", "concatenate": "cat",
    "arccos": "acos", "arcsin": "asin", "arctan": "atan", "arctan2": "atan2", "arccosh": "acosh",
    "arcsinh": "asinh", "arctanh": "atanh", "fix": "trunc",
    "moveaxis": "movedim", "swapdims": "transpose", "row_stack": "vstack",
    "unsafe_split": "split", "unsafe_chunk": "chunk", "unsafe_split_with_sizes": "split_with_sizes",
}

#: The in-place functions torch has at top level (``torch.relu_(x)`` is ``x.relu_()``), of ops whose in-place
#: Tensor method exists. Others' ops with such functions add their names here.
TORCH_INPLACE_FUNCTIONS: tuple[str, ...] = (
    "abs_", "absolute_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_",
    "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "cos_", "cosh_",
    "deg2rad_", "erf_", "exp_", "expm1_", "fix_", "floor_", "frac_", "gcd_", "lcm_", "ldexp_", "log10_", "log1p_",
    "log2_", "log_", "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_", "relu_", "round_", "rsqrt_",
    "sigmoid_", "sin_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_",
    "selu_", "celu_", "rrelu_", "threshold_",
    "fill_", "zero_",
    "addmv_",
    "erfc_", "exp2_", "i0_", "logit_", "sinc_", "xlogy_",
    "resize_as_", "as_strided_", "detach_",
)


def method_function(name: str, doc: str | None = None) -> Callable:
    """``torch.<name>(input, ...)``: the Tensor method ``input.<name>(...)``."""
    def function(input, *args, **kwargs):
        method = getattr(input, name, None)
        if method is None:
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
        return method(*args, **kwargs)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc or f"input.{name}(...) as a function."
    return function


def inplace_function(name: str) -> Callable:
    """``torch.<name>(input, ...)``: the in-place Tensor method ``input.<name>(...)``, which writes into input."""
    return method_function(name, f"In place: writes {name[:-1]}(input, ...) into input and returns it.")


def positive(input):
    """``input`` itself, as PyTorch (which refuses bool tensors: ``-`` has no bool meaning)."""
    if not hasattr(input, "_data"):
        raise TypeError(f"positive(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.dtype is bool_:
        raise DtypeError("positive: the `+` operator, on a bool tensor is not supported "
                         f"(tensor of shape {tuple(input.shape)} on {input.device})")
    return input
