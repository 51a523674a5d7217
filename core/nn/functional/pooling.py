"""The pooling functions whose PyTorch signatures differ from the schema ops': ``return_indices`` on max and
adaptive max pooling, power-average (LP) pooling, ``max_unpool`` with its output-size rules, and fractional
max pooling drawing its random samples. Plain ``avg_pool*`` and ``adaptive_avg_pool*`` are the ops themselves.
"""
from __future__ import annotations

import math

from ...dispatch.ops import F
from ...dispatch.schema.errors import ArgumentError

__all__ = [
    "max_pool1d", "max_pool2d", "max_pool3d",
    "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
    "lp_pool1d", "lp_pool2d", "lp_pool3d",
    "max_unpool1d", "max_unpool2d", "max_unpool3d",
    "fractional_max_pool2d", "fractional_max_pool3d",
    "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices",
]


def _per_dim(value, n: int) -> tuple:
    return tuple(value) if isinstance(value, (list, tuple)) else (value,) * n


def _named_pair(function, with_indices, name: str, doc: str) -> tuple:
    """Names ``function`` and its ``<name>_with_indices`` twin (they are made per rank by a factory)."""
    function.__name__, function.__doc__ = name, doc
    with_indices.__name__ = f"{name}_with_indices"
    with_indices.__doc__ = f"``{name}(..., return_indices=True)``: (values, indices)."
    return function, with_indices


# -- max pooling, with or without indices -------------------------------------------------------------------

def _max_pool(n: int):
    values_op, indices_op = getattr(F, f"max_pool{n}d"), getattr(F, f"max_pool{n}d_with_indices")

    def max_pool(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
                 return_indices: bool = False):
        if return_indices:
            return tuple(indices_op(input, kernel_size, stride, padding, dilation, ceil_mode))
        return values_op(input, kernel_size, stride, padding, dilation, ceil_mode)

    def with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
                     return_indices: bool = False):
        return tuple(indices_op(input, kernel_size, stride, padding, dilation, ceil_mode))
    return _named_pair(max_pool, with_indices, f"max_pool{n}d",
                       f"The maximum of each (dilated) window of {n}-D pooling; with return_indices=True also the "
                       f"flat index of each maximum into the input's spatial dims (what max_unpool{n}d takes).")


max_pool1d, max_pool1d_with_indices = _max_pool(1)
max_pool2d, max_pool2d_with_indices = _max_pool(2)
max_pool3d, max_pool3d_with_indices = _max_pool(3)


def _adaptive_max_pool(n: int):
    op = getattr(F, f"adaptive_max_pool{n}d")

    def adaptive_max_pool(input, output_size, return_indices: bool = False):
        result = op(input, output_size)
        return tuple(result) if return_indices else result[0]

    def with_indices(input, output_size, return_indices: bool = False):
        return tuple(op(input, output_size))
    return _named_pair(adaptive_max_pool, with_indices, f"adaptive_max_pool{n}d",
                       f"The maximum over each of PyTorch's adaptive bins for a {n}-D output_size (None keeps a "
                       f"dim's size); with return_indices=True also their flat indices.")


adaptive_max_pool1d, adaptive_max_pool1d_with_indices = _adaptive_max_pool(1)
adaptive_max_pool2d, adaptive_max_pool2d_with_indices = _adaptive_max_pool(2)
adaptive_max_pool3d, adaptive_max_pool3d_with_indices = _adaptive_max_pool(3)


# -- power-average pooling ----------------------------------------------------------------------------------

def _lp_pool(n: int):
    avg_pool, max_pool = getattr(F, f"avg_pool{n}d"), getattr(F, f"max_pool{n}d")

    def lp_pool(input, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
        """(sum over each window of x ** p) ** (1 / p), as PyTorch computes it (a negative sum, possible for odd
        p, gives what pow gives); p = inf is max pooling of |x|. A window whose sum is zero gets the value and
        the gradient zero."""
        if norm_type == math.inf:
            return max_pool(F.abs(input), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -math.inf:
            return F.neg(max_pool(F.neg(F.abs(input)), kernel_size, stride, 0, 1, ceil_mode))
        window = math.prod(_per_dim(kernel_size, n))
        total = F.mul(avg_pool(F.pow(input, norm_type), kernel_size, stride, 0, ceil_mode), window)
        nonzero = F.ne(total, 0)
        root = F.pow(F.where(nonzero, total, 1.0), 1.0 / norm_type)
        return F.where(nonzero, root, 0.0)
    lp_pool.__name__ = f"lp_pool{n}d"
    return lp_pool


lp_pool1d, lp_pool2d, lp_pool3d = _lp_pool(1), _lp_pool(2), _lp_pool(3)


# -- max_unpool ---------------------------------------------------------------------------------------------

def _unpool_size(name: str, input, n: int, kernel_size, stride, padding, output_size) -> tuple:
    """The output size: ``(in - 1) * stride - 2 * padding + kernel`` per dim, or output_size when it is within
    one stride of that (PyTorch's rule: sizes a max pooling could have come from)."""
    kernel = _per_dim(kernel_size, n)
    stride = _per_dim(stride, n) if stride is not None else kernel
    padding = _per_dim(padding, n)
    default = tuple((size - 1) * s + k - 2 * p
                    for size, k, s, p in zip(input.shape[-n:], kernel, stride, padding))
    if output_size is None:
        return default, stride, padding
    requested = tuple(output_size)
    if len(requested) == n + 2:
        requested = requested[2:]
    elif len(requested) == n + 1:
        requested = requested[1:]
    if len(requested) != n:
        raise ArgumentError(f"{name}: output_size should be a sequence of {n} or {n + 2} elements, got {output_size}")
    for d, (size, s) in enumerate(zip(default, stride)):
        if not size - s < requested[d] < size + s:
            raise ArgumentError(f"{name}: invalid output_size {tuple(output_size)} (dim {d} must be between "
                                f"{size - s + 1} and {size + s - 1})")
    return requested, stride, padding


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d: each value put back at its index, zeros elsewhere."""
    size, _, _ = _unpool_size("max_unpool1d", input, 1, kernel_size, stride, padding, output_size)
    out = F.max_unpool2d(F.unsqueeze(input, -1), F.unsqueeze(indices, -1), size + (1,))
    return F.squeeze(out, -1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: each value put back at its index, zeros elsewhere."""
    size, _, _ = _unpool_size("max_unpool2d", input, 2, kernel_size, stride, padding, output_size)
    return F.max_unpool2d(input, indices, size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool3d: each value put back at its index, zeros elsewhere."""
    size, stride, padding = _unpool_size("max_unpool3d", input, 3, kernel_size, stride, padding, output_size)
    return F.max_unpool3d(input, indices, size, stride, padding)


# -- fractional max pooling ---------------------------------------------------------------------------------

def _fractional_max_pool(n: int):
    op = getattr(F, f"fractional_max_pool{n}d")
    name = f"fractional_max_pool{n}d"

    def with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False,
                     _random_samples=None):
        if output_size is None and output_ratio is None:
            raise ArgumentError(f"{name} requires specifying either an output_size or an output_ratio")
        if output_size is None:
            ratio = _per_dim(output_ratio, n)
            output_size = tuple(int(size * r) for size, r in zip(input.shape[-n:], ratio))
        if _random_samples is None:  # one draw per (batch, channel) and dim, from the default generator
            batch = 1 if input.ndim == n + 1 else input.shape[0]
            _random_samples = F.rand((batch, input.shape[-n - 1], n), dtype=input.dtype, device=input.device)
        return tuple(op(input, kernel_size, output_size, _random_samples))

    def fractional_max_pool(input, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False,
                            _random_samples=None):
        result = with_indices(input, kernel_size, output_size, output_ratio, return_indices, _random_samples)
        return result if return_indices else result[0]
    return _named_pair(fractional_max_pool, with_indices, name,
                       f"{n}-D fractional max pooling: windows of kernel_size at pseudo-random starts that shrink "
                       f"the input to output_size (or by output_ratio); return_indices=True also gives each "
                       f"maximum's flat index.")


fractional_max_pool2d, fractional_max_pool2d_with_indices = _fractional_max_pool(2)
fractional_max_pool3d, fractional_max_pool3d_with_indices = _fractional_max_pool(3)
