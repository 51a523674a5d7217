"""torch's older linear-algebra functions that no op signature can express: ``torch.lu`` (its result has two or
three parts) and ``torch.chain_matmul`` (matrices as separate arguments). Both run on the schema's ops."""
from __future__ import annotations

from ..dispatch.ops import F
from ..dispatch.execution.out_argument import write_out


def lu(A, pivot: bool = True, get_infos: bool = False, out=None):
    """(A_LU, pivots) or, with ``get_infos``, (A_LU, pivots, infos): linalg.lu_factor_ex's packed factorization.
    Without ``get_infos`` a singular matrix raises, as PyTorch's does."""
    result = tuple(F.linalg_lu_factor_ex(A, pivot=pivot) if get_infos else F.linalg_lu_factor(A, pivot=pivot))
    return write_out("lu", result, out)


def chain_matmul(*matrices, out=None):
    """The product of the given 2-D matrices (torch.chain_matmul, deprecated there for linalg.multi_dot)."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    result = F.clone(matrices[0]) if len(matrices) == 1 else F.chain_matmul(list(matrices))
    return write_out("chain_matmul", result, out)

