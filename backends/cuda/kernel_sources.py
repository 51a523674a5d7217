"""Every CUDA C kernel of the backend as data: what a CuPy kernel object is made from, declared once.

The backend builds its CuPy kernels from these records (``build``), and the NVRTC test compiles the very
same records as CuPy would (``translation.py``), so a kernel that does not compile fails in CI, where no
GPU runs it. Each record says, besides CuPy's own arguments, the dtypes its type placeholder (``T``) is
instantiated with at run time and which inputs the backend passes as Python numbers (CuPy makes those
scalar parameters, not arrays). Nothing here imports CuPy: ``build`` takes the module the backend loaded.
"""
from __future__ import annotations

from dataclasses import dataclass

#: the floating dtypes CuPy has C types for, which kernels templated on T run in; bfloat16 never reaches a
#: kernel (the backend stores it and computes it in float32: ``CudaBackend.storage_only_dtypes``)
CUPY_FLOATS = ("float16", "float32", "float64")


@dataclass(frozen=True)
class ElementwiseSource:
    """The arguments of a ``cupy.ElementwiseKernel``, plus ``dtypes`` (what each type placeholder takes at run
    time; empty when the parameters name concrete dtypes) and ``scalars`` (inputs passed as numbers)."""

    in_params: str
    out_params: str
    operation: str
    name: str
    preamble: str = ""
    options: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    scalars: tuple[str, ...] = ()

    def build(self, cupy):
        return cupy.ElementwiseKernel(self.in_params, self.out_params, self.operation, self.name,
                                      preamble=self.preamble, options=self.options)


@dataclass(frozen=True)
class ReductionSource:
    """The arguments of a ``cupy.ReductionKernel``, plus ``dtypes`` and ``scalars`` as for ElementwiseSource."""

    in_params: str
    out_params: str
    map_expr: str
    reduce_expr: str
    post_map_expr: str
    identity: str
    name: str
    reduce_type: str | None = None
    preamble: str = ""
    options: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    scalars: tuple[str, ...] = ()

    def build(self, cupy):
        return cupy.ReductionKernel(self.in_params, self.out_params, self.map_expr, self.reduce_expr,
                                    self.post_map_expr, self.identity, self.name, reduce_type=self.reduce_type,
                                    preamble=self.preamble, options=self.options)


@dataclass(frozen=True)
class ModuleSource:
    """The code and options of a ``cupy.RawModule`` (its entry points instantiate every dtype themselves);
    ``name`` names it in messages."""

    name: str
    code: str
    options: tuple[str, ...] = ()

    def build(self, cupy):
        return cupy.RawModule(code=self.code, options=self.options)


KernelSource = ElementwiseSource | ReductionSource | ModuleSource

__all__ = ["ElementwiseSource", "KernelSource", "ModuleSource", "ReductionSource"]
