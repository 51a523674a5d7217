"""Saving and loading sparse tensors: pickling, ``ember.save``'s format and ``torch.save`` files.

A sparse tensor is saved as what it is made of: its layout, size and dense component tensors, which every
format already stores. ``rebuild`` makes it again from those without re-checking indices that were valid
when saved (``ember.load`` checks each component's own record).
"""
from __future__ import annotations

from ..memory_format import sparse_coo, sparse_csr
from ..tensor import Tensor
from .tensor import SparseTensor, make

LAYOUTS = {"sparse_coo": sparse_coo, "sparse_csr": sparse_csr}


def rebuild(layout_name: str, size, components: dict, coalesced: bool = False,
            requires_grad: bool = False) -> SparseTensor:
    """A sparse tensor from its layout name, size and components (``indices``/``values`` or
    ``crow_indices``/``col_indices``/``values``)."""
    layout = LAYOUTS.get(layout_name)
    names = ("indices", "values") if layout is sparse_coo else ("crow_indices", "col_indices", "values")
    if layout is None or not isinstance(components, dict) or set(components) != set(names) \
            or not all(isinstance(components[n], Tensor) and not isinstance(components[n], SparseTensor)
                       for n in names):
        raise ValueError(f"rebuild: not the components of a {layout_name!r} sparse tensor: {sorted(components)}")
    values = components["values"]
    if requires_grad:
        values = values.detach().requires_grad_(True)
    if layout is sparse_coo:
        return make(layout, tuple(size), values, indices=components["indices"], coalesced=bool(coalesced))
    return make(layout, tuple(size), values, crow=components["crow_indices"], col=components["col_indices"])


def parts(t: SparseTensor) -> dict:
    """What ``ember.save`` writes for a sparse tensor (components as tensor records)."""
    from .methods import _components
    return {"layout": t.layout.name, "size": list(t.shape), "coalesced": t._coalesced,
            "requires_grad": bool(t.requires_grad), "components": _components(t)}


def from_torch(layout_name: str, data: tuple) -> SparseTensor:
    """``torch._utils._rebuild_sparse_tensor(layout, data)``: COO data is (indices, values, size[,
    is_coalesced]), CSR data is (crow_indices, col_indices, values, size). The indices are checked, as
    the file may not come from PyTorch."""
    from .construction import sparse_coo_tensor, sparse_csr_tensor
    if layout_name == "sparse_coo" and len(data) in (3, 4):
        indices, values, size = data[:3]
        coalesced = bool(data[3]) if len(data) == 4 else None
        return sparse_coo_tensor(indices, values, tuple(size), check_invariants=True, is_coalesced=coalesced)
    if layout_name == "sparse_csr" and len(data) == 4:
        crow, col, values, size = data
        return sparse_csr_tensor(crow, col, values, tuple(size), check_invariants=True)
    raise ValueError(f"a sparse tensor of layout {layout_name} with {len(data)} parts, which Ember does not read "
                     f"(it reads sparse_coo and sparse_csr)")
