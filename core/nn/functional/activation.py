"""Activation functions with PyTorch's ``nn.functional`` signatures: ``inplace=`` flags, the ``name_`` in-place
forms, and the activations PyTorch writes in Python over others (relu6, softsign, tanhshrink, softmin).

The math is in the schema's ops (``ember.dispatch.ops.elementwise.activations``); ``inplace=True`` writes the result
into the input and returns it, which autograd refuses on a leaf that requires grad, as PyTorch does.
"""
from __future__ import annotations

import warnings

from ...dispatch.ops import F as _F

__all__ = ["relu", "relu_", "relu6", "elu", "elu_", "selu", "selu_", "celu", "celu_", "leaky_relu", "leaky_relu_",
           "hardtanh", "hardtanh_", "hardswish", "hardsigmoid", "silu", "mish", "gelu", "threshold", "threshold_",
           "rrelu", "rrelu_", "prelu", "glu", "logsigmoid", "softsign", "softshrink", "hardshrink", "tanhshrink",
           "softmax", "softmin", "log_softmax", "gumbel_softmax"]


def _result(input, out, inplace: bool):
    return _F.copy_(input, out) if inplace else out


def relu(input, inplace: bool = False):
    """max(x, 0)."""
    return _result(input, _F.relu(input), inplace)


def relu_(input):
    return relu(input, inplace=True)


def relu6(input, inplace: bool = False):
    """min(max(x, 0), 6)."""
    return _result(input, _F.hardtanh(input, 0.0, 6.0), inplace)


def elu(input, alpha: float = 1.0, inplace: bool = False):
    """x if x > 0 else alpha * (exp(x) - 1)."""
    return _result(input, _F.elu(input, alpha), inplace)


def elu_(input, alpha: float = 1.0):
    return elu(input, alpha, inplace=True)


def selu(input, inplace: bool = False):
    """scale * elu(x, alpha) with the self-normalizing constants."""
    return _result(input, _F.selu(input), inplace)


def selu_(input):
    return selu(input, inplace=True)


def celu(input, alpha: float = 1.0, inplace: bool = False):
    """x if x > 0 else alpha * (exp(x / alpha) - 1)."""
    return _result(input, _F.celu(input, alpha), inplace)


def celu_(input, alpha: float = 1.0):
    return celu(input, alpha, inplace=True)


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False):
    """x if x > 0 else negative_slope * x."""
    return _result(input, _F.leaky_relu(input, negative_slope), inplace)


def leaky_relu_(input, negative_slope: float = 0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
    """x clamped to [min_val, max_val]."""
    return _result(input, _F.hardtanh(input, min_val, max_val), inplace)


def hardtanh_(input, min_val: float = -1.0, max_val: float = 1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def hardswish(input, inplace: bool = False):
    """x * relu6(x + 3) / 6."""
    return _result(input, _F.hardswish(input), inplace)


def hardsigmoid(input, inplace: bool = False):
    """relu6(x + 3) / 6."""
    return _result(input, _F.hardsigmoid(input), inplace)


def silu(input, inplace: bool = False):
    """x * sigmoid(x)."""
    return _result(input, _F.silu(input), inplace)


def mish(input, inplace: bool = False):
    """x * tanh(softplus(x))."""
    return _result(input, _F.mish(input), inplace)


def gelu(input, approximate: str = "none"):
    """x * Phi(x), exactly or with the tanh approximation."""
    return _F.gelu(input, approximate=approximate)


def threshold(input, threshold: float, value: float, inplace: bool = False):
    """x where x > threshold, else value."""
    return _result(input, _F.threshold(input, threshold, value), inplace)


def threshold_(input, threshold: float, value: float):
    return _result(input, _F.threshold(input, threshold, value), True)


def rrelu(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False):
    """Leaky relu with a random slope in [lower, upper) per negative element in training, the mean slope in
    evaluation."""
    return _result(input, _F.rrelu(input, lower, upper, training), inplace)


def rrelu_(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False):
    return rrelu(input, lower, upper, training, inplace=True)


def prelu(input, weight):
    """x where x > 0, else weight * x, with one weight per channel (dim 1) or one shared."""
    return _F.prelu(input, weight)


def glu(input, dim: int = -1):
    """The first half of input along dim times the sigmoid of the second half."""
    return _F.glu(input, dim)


def logsigmoid(input):
    """log(sigmoid(x)), stable for large |x|."""
    return _F.logsigmoid(input)


def softsign(input):
    """x / (1 + |x|)."""
    return _F.div(input, _F.add(_F.abs(input), 1))


def softshrink(input, lambd: float = 0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    return _F.softshrink(input, lambd)


def hardshrink(input, lambd: float = 0.5):
    """x where |x| > lambd, 0 elsewhere."""
    return _F.hardshrink(input, lambd)


def tanhshrink(input):
    """x - tanh(x)."""
    return _F.sub(input, _F.tanh(input))


def _implicit_dim(name: str, ndim: int, stacklevel: int) -> int:
    """PyTorch's legacy choice when no dim is given: 0 for 0-, 1- and 3-D inputs, else 1 (with a warning)."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  f"as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim: int | None = None, _stacklevel: int = 3, dtype=None):
    """exp(x) / sum(exp(x)) along dim."""
    if dim is None:
        dim = _implicit_dim("softmax", input.ndim, _stacklevel)
    return _F.softmax(input, dim, dtype)


def softmin(input, dim: int | None = None, _stacklevel: int = 3, dtype=None):
    """softmax(-x) along dim: the smallest values get the most weight."""
    if dim is None:
        dim = _implicit_dim("softmin", input.ndim, _stacklevel)
    return _F.softmax(_F.neg(input), dim, dtype)


def log_softmax(input, dim: int | None = None, _stacklevel: int = 3, dtype=None):
    """log(softmax(x)) along dim, computed stably."""
    if dim is None:
        dim = _implicit_dim("log_softmax", input.ndim, _stacklevel)
    return _F.log_softmax(input, dim, dtype)


def gumbel_softmax(logits, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1):
    """A sample of the Gumbel-softmax (concrete) distribution: softmax((logits + Gumbel noise) / tau). ``hard``
    returns the one-hot of its argmax, with the soft sample's gradient (straight-through)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = _F.neg(_F.log(_F.exponential_(_F.empty_like(logits))))
    soft = _F.softmax(_F.div(_F.add(logits, gumbels), tau), dim)
    if not hard:
        return soft
    index = _F.argmax(soft, dim, True)
    one_hot = _F.scatter(_F.zeros_like(logits), dim, index, _F.full_like(index, 1.0, dtype=logits.dtype))
    return _F.add(_F.sub(one_hot, soft.detach()), soft)
