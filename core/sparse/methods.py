"""The SparseTensor's methods that compute: one table, written onto the class by ``install()``.

Everything a dense tensor does that PyTorch also does on sparse tensors: conversions (``to``, ``cpu``,
``float``, ``to_dense``, ``coalesce``, ...), products, ``sum``, element-wise ops and their Python operators
and in-place forms, printing and pickling. Any other Tensor method reaches ``NoDenseArray`` and raises
``UnsupportedLayoutError`` naming it.
"""
from __future__ import annotations

from typing import Any, Callable

from ..dispatch.schema import dtypes
from ..memory_format import sparse_coo
from ..tensor import Tensor
from . import conversion, elementwise, products, reductions
from .tensor import SparseTensor, make


def _components(t: SparseTensor) -> dict[str, Tensor]:
    if t.layout is sparse_coo:
        return {"indices": t._idx, "values": t._vals}
    return {"crow_indices": t._crow, "col_indices": t._col, "values": t._vals}


def _rebuilt(t: SparseTensor, convert: Callable[[Tensor], Tensor], values: Tensor) -> SparseTensor:
    """``t`` with its index tensors passed through ``convert`` (a device move) and new values."""
    moved = {name: convert(c) for name, c in _components(t).items() if name != "values"}
    out = make(t.layout, tuple(t.shape), values, indices=moved.get("indices"), crow=moved.get("crow_indices"),
               col=moved.get("col_indices"), coalesced=t._coalesced)
    if values.device == t.device:
        out._pattern = t._pattern
    return out


def to(self: SparseTensor, *args, **kwargs) -> SparseTensor:
    """``Tensor.to`` for sparse tensors: the values converted, the indices moved along with them."""
    values = self._vals.to(*args, **kwargs)
    if values is self._vals:
        return self
    if values.device == self.device:
        return self._with_values(values)
    return _rebuilt(self, lambda c: c.to(values.device), values)


def cpu(self: SparseTensor) -> SparseTensor:
    return to(self, "cpu")


def cuda(self: SparseTensor, device=None, non_blocking: bool = False) -> SparseTensor:
    return to(self, "cuda" if device is None else device if not isinstance(device, int) else f"cuda:{device}")


def clone(self: SparseTensor, *, memory_format=None) -> SparseTensor:
    return _rebuilt(self, lambda c: c.clone(), self._vals.clone())


def _dtype_method(dt) -> Callable:
    def convert(self: SparseTensor, memory_format=None) -> SparseTensor:
        return to(self, dt)
    convert.__name__ = dt.name
    return convert


def numpy(self: SparseTensor, *, force: bool = False):
    raise TypeError(f"can't convert {self.layout.name} layout tensor to numpy. Use Tensor.to_dense() first.")


def repr_(self: SparseTensor) -> str:
    parts = [f"{name}={c.detach()!r}" for name, c in _components(self).items()]
    extras = f", size={tuple(self.shape)}, nnz={self._nnz()}, layout={self.layout!r}"
    if self.grad_fn is not None:
        extras += f", grad_fn=<{self.grad_fn.name()}>"
    elif self.requires_grad:
        extras += ", requires_grad=True"
    return "tensor(" + ",\n       ".join(parts) + extras + ")"


def reduce_ex(self: SparseTensor, protocol: int):
    """Pickles as its components (dense tensors) and size, rebuilt without re-checking."""
    from .serialization import rebuild
    return rebuild, (self.layout.name, tuple(self.shape), _components(self), self._coalesced, self.requires_grad)


def deepcopy(self: SparseTensor, memo: dict) -> SparseTensor:
    out = clone(self).detach()
    out.requires_grad_(self.requires_grad)
    memo[id(self)] = out
    return out


def t(self: SparseTensor) -> SparseTensor:
    if self.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return self if self.ndim < 2 else conversion.transpose(self, 0, 1)


def _inplace(compute: Callable, name: str) -> Callable:
    """An in-place form: the result's components replace ``self``'s (the values' own in-place rules, such
    as refusing a leaf that requires grad, are checked by writing into them where the structure stays)."""
    def method(self: SparseTensor, *args, **kwargs) -> SparseTensor:
        result = compute(self, *args, **kwargs)
        if result._nnz() == self._nnz() and result._idx is self._idx and result._crow is self._crow:
            self._vals.copy_(result._vals)
        else:
            _check_leaf(self, name)
            _assign(self, result)
        return self
    method.__name__ = name
    return method


def _check_leaf(self: SparseTensor, name: str) -> None:
    if self.requires_grad and self.is_leaf:
        from ..autograd.grad_mode import state
        if state.enabled:
            raise RuntimeError(f"{name}: a leaf Variable that requires grad is being used in an in-place operation.")


def _assign(self: SparseTensor, result: SparseTensor) -> None:
    self._idx, self._crow, self._col = result._idx, result._crow, result._col
    self._vals, self._coalesced, self._pattern = result._vals, result._coalesced, result._pattern
    self._dtype = result._dtype
    self._version[0] += 1


def zero_(self: SparseTensor) -> SparseTensor:
    """No stored entries any more (PyTorch's ``zero_`` of a sparse tensor)."""
    _check_leaf(self, "zero_")
    grad = self.requires_grad
    empty = self._vals.new_zeros((0, *self._vals.shape[1:])).requires_grad_(grad)
    if self.layout is sparse_coo:
        result = make(sparse_coo, tuple(self.shape), empty, indices=self._idx.new_zeros((self._idx.shape[0], 0)),
                      coalesced=True)
    else:
        result = make(self.layout, tuple(self.shape), empty, crow=self._crow.new_zeros(self._crow.shape),
                      col=self._col.new_zeros(0))
    _assign(self, result)
    return self


def sparse_resize_(self: SparseTensor, size, sparse_dim: int, dense_dim: int) -> SparseTensor:
    """A new size over the same entries: sparse dims may grow (never below a stored index), dense dims
    must stay."""
    size = tuple(size)
    if self.layout is not sparse_coo or sparse_dim != self.sparse_dim() or dense_dim != self.dense_dim():
        raise RuntimeError("sparse_resize_: Ember resizes COO tensors keeping their sparse and dense dims")
    if size[sparse_dim:] != tuple(self.shape[sparse_dim:]) or len(size) != sparse_dim + dense_dim:
        raise RuntimeError(f"sparse_resize_: dense dims must stay {tuple(self.shape[sparse_dim:])}, got size {size}")
    if self._nnz():
        tops = self._idx.amax(1).tolist()
        if any(top >= s for top, s in zip(tops, size)):
            raise RuntimeError(f"sparse_resize_: size {size} is smaller than the stored indices need "
                               f"({[top + 1 for top in tops]})")
    self._data = type(self._data)(size, self.layout.name)
    self._pattern = None
    return self


def sparse_resize_and_clear_(self: SparseTensor, size, sparse_dim: int, dense_dim: int) -> SparseTensor:
    """An empty COO tensor of ``size`` with the given sparse and dense dims."""
    size = tuple(size)
    if len(size) != sparse_dim + dense_dim:
        raise RuntimeError(f"sparse_resize_and_clear_: size {size} is not sparse_dim + dense_dim long")
    values = self._vals.new_zeros((0, *size[sparse_dim:]))
    _assign(self, make(sparse_coo, size, values, indices=self._vals.new_zeros((sparse_dim, 0), dtype=dtypes.int64),
                       coalesced=True))
    self._data = type(self._data)(size, sparse_coo.name)
    return self


def resize_as_sparse_(self: SparseTensor, other: SparseTensor) -> SparseTensor:
    return sparse_resize_and_clear_(self, tuple(other.shape), other.sparse_dim(), other.dense_dim())


def _reflected(function: Callable) -> Callable:
    def operator(self, other):
        return function(other, self)
    return operator


def _rdiv(self, other):
    raise RuntimeError("div: a number or dense tensor divided by a sparse tensor is not supported (the unstored "
                       "zeros would divide by zero)")


def table() -> dict[str, Any]:
    """Every computing method of SparseTensor, by name."""
    methods: dict[str, Any] = {
        "to": to, "cpu": cpu, "cuda": cuda, "clone": clone, "numpy": numpy, "__repr__": repr_, "__str__": repr_,
        "__reduce_ex__": reduce_ex, "__deepcopy__": deepcopy,
        "to_dense": conversion.to_dense, "coalesce": conversion.coalesce, "to_sparse": conversion.to_sparse,
        "to_sparse_coo": conversion.to_sparse_coo, "to_sparse_csr": conversion.to_sparse_csr,
        "t": t, "transpose": conversion.transpose, "T": property(t), "mT": property(t),
        "mm": products.mm, "matmul": products.matmul, "__matmul__": products.matmul,
        "__rmatmul__": _reflected(products.matmul), "smm": products.smm, "hspmm": products.hspmm,
        "sspaddmm": products.sspaddmm, "sum": reductions.sum,
        "add": elementwise.add, "sub": elementwise.sub, "mul": elementwise.mul, "multiply": elementwise.mul,
        "div": elementwise.div, "divide": elementwise.div, "true_divide": elementwise.div, "pow": elementwise.pow,
        "__add__": elementwise.add, "__radd__": _reflected(elementwise.add), "__sub__": elementwise.sub,
        "__rsub__": _reflected(elementwise.sub), "__mul__": elementwise.mul, "__rmul__": _reflected(elementwise.mul),
        "__truediv__": elementwise.div, "__rtruediv__": _rdiv, "__pow__": elementwise.pow,
        "__neg__": lambda self: elementwise.unary("neg", self), "__abs__": lambda self: elementwise.unary("abs", self),
        "__pos__": lambda self: self,
        "zero_": zero_, "sparse_resize_": sparse_resize_, "sparse_resize_and_clear_": sparse_resize_and_clear_,
        "resize_as_sparse_": resize_as_sparse_, "sparse_mask": elementwise.sparse_mask,
    }
    for name in elementwise.UNARY:
        methods[name] = (lambda n: lambda self, *a, **k: elementwise.unary(n, self, *a, **k))(name)
        if name not in elementwise.PREDICATES:
            methods[name + "_"] = _inplace(methods[name], name + "_")
    for name in ("add", "sub", "mul", "div", "pow"):
        methods[name + "_"] = _inplace(methods[name], name + "_")
    for dunder, name in (("iadd", "add_"), ("isub", "sub_"), ("imul", "mul_"), ("itruediv", "div_")):
        methods[f"__{dunder}__"] = methods[name]
    for dt in (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64, dtypes.int64, dtypes.int32,
               dtypes.int16, dtypes.int8, dtypes.uint8, dtypes.bool_):
        methods[_DTYPE_METHODS[dt.name]] = _dtype_method(dt)
    return methods


_DTYPE_METHODS = {"float16": "half", "bfloat16": "bfloat16", "float32": "float", "float64": "double", "int64": "long",
                  "int32": "int", "int16": "short", "int8": "char", "uint8": "byte", "bool": "bool"}


def install() -> None:
    for name, method in table().items():
        setattr(SparseTensor, name, method)
