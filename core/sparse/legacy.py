"""``ember.sparse.FloatTensor`` and friends: PyTorch's legacy sparse constructors and isinstance checks.

``ember.sparse.FloatTensor(indices, values, size)`` is a COO tensor of that dtype (values converted);
``ember.sparse.FloatTensor(*size)`` or ``(size)`` an empty one; ``ember.sparse.FloatTensor()`` an empty 1-D
one. ``isinstance(t, ember.sparse.FloatTensor)`` checks the layout and the dtype, as in PyTorch.
"""
from __future__ import annotations

from ..dispatch.schema.dtypes import dtype as DType, int64
from ..legacy_types import TYPE_NAMES
from ..memory_format import sparse_coo
from ..tensor import Size, Tensor
from .tensor import SparseTensor, make


def _empty(dt: DType, size: tuple[int, ...], device) -> SparseTensor:
    from ..dispatch.ops import F
    values = F.zeros((0,), dtype=dt, device=device)
    indices = F.zeros((len(size), 0), dtype=int64, device=device)
    return make(sparse_coo, size, values, indices=indices, coalesced=True)


def construct(dt: DType, name: str, args: tuple, kwargs: dict) -> SparseTensor:
    device = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"sparse.{name}(): unexpected keyword argument(s) {sorted(kwargs)}; only device= is accepted")
    if len(args) in (2, 3) and isinstance(args[0], Tensor) and isinstance(args[1], Tensor):
        from .construction import sparse_coo_tensor
        size = tuple(args[2]) if len(args) == 3 else None
        return sparse_coo_tensor(args[0], args[1].to(dt), size, device=device)
    sizes = tuple(args[0]) if len(args) == 1 and isinstance(args[0], (Size, tuple, list)) else args
    if not all(isinstance(s, int) and not isinstance(s, bool) for s in sizes):
        raise TypeError(f"sparse.{name}(): expected (indices, values[, size]) tensors or sizes (ints), got "
                        f"{tuple(type(a).__name__ for a in args)}")
    return _empty(dt, tuple(sizes) if sizes else (0,), device)


class LegacySparseType(type):
    """The metaclass of ``ember.sparse.FloatTensor`` and friends."""

    dtype: DType

    def __call__(cls, *args, **kwargs) -> SparseTensor:
        return construct(cls.dtype, cls.__name__, args, dict(kwargs))

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, SparseTensor) and obj.layout is sparse_coo and obj.dtype is cls.dtype

    def __repr__(cls) -> str:
        return f"<class 'ember.sparse.{cls.__name__}'>"


def _type(dt: DType, name: str) -> LegacySparseType:
    doc = f"sparse COO tensors of dtype {dt.name} (legacy constructor)"
    return LegacySparseType(name, (), {"dtype": dt, "__module__": "ember.sparse", "__doc__": doc})


TYPES = {name: _type(dt, name) for dt, name in TYPE_NAMES.items() if name != "BoolTensor"}
