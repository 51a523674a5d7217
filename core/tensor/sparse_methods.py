"""The sparse API on dense tensors: ``to_sparse``, ``to_sparse_csr``, ``to_dense``, ``sparse_mask``, the
layout facts (``is_sparse`` is False), and PyTorch's errors for what only a sparse tensor has (``indices()``
of a strided tensor). ``ember.sparse.SparseTensor`` overrides each of these with its own."""
from __future__ import annotations

from ..sparse import conversion, elementwise, products
from . import Tensor


def is_sparse(self: Tensor) -> bool:
    """False: a dense tensor is not a sparse COO tensor."""
    return False


def is_sparse_csr(self: Tensor) -> bool:
    return False


def sparse_dim(self: Tensor) -> int:
    """0: a dense tensor has no sparse dims (every dim is dense)."""
    return 0


def dense_dim(self: Tensor) -> int:
    return self.ndim


def smm(self: Tensor, mat: Tensor) -> Tensor:
    """sparse @ dense as a sparse COO tensor (``self`` sparse)."""
    return products.smm(self, mat)


def sspaddmm(self: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * self + alpha * (mat1 @ mat2)`` as a sparse COO tensor."""
    return products.sspaddmm(self, mat1, mat2, beta=beta, alpha=alpha)


def sparse_mask(self: Tensor, mask: Tensor) -> Tensor:
    """This tensor's values at ``mask``'s stored positions, as a sparse tensor shaped like ``mask``."""
    return elementwise.sparse_mask(self, mask)


def _refuse(function: str, wanted: str = "sparse coordinate"):
    def method(self: Tensor, *args, **kwargs):
        raise RuntimeError(f"{function} expected {wanted} tensor layout but got Strided")
    method.__name__ = function
    method.__doc__ = f"Only sparse tensors have ``{function}``: a strided tensor raises RuntimeError, as in PyTorch."
    return method


METHODS = {
    "to_sparse": conversion.to_sparse, "to_sparse_coo": conversion.to_sparse_coo,
    "to_sparse_csr": conversion.to_sparse_csr, "to_dense": conversion.to_dense,
    "sparse_mask": sparse_mask, "smm": smm, "sspaddmm": sspaddmm,
    "sparse_dim": sparse_dim, "dense_dim": dense_dim,
    "indices": _refuse("indices"), "values": _refuse("values", "sparse"), "coalesce": _refuse("coalesce"),
    "is_coalesced": _refuse("is_coalesced"), "_nnz": _refuse("_nnz", "sparse"),
    "_indices": _refuse("_indices"), "_values": _refuse("_values", "sparse"),
    "crow_indices": _refuse("crow_indices", "sparse row compressed"),
    "col_indices": _refuse("col_indices", "sparse row compressed"),
    "sparse_resize_": _refuse("sparse_resize_"), "sparse_resize_and_clear_": _refuse("sparse_resize_and_clear_"),
    "resize_as_sparse_": _refuse("resize_as_sparse_"),
}
PROPERTIES = {"is_sparse": is_sparse, "is_sparse_csr": is_sparse_csr}
