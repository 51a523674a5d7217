"""Activation layers: thin modules over the nn ops, with PyTorch's constructor arguments and reprs.

``inplace=True`` writes the result back into the input (and returns the input), as PyTorch's
in-place activations do; autograd refuses it on leaves that require grad, as PyTorch does.
"""
from __future__ import annotations

import warnings

from ...dispatch.ops import F
from .module import Module

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "ELU", "GELU", "SiLU", "Mish", "Softplus", "Tanh", "Sigmoid", "Hardtanh",
           "LogSigmoid", "Softmax", "LogSoftmax"]


def _apply(input, out, inplace: bool):
    return F.copy_(input, out) if inplace else out


def _inplace_repr(inplace: bool) -> str:
    return "inplace=True" if inplace else ""


class ReLU(Module):
    """max(x, 0)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return _apply(input, F.relu(input), self.inplace)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class LeakyReLU(Module):
    """x for x > 0, negative_slope * x otherwise."""

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return _apply(input, F.leaky_relu(input, self.negative_slope), self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return _apply(input, F.elu(input, self.alpha), self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class GELU(Module):
    """x * Phi(x), exactly ('none') or with the tanh approximation ('tanh')."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """x * sigmoid(x) (swish)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return _apply(input, F.silu(input), self.inplace)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class Mish(Module):
    """x * tanh(softplus(x))."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return _apply(input, F.mish(input), self.inplace)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, linear above ``threshold`` for stability."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Tanh(Module):
    def forward(self, input):
        return F.tanh(input)


class Sigmoid(Module):
    def forward(self, input):
        return F.sigmoid(input)


class LogSigmoid(Module):
    def forward(self, input):
        return F.logsigmoid(input)


class Hardtanh(Module):
    """x clamped to [min_val, max_val]."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        if max_val <= min_val:
            raise ValueError(f"Hardtanh: max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input):
        return _apply(input, F.hardtanh(input, self.min_val, self.max_val), self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class ReLU6(Hardtanh):
    """min(max(x, 0), 6)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


def _implicit_dim(name: str, ndim: int) -> int:
    """PyTorch's legacy choice when no dim is given: 0 for 0-, 1- and 3-D inputs, else 1 (with a warning)."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  f"as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


class Softmax(Module):
    """exp(x) / sum(exp(x)) along ``dim``: each slice becomes a probability distribution."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):
        dim = self.dim if self.dim is not None else _implicit_dim("softmax", input.ndim)
        return F.softmax(input, dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log(softmax(x)) along ``dim``, computed stably."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):
        dim = self.dim if self.dim is not None else _implicit_dim("log_softmax", input.ndim)
        return F.log_softmax(input, dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


# PyTorch defines MultiheadAttention in this module; Ember keeps it in attention.py (imported last: it
# builds on linear and functional, not on the activations above).
from .attention import MultiheadAttention  # noqa: E402,F401
