"""floor_divide, remainder and div(rounding_mode="floor") of floats as NumPy and PyTorch define them.

CuPy's float floor_divide is ``floor(a / b)``, so ``inf // 2`` is inf where NumPy and PyTorch give NaN, and
its remainder ``a - floor(a / b) * b`` is NaN at ``b = ±inf`` where theirs is ``a`` or ``±inf``. These
kernels run the fmod-based C the OpenCL backend runs (``ember.backends.float_divmod``, checked on PoCL in
CI): in float for float16 and float32, in double for float64, rounding once to the input dtype (bfloat16
reaches them as float32: the backend computes it so).
Integers and the other rounding modes keep the shared kernels. An operand may be a Python number (the
dispatcher passes them for elementwise ops): CuPy converts it to the array's dtype, as the shared kernels do.
"""
from __future__ import annotations

import numpy as np

from ember.backends.float_divmod import CUDA_QUALIFIER, float_divmod_source, floor_divide_name, remainder_name

from ..kernel_sources import ElementwiseSource

#: C compute type -> the dtypes (of both operands and the result) that compute in it
_COMPUTE = {"float": ("float16", "float32"), "double": ("float64",)}
_HELPERS = {"floor_divide": floor_divide_name, "remainder": remainder_name}


def _source(op: str, ctype: str) -> ElementwiseSource:
    return ElementwiseSource("T a, T b", "T y", f"y = (T){_HELPERS[op](ctype)}(({ctype})a, ({ctype})b)",
                             f"ember_{op}_{ctype}", preamble=float_divmod_source(ctype, CUDA_QUALIFIER),
                             dtypes=_COMPUTE[ctype])


#: (op, C compute type) -> the kernel
SOURCES_BY_KIND = {(op, ctype): _source(op, ctype) for op in _HELPERS for ctype in _COMPUTE}
SOURCES = tuple(SOURCES_BY_KIND.values())


def build(cupy, shared: dict) -> dict:
    kernels = {key: source.build(cupy) for key, source in SOURCES_BY_KIND.items()}
    by_dtype = {np.dtype(name): ctype for ctype, names in _COMPUTE.items() for name in names}
    shared_div, shared_floor_divide, shared_remainder = shared["div"], shared["floor_divide"], shared["remainder"]

    def compute_type(a, b) -> str | None:
        """The C type the operands' dtype computes in (None: not a float); an operand may be a Python number,
        and then the array's dtype is the result's (the dispatcher promoted it)."""
        return by_dtype.get(a.dtype if hasattr(a, "dtype") else b.dtype)

    def div(a, b, rounding_mode):
        ctype = compute_type(a, b) if rounding_mode == "floor" else None
        return kernels["floor_divide", ctype](a, b) if ctype else shared_div(a, b, rounding_mode)

    def floor_divide(a, b):
        ctype = compute_type(a, b)
        return kernels["floor_divide", ctype](a, b) if ctype else shared_floor_divide(a, b)

    def remainder(a, b):
        ctype = compute_type(a, b)
        return kernels["remainder", ctype](a, b) if ctype else shared_remainder(a, b)

    return {"div": div, "floor_divide": floor_divide, "remainder": remainder}
