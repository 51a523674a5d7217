"""NumPy's floor division and remainder of floats as C functions, for every backend that writes C kernels.

One source for OpenCL C and CUDA C++ (they differ only in the function qualifier), so the semantics PoCL
runs in CI are the ones the GPU runs. The quotient comes from ``fmod`` as NumPy's ``npy_divmod`` and
PyTorch's ``div_floor_floating`` compute it, not from ``floor(a / b)``: the two differ at infinities
(``inf // 2`` is NaN, ``-5 // inf`` is -1, ``remainder(-5, inf)`` is inf) and where ``a / b`` rounds up to
a whole number. Not a plugin: a module backends import.
"""
from __future__ import annotations

#: the qualifier of helper functions in each C dialect
OPENCL_QUALIFIER = "inline"
CUDA_QUALIFIER = "__device__ __forceinline__"


def floor_divide_name(ctype: str) -> str:
    """The C function computing ``a // b`` on ``ctype`` (float or double) in ``float_divmod_source``."""
    return f"ember_floor_divide_{ctype}"


def remainder_name(ctype: str) -> str:
    """The C function computing ``a % b`` (the sign of ``b``) on ``ctype`` in ``float_divmod_source``."""
    return f"ember_remainder_{ctype}"


def float_divmod_source(ctype: str, qualifier: str) -> str:
    """C definitions of ``floor_divide_name(ctype)`` and ``remainder_name(ctype)`` (``ctype``: float or double;
    ``fmod``, ``floor`` and ``copysign`` must be overloaded for it, as in OpenCL C and CUDA C++)."""
    t = ctype
    return f"""
{qualifier} {t} {floor_divide_name(t)}({t} a, {t} b) {{
    {t} mod = fmod(a, b);
    if (b == 0) return a / b;
    {t} div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
    if (div == 0) return copysign(({t})0, a / b);
    {t} whole = floor(div);
    if (div - whole > 0.5) whole += 1;
    return whole;
}}
{qualifier} {t} {remainder_name(t)}({t} a, {t} b) {{
    {t} mod = fmod(a, b);
    if (b == 0) return mod;
    if (mod != 0) {{ if ((b < 0) != (mod < 0)) mod += b; }}
    else mod = copysign(({t})0, b);
    return mod;
}}
"""


__all__ = ["CUDA_QUALIFIER", "OPENCL_QUALIFIER", "float_divmod_source", "floor_divide_name", "remainder_name"]
