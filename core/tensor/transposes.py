"""The transposed views PyTorch spells as properties: ``T``, ``mT``, ``H`` and ``mH``. Ember has no complex
dtypes, so the conjugate transposes ``H`` and ``mH`` are the plain ones."""
from __future__ import annotations

from ..dispatch.schema.errors import ShapeError, describe
from ..dispatch.ops import F
from . import Tensor


def all_dims_reversed(self: Tensor) -> Tensor:
    """``T``: every dim in reverse order."""
    return F.permute(self, tuple(reversed(range(self.ndim))))


def matrix_transpose(self: Tensor) -> Tensor:
    """``mT``: the last two dims swapped."""
    return F.transpose(self, -2, -1)


def matrix_adjoint(self: Tensor) -> Tensor:
    """``mH``: the last two dims swapped, refused below two dims."""
    if self.ndim < 2:
        raise ShapeError(f"tensor.mH is only supported on matrices or batches of matrices. Got {self.ndim}-D "
                         f"tensor ({describe(self)})")
    return F.transpose(self, -2, -1)


def hermitian(self: Tensor) -> Tensor:
    """``H``: the conjugate transpose of a matrix (a 0-d tensor is its own)."""
    if self.ndim == 0:
        return self
    if self.ndim != 2:
        raise ShapeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor "
                         f"({describe(self)})")
    return F.transpose(self, 0, 1)
