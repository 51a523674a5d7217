"""``ember.nn.grad``: the gradients of a convolution with respect to its input and to its weight.

A convolution is linear in each of them, so each gradient is the vector-Jacobian product of the conv op at
any point: these run the conv op's declared derivative through ``ember.autograd.grad`` (on zeros of the
requested size), which is the same code ``backward`` runs. ``create_graph`` is on, so the results can
themselves be differentiated.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..autograd import enable_grad, grad
from ..dispatch.schema.binding import size_argument, tensor_argument
from ..dispatch.schema.errors import ShapeError, describe
from ..dispatch.ops import F
from ..tensor import Tensor
from .common_types import _size_1_t, _size_2_t, _size_3_t

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]


def _input_gradient(ndim: int, input_size, weight: Tensor, grad_output: Tensor, stride, padding, dilation,
                    groups: int) -> Tensor:
    name = f"conv{ndim}d_input"
    weight = tensor_argument(name, "weight", weight, position=1)
    grad_output = tensor_argument(name, "grad_output", grad_output, position=2)
    size = size_argument(name, "input_size", input_size)
    if len(size) != ndim + 2:
        raise ShapeError(f"{name}: input_size must have {ndim + 2} entries (batch, channels and {ndim} spatial "
                         f"sizes), got {list(size)}")
    with enable_grad():
        point = F.zeros(size, dtype=grad_output.dtype, device=grad_output.device).requires_grad_()
        out = getattr(F, f"conv{ndim}d")(point, weight, None, stride, padding, dilation, groups)
        _check_output(name, out, grad_output)
        return grad(out, point, grad_output, create_graph=True)[0]


def _weight_gradient(ndim: int, input: Tensor, weight_size, grad_output: Tensor, stride, padding, dilation,
                     groups: int) -> Tensor:
    name = f"conv{ndim}d_weight"
    input = tensor_argument(name, "input", input)
    grad_output = tensor_argument(name, "grad_output", grad_output, position=2)
    size = size_argument(name, "weight_size", weight_size)
    if len(size) != ndim + 2:
        raise ShapeError(f"{name}: weight_size must have {ndim + 2} entries (out_channels, in_channels / groups "
                         f"and {ndim} kernel sizes), got {list(size)}")
    with enable_grad():
        point = F.zeros(size, dtype=grad_output.dtype, device=grad_output.device).requires_grad_()
        out = getattr(F, f"conv{ndim}d")(input, point, None, stride, padding, dilation, groups)
        _check_output(name, out, grad_output)
        return grad(out, point, grad_output, create_graph=True)[0]


def _check_output(name: str, out: Tensor, grad_output: Tensor) -> None:
    if tuple(out.shape) != tuple(grad_output.shape):
        raise ShapeError(f"{name}: grad_output {describe(grad_output)} does not have the shape of the "
                         f"convolution's output, {list(out.shape)}")


def conv1d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor, stride: _size_1_t = 1,
                 padding: _size_1_t = 0, dilation: _size_1_t = 1, groups: int = 1) -> Tensor:
    """The gradient of ``conv1d`` with respect to an input of size ``input_size``."""
    return _input_gradient(1, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input: Tensor, weight_size: Sequence[int], grad_output: Tensor, stride: _size_1_t = 1,
                  padding: _size_1_t = 0, dilation: _size_1_t = 1, groups: int = 1) -> Tensor:
    """The gradient of ``conv1d`` with respect to a weight of size ``weight_size``."""
    return _weight_gradient(1, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor, stride: _size_2_t = 1,
                 padding: _size_2_t = 0, dilation: _size_2_t = 1, groups: int = 1) -> Tensor:
    """The gradient of ``conv2d`` with respect to an input of size ``input_size``."""
    return _input_gradient(2, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input: Tensor, weight_size: Sequence[int], grad_output: Tensor, stride: _size_2_t = 1,
                  padding: _size_2_t = 0, dilation: _size_2_t = 1, groups: int = 1) -> Tensor:
    """The gradient of ``conv2d`` with respect to a weight of size ``weight_size``."""
    return _weight_gradient(2, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor, stride: _size_3_t = 1,
                 padding: _size_3_t = 0, dilation: _size_3_t = 1, groups: int = 1) -> Tensor:
    """The gradient of ``conv3d`` with respect to an input of size ``input_size``."""
    return _input_gradient(3, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input: Tensor, weight_size: Sequence[int], grad_output: Tensor, stride: _size_3_t = 1,
                  padding: _size_3_t = 0, dilation: _size_3_t = 1, groups: int = 1) -> Tensor:
    """The gradient of ``conv3d`` with respect to a weight of size ``weight_size``."""
    return _weight_gradient(3, input, weight_size, grad_output, stride, padding, dilation, groups)
