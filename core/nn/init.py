"""``ember.nn.init``: PyTorch's parameter initialisers, with PyTorch's names, formulas and defaults.

Every initialiser fills its tensor in place under ``no_grad`` (parameters are leaves that require
grad) and returns it; the random ones take an optional ``generator=`` and otherwise draw from the
default generator, so ``ember.manual_seed`` makes a model's initialisation reproducible.
"""
from __future__ import annotations

import math
import warnings

from ..autograd.grad_mode import no_grad
from ..dispatch.ops import F
from ..tensor import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "sparse_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "orthogonal_"]

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The factor by which a nonlinearity shrinks the std of its input, which initialisers undo."""
    if nonlinearity in _LINEAR or nonlinearity == "sigmoid":
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out): dims 1 and 0 times the receptive field (the product of the dims after them)."""
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with draws from U(a, b)."""
    with no_grad():
        return F.uniform_(tensor, a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with draws from N(mean, std^2)."""
    with no_grad():
        return F.normal_(tensor, mean, std, generator=generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator=None) -> Tensor:
    """Fill with N(mean, std^2) draws restricted to [a, b]: draws outside are redrawn until none is left.

    Rejection keeps the distribution exact; when [a, b] holds almost none of the mass, the few values
    still outside after many rounds are clamped (PyTorch warns in that case too).
    """
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    with no_grad():
        F.normal_(tensor, mean, std, generator=generator)
        for _ in range(64):
            outside = F.logical_or(F.lt(tensor, a), F.gt(tensor, b))
            if not F.any(outside).item():
                break
            fresh = F.rand_normal(tuple(tensor.shape), mean, std, generator=generator, dtype=tensor.dtype,
                                  device=tensor.device)
            F.copy_(tensor, F.where(outside, fresh, tensor))
        return F.copy_(tensor, F.clamp(tensor, a, b))


def constant_(tensor: Tensor, val: float) -> Tensor:
    with no_grad():
        return F.copy_(tensor, F.full_like(tensor, val))


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    """The identity matrix on a 2-D tensor (ones on the diagonal of a non-square one)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        rows, cols = tensor.shape
        return F.copy_(tensor, F.eye(rows, cols, dtype=tensor.dtype, device=tensor.device))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """A convolution weight (3-, 4- or 5-D) that passes its input through: one 1 at each kernel's centre."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    out_channels = tensor.shape[0]
    if out_channels % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = out_channels // groups
    identity = min(per_group, tensor.shape[1])
    centre = tuple(k // 2 for k in tensor.shape[2:])
    kernel = math.prod(tensor.shape[2:])
    flat_centre = 0
    for size, c in zip(tensor.shape[2:], centre):
        flat_centre = flat_centre * size + c
    with no_grad():
        # row (g * per_group + d) takes input channel d at the centre tap, for d < identity
        rows = F.arange(out_channels, device=tensor.device)
        channel = F.remainder(rows, per_group)
        kept = F.lt(channel, identity)
        positions = F.add(F.mul(channel, kernel), flat_centre)
        columns = F.arange(tensor.shape[1] * kernel, device=tensor.device)
        hits = F.logical_and(F.eq(F.unsqueeze(columns, 0), F.unsqueeze(positions, 1)), F.unsqueeze(kept, 1))
        return F.copy_(tensor, F.reshape(F.to_dtype(hits, tensor.dtype), tuple(tensor.shape)))


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """A 2-D tensor drawn from N(0, std^2) with a fraction ``sparsity`` of each column zeroed, at
    rows chosen at random per column (Martens, 2010)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    zeros = math.ceil(sparsity * rows)
    with no_grad():
        F.normal_(tensor, 0.0, std, generator=generator)
        if zeros:
            keep = F.ones((rows, cols), dtype=tensor.dtype, device=tensor.device)
            for col in range(cols):
                chosen = F.slice(F.randperm(rows, generator=generator, device=tensor.device), 0, 0, zeros)
                F.index_put_(keep, [chosen, F.full((zeros,), col, dtype=chosen.dtype, device=tensor.device)],
                             F.zeros((), dtype=tensor.dtype, device=tensor.device))
            F.copy_(tensor, F.mul(tensor, keep))
        return tensor


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor: Tensor, a, mode: str, nonlinearity: str) -> float | None:
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    return calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator=None) -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(3 / fan) (He et al., 2015)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    return tensor if std is None else uniform_(tensor, -math.sqrt(3.0) * std, math.sqrt(3.0) * std, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator=None) -> Tensor:
    """N(0, std^2) with std = gain / sqrt(fan)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    return tensor if std is None else normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix from the QR decomposition of a Gaussian one (Saxe et al., 2013).

    Dims after the first are flattened. The QR factor comes from Gram-Schmidt, orthogonalising each
    column twice against the ones before it (stable to rounding); dividing by the norms makes R's
    diagonal positive, the sign convention that makes Q uniformly (Haar) distributed.
    """
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with no_grad():
        tall = F.rand_normal((max(rows, cols), min(rows, cols)), generator=generator, dtype=tensor.dtype,
                             device=tensor.device)
        columns = []
        for k in range(tall.shape[1]):
            v = F.select(tall, 1, k)
            if columns:
                basis = F.stack(columns, 1)
                for _ in range(2):
                    v = F.sub(v, F.matmul(basis, F.matmul(v, basis)))
            columns.append(F.div(v, F.norm(v)))
        q = F.stack(columns, 1)
        if rows < cols:
            q = F.transpose(q, 0, 1)
        return F.copy_(tensor, F.reshape(F.mul(q, gain), tuple(tensor.shape)))


def _deprecated(initializer):
    """PyTorch's old names without the trailing underscore: they warn, then run the in-place initialiser."""
    old = initializer.__name__[:-1]

    def deprecated(*args, **kwargs):
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{initializer.__name__}`.",
                      FutureWarning, stacklevel=2)
        return initializer(*args, **kwargs)
    deprecated.__name__ = deprecated.__qualname__ = old
    deprecated.__doc__ = f"Deprecated: use ``{initializer.__name__}``."
    return deprecated


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
