"""Layouts and memory formats: ``ember.strided``, ``ember.contiguous_format``, ``ember.channels_last`` ...

A dense tensor's layout is ``ember.strided``; the sparse tensors of ``ember.sparse`` have ``ember.sparse_coo``
or ``ember.sparse_csr``. A memory format says in
which order a tensor's elements lie in memory: ``contiguous_format`` is row-major; ``channels_last``
(4-D, N C H W stored as N H W C) and ``channels_last_3d`` (5-D, N C D H W stored as N D H W C) are real
strided layouts here as in PyTorch, made by ``Tensor.contiguous(memory_format=...)`` and ``Tensor.to``.
Kernels read any strides, so the format changes where elements lie, never a result; on Ember's backends it
brings no speed-up (no kernel is specialised for it). ``preserve_format`` (the default of ``to``, ``clone``
and the ``*_like`` functions) keeps whatever layout the tensor had.
"""
from __future__ import annotations


class layout:
    """How a tensor's elements are stored: ``strided`` (dense), ``sparse_coo`` or ``sparse_csr``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return self.name


class memory_format:
    """The order of a tensor's elements in memory; compare with ``is``."""

    __slots__ = ("name", "_order")

    def __init__(self, name: str, order: tuple[int, ...] | None) -> None:
        self.name, self._order = name, order  # order: the dims from outermost to innermost in memory

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return self.name


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
contiguous_format = memory_format("contiguous_format", None)
preserve_format = memory_format("preserve_format", None)
legacy_contiguous_format = memory_format("legacy_contiguous_format", None)
channels_last = memory_format("channels_last", (0, 2, 3, 1))
channels_last_3d = memory_format("channels_last_3d", (0, 2, 3, 4, 1))


def check_layout(function: str, value) -> None:
    """PyTorch's ``layout=`` keyword of dense factories: ``ember.strided`` (or None)."""
    if value is not None and not isinstance(value, layout):
        raise TypeError(f"{function}(): argument 'layout' must be layout, not {type(value).__name__}")
    if value is not None and value is not strided:
        raise ValueError(f"{function}: layout={value!r} is not supported here: this factory makes strided "
                         f"tensors; make sparse ones with ember.sparse_coo_tensor, ember.sparse_csr_tensor or "
                         f"Tensor.to_sparse()")


def _check(function: str, fmt) -> memory_format:
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{function}: memory_format must be an ember.memory_format such as ember.channels_last, "
                        f"got {type(fmt).__name__}")
    return fmt


def _dims_for(function: str, t, fmt: memory_format) -> tuple[int, ...]:
    if t.ndim != len(fmt._order):
        raise RuntimeError(f"{function}: required rank {len(fmt._order)} tensor to use {fmt.name} format, got a "
                           f"{t.ndim}-D tensor of shape {tuple(t.shape)}")
    return fmt._order


def is_contiguous_as(t, fmt) -> bool:
    """Whether ``t``'s strides are those of a dense tensor in ``fmt`` (size-1 dims may have any stride)."""
    fmt = _check("is_contiguous", fmt)
    if fmt._order is not None and t.ndim != len(fmt._order):
        return False
    order = fmt._order or tuple(range(t.ndim))
    strides, expected = t.stride(), 1
    for dim in reversed(order):
        if t.shape[dim] != 1 and strides[dim] != expected:
            return False
        expected *= t.shape[dim]
    return True


def to_format(t, fmt, function: str = "contiguous"):
    """``t`` laid out densely in ``fmt`` (``t`` itself when it already is, or for ``preserve_format``)."""
    fmt = _check(function, fmt)
    if fmt is preserve_format or is_contiguous_as(t, fmt):
        return t
    if fmt._order is None:
        return t.clone()
    order = _dims_for(function, t, fmt)
    inverse = tuple(order.index(d) for d in range(len(order)))
    return t.permute(*order).clone().permute(*inverse)
