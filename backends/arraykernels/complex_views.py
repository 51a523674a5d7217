"""Complex arrays seen as (real, imaginary) pairs of their component type and back, sharing memory.

The pairs are the last axis: a complex element is two adjacent reals, which is how NumPy and CuPy lay it out,
so each view is a reinterpretation of the same bytes (``view`` with another dtype), never a copy.
"""
from __future__ import annotations

from .library import ArrayLib


def build(lib: ArrayLib) -> dict:
    dtypes = lib.dtypes
    component = {native: dtypes[dt.to_real()] for dt, native in dtypes.items() if dt.is_complex}
    paired = {dtypes[dt.to_real()]: native for dt, native in dtypes.items() if dt.is_complex}

    def view_as_real(a):
        """A trailing axis of one complex element, reinterpreted as two reals: any layout (0-d, strided) works."""
        return a[..., None].view(component[a.dtype])

    def view_as_complex(a):
        """The pair axis (stride 1, checked by the op) reinterpreted as one complex element, then dropped."""
        return a.view(paired[a.dtype])[..., 0]

    return {"view_as_real": view_as_real, "view_as_complex": view_as_complex}
