"""``ember.sparse``: PyTorch's sparse tensors in the COO and CSR layouts.

    a = ember.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3), requires_grad=True)
    y = ember.sparse.mm(a, dense)          # dense (2, k); y.sum().backward() fills a.grad (sparse) and dense.grad
    ember.sparse.softmax(a, 1), ember.sparse.sum(a, 1), a.to_sparse_csr(), a.to_dense()

A sparse tensor (``SparseTensor``, an ``ember.Tensor``) is dense component tensors plus a size
(``tensor``); constructors check their input (``construction``, ``invariants``); layouts convert in
``conversion``; products run the device's CSR kernel with gradients (``products``, ``kernels``,
``pattern``); ``reductions`` and ``elementwise`` compute on the stored values; ``serialization`` saves and
loads; ``routing`` lets ``ember.mm``, ``ember.add``, ``ember.sin``, ... take sparse operands. See
docs/sparse.md.
"""
from __future__ import annotations

from typing import Any

from ..memory_format import sparse_coo, sparse_csr
from . import methods as _methods
from .construction import sparse_coo_tensor, sparse_csr_tensor
from .conversion import to_dense as _to_dense
from .errors import UnsupportedLayoutError
from .invariants import check_sparse_tensor_invariants
from .legacy import TYPES as _LEGACY_TYPES
from . import products as _products
from .products import dsmm, hspmm, mm, smm, sspaddmm
from .reductions import log_softmax, softmax, sum  # noqa: A004 (PyTorch's name)
from .tensor import SparseTensor

_methods.install()
globals().update(_LEGACY_TYPES)  # ember.sparse.FloatTensor, ...


def addmm(mat: Any, mat1: Any, mat2: Any, *, beta: float = 1.0, alpha: float = 1.0) -> Any:
    """``beta * mat + alpha * (mat1 @ mat2)`` with ``mat1`` sparse (gradients reach its values)."""
    return _products.addmm(mat, mat1, mat2, beta=beta, alpha=alpha)


def spsolve(input: Any, other: Any, *, left: bool = True) -> Any:
    """The solution X of ``input @ X = other`` (``X @ input = other`` with ``left=False``) for a square
    sparse ``input``, through a dense LU solve (Ember has no sparse factorization); differentiable."""
    from ..linalg import solve as dense_solve
    return dense_solve(_to_dense(input), other, left=left)


solve = spsolve  # torch.sparse lists ``solve`` in its __all__


def as_sparse_gradcheck(gradcheck):
    """``gradcheck`` for functions of sparse tensors: sparse inputs are checked through their values (the
    function receives sparse tensors rebuilt around the values gradcheck perturbs)."""
    def checker(func, inputs, **kwargs):
        inputs = inputs if isinstance(inputs, tuple) else (inputs,)
        flat, rebuild = [], []
        for x in inputs:
            if isinstance(x, SparseTensor):
                flat.append(x._vals.detach().requires_grad_(x.requires_grad))
                rebuild.append(x)
            else:
                flat.append(x)
                rebuild.append(None)

        def on_values(*values):
            args = [v if like is None else like._with_values(v) for v, like in zip(values, rebuild)]
            out = func(*args)
            return _to_dense(out) if isinstance(out, SparseTensor) else out
        return gradcheck(on_values, tuple(flat), **kwargs)
    return checker


def _copy_of(getter: str):
    def function(input: SparseTensor) -> Any:
        return getattr(input, getter)().clone()
    function.__name__ = f"{getter}_copy"
    function.__doc__ = f"A copy of ``input.{getter}()``."
    return function


def _resize_as_sparse_(input: SparseTensor, the_template: SparseTensor) -> SparseTensor:
    return input.resize_as_sparse_(the_template)


#: torch-level names ``ember`` gets from here (``core/__init__.py``)
TORCH_FUNCTIONS = {
    "sparse_coo_tensor": sparse_coo_tensor, "sparse_csr_tensor": sparse_csr_tensor, "smm": smm, "hspmm": hspmm,
    "hsmm": hspmm, "sspaddmm": sspaddmm, "saddmm": sspaddmm, "dsmm": dsmm, "spmm": mm,
    "sparse_coo": sparse_coo, "sparse_csr": sparse_csr, "resize_as_sparse_": _resize_as_sparse_,
    **{f"{g}_copy": _copy_of(g) for g in ("indices", "values", "crow_indices", "col_indices")},
}


def install(namespace: dict[str, Any]) -> None:
    """Give ``ember`` its sparse names, and let its functions take sparse operands (``routing``)."""
    from . import routing
    namespace.update(TORCH_FUNCTIONS)
    routing.install(namespace)


__all__ = ["SparseTensor", "UnsupportedLayoutError", "addmm", "mm", "sum", "softmax", "log_softmax", "spsolve", "solve",
           "check_sparse_tensor_invariants", "as_sparse_gradcheck", "sparse_coo_tensor", "sparse_csr_tensor",
           *_LEGACY_TYPES]
