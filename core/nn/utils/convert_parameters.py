"""Parameters as one flat vector and back: for optimizers and tools that work on a single vector."""
from __future__ import annotations

from ...dispatch.ops import F
from ...tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_same_device(param, device):
    if device is not None and param.device != device:
        raise TypeError(f"Found two parameters on different devices, this is currently not supported "
                        f"({device} and {param.device})")
    return param.device


def parameters_to_vector(parameters) -> Tensor:
    """All parameters flattened and concatenated, in iteration order (a copy; it records autograd)."""
    device, flat = None, []
    for param in parameters:
        device = _check_same_device(param, device)
        flat.append(F.reshape(param, (-1,)))
    return F.cat(flat)


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Make each parameter's data the next slice of ``vec`` (the parameters then share vec's storage)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected ember.Tensor, but got: {type(vec).__name__}")
    device, pointer = None, 0
    for param in parameters:
        device = _check_same_device(param, device)
        n = param.numel()
        param.data = F.reshape(F.slice(vec.detach(), 0, pointer, pointer + n), tuple(param.shape))
        pointer += n
