"""GELU (erf and tanh forms) as one elementwise kernel: gelu's scalar formula, rendered by the fusion renderer.

Each kernel is the op's one-step program (``codegen.one_step_program``) through ``fusion.elementwise_source``, the code ``ember.compile``'s
fused kernels are made of, as the CPU renders its GELU kernel from the formula (``cpu/formula_kernels.py``):
the kernel logic is the formula that PoCL runs in CI, and the NVRTC test compiles these very records. Half
precision computes in float and rounds once; float64 computes in double. One kernel per form and dtype, for a
0-d program: CuPy's elementwise kernels broadcast any shape and layout to the output they allocate.
"""
from __future__ import annotations

from ember.backends.codegen import one_step_program
from ember.dispatch import float16, float32, float64

from ..fusion import elementwise_source
from ..kernel_sources import CUPY_FLOATS, ElementwiseSource

_DTYPES = {dt.name: dt for dt in (float16, float32, float64)}


def _source(approximate: str, dtype_name: str) -> ElementwiseSource:
    return elementwise_source(one_step_program("gelu", [_DTYPES[dtype_name]], (approximate,)))


#: approximate= -> NumPy dtype name -> the kernel
SOURCES_BY_FORM = {form: {name: _source(form, name) for name in CUPY_FLOATS} for form in ("none", "tanh")}
SOURCES = tuple(source for by_dtype in SOURCES_BY_FORM.values() for source in by_dtype.values())


def build(cupy, lib) -> dict:
    kernels = {(form, name): source.build(cupy) for form, by_dtype in SOURCES_BY_FORM.items()
               for name, source in by_dtype.items()}

    def gelu(a, approximate):
        return kernels[approximate, a.dtype.name](a)

    gelu.formula = "gelu"
    return {"gelu": gelu}
