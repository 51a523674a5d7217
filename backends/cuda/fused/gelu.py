"""GELU (erf and tanh forms) as one elementwise kernel, computing in float (double for float64 input)."""
from __future__ import annotations

from ..kernel_sources import CUPY_FLOATS, ElementwiseSource

_PREAMBLE = r"""
template <typename T> struct ember_accumulate { typedef float type; };
template <> struct ember_accumulate<double> { typedef double type; };
__device__ __forceinline__ float ember_erf(float v) { return erff(v); }
__device__ __forceinline__ double ember_erf(double v) { return erf(v); }
__device__ __forceinline__ float ember_tanh(float v) { return tanhf(v); }
__device__ __forceinline__ double ember_tanh(double v) { return tanh(v); }
"""

_ERF = """
typedef typename ember_accumulate<T>::type A;
const A v = (A)x;
y = (T)((A)0.5 * v * ((A)1 + ember_erf(v * (A)0.70710678118654752440)));
"""

_TANH = """
typedef typename ember_accumulate<T>::type A;
const A v = (A)x;
const A inner = (A)0.79788456080286535588 * (v + (A)0.044715 * v * v * v);
y = (T)((A)0.5 * v * ((A)1 + ember_tanh(inner)));
"""


#: approximate= -> the kernel
SOURCES_BY_FORM = {
    "none": ElementwiseSource("T x", "T y", _ERF, "ember_gelu_erf", preamble=_PREAMBLE, dtypes=CUPY_FLOATS),
    "tanh": ElementwiseSource("T x", "T y", _TANH, "ember_gelu_tanh", preamble=_PREAMBLE, dtypes=CUPY_FLOATS),
}
SOURCES = tuple(SOURCES_BY_FORM.values())


def build(cupy, lib) -> dict:
    forms = {form: source.build(cupy) for form, source in SOURCES_BY_FORM.items()}

    def gelu(a, approximate):
        return forms[approximate](a)

    return {"gelu": gelu}
