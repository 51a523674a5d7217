"""The CUDA backend's ``fuse_elementwise``: one ``cupy.ElementwiseKernel`` per elementwise program.

``ember.backends.codegen.render_c`` (CUDA dialect) writes the program's per-element ``__device__`` function;
the kernel's operation loads each input element, calls it, and stores each output. CuPy's elementwise
machinery does the rest: it broadcasts the inputs (any strides) to the preallocated outputs, merges
contiguous dims, compiles per device with NVRTC, and caches the binary on disk (``~/.cupy/kernel_cache``);
in the process kernels are cached by ``program.key()``.

float16 is CuPy's ``float16`` in memory and ``float`` in the element function (converted on load and
store), so a fused chain rounds to half once per output instead of once per op. complex64/complex128 are
CuPy's ``complex<float>``/``complex<double>`` in memory and the renderer's ``float2``/``double2`` pairs in the
element function (the same complex dialect as OpenCL's: ``codegen.complex_c``), converted part by part on load
and store. Declined (None, so the compiler runs the steps op by op): bfloat16 (CuPy has no C++ type for it)
and programs the renderer cannot express (integer ``pow``, complex ``<``). This module never imports CuPy:
the backend passes in the module it loaded.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ember.backends.codegen import CUDA, render_c
from ember.dispatch import ElementwiseProgram, UnsupportedProgram, bfloat16, float16, value_dtype

from .kernel_sources import ElementwiseSource
from .translation import CUPY_TYPES

# CUDART_INF and CUDART_NAN, which the CUDA dialect spells infinities and NaNs with, from CuPy's own copy of
# the header (NVRTC sees no CUDA toolkit headers of its own)
_PREAMBLE = "#include <cupy/math_constants.h>\n"
_ELEMENT = "ember_element"
_OPTIONS = ("--std=c++17",)  # the renderer writes float constants as hexadecimal literals (C++17)

_fused: dict[tuple, "FusedKernel | None"] = {}  # (device index, program key) -> kernel, or None: declined


def fuse_elementwise(cupy, program: ElementwiseProgram, index: int) -> Callable[..., tuple] | None:
    """A callable running ``program`` as one kernel on ``cuda:index``, or None for a program it cannot run."""
    key = (index, program.key())
    if key not in _fused:
        _fused[key] = _build(cupy, program, index)
    return _fused[key]


def _build(cupy, program: ElementwiseProgram, index: int) -> "FusedKernel | None":
    source = elementwise_source(program)
    if source is None:
        return None
    return FusedKernel(cupy, source.build(cupy), index, tuple(program.shape), _out_dtypes(program))


def elementwise_source(program: ElementwiseProgram, numbers: int = 0) -> ElementwiseSource | None:
    """The ElementwiseKernel that runs ``program`` (inputs ``a{k}``, outputs ``o{i}``), or None where the
    program is declined: what ``fuse_elementwise`` builds and the NVRTC test compiles. ``numbers``: how many
    of the program's last inputs (0-d) the kernel is called with as numbers (an optimizer step's scalars)."""
    if bfloat16 in program.dtypes():
        return None
    try:
        element = render_c(program, CUDA, _ELEMENT)
    except UnsupportedProgram:
        return None
    return ElementwiseSource(
        ", ".join(f"{dt.name} a{k}" for k, (_, dt) in enumerate(program.inputs)),
        ", ".join(f"{dt.name} o{i}" for i, dt in enumerate(_out_dtypes(program))),
        operation(program),
        f"ember_fused_{program.digest()}",
        preamble=_PREAMBLE + element,
        options=_OPTIONS,
        scalars=tuple(f"a{k}" for k in range(len(program.inputs) - numbers, len(program.inputs))))


def _out_dtypes(program: ElementwiseProgram) -> list[np.dtype]:
    return [np.dtype(program.steps[j].out.name) for j in program.outputs]


def operation(program: ElementwiseProgram) -> str:
    """The kernel's per-element code over CuPy's element variables ``a{k}`` (inputs) and ``o{i}`` (outputs):
    half inputs widen to float before the call, half outputs narrow after it; complex ones convert between
    CuPy's complex type and the element function's pair."""
    loads = [_load(f"a{k}", dt) for k, (_, dt) in enumerate(program.inputs)]
    lines, pointers, stores = [], [], []
    for i, j in enumerate(program.outputs):
        out = program.steps[j].out
        lines.append(f"{CUDA.types[value_dtype(out).name]} y{i};")
        pointers.append(f"&y{i}")
        stores.append(f"o{i} = {_stored(f'y{i}', out)};")
    lines.append(f"{_ELEMENT}({', '.join(loads + pointers)});")
    return "\n".join(lines + stores)


def _load(name: str, dt) -> str:
    if dt is float16:
        return f"(float){name}"
    if dt.is_complex:
        return f"make_{CUDA.types[dt.name]}({name}.real(), {name}.imag())"
    return name


def _stored(value: str, dt) -> str:
    if dt is float16:
        return f"float16({value})"
    if dt.is_complex:
        return f"{CUPY_TYPES[dt.name]}({value}.x, {value}.y)"
    return value


class FusedKernel:
    """``kernel(*inputs)``: the program's outputs as new contiguous CuPy arrays, computed by one launch."""

    def __init__(self, cupy, kernel, index: int, shape: tuple, out_dtypes: list) -> None:
        self.cupy, self.kernel, self.index, self.shape, self.out_dtypes = cupy, kernel, index, shape, out_dtypes

    def __call__(self, *arrays) -> tuple:
        cupy = self.cupy
        with cupy.cuda.Device(self.index):
            outs = tuple(cupy.empty(self.shape, dt) for dt in self.out_dtypes)
            self.kernel(*arrays, *outs)  # broadcasts the inputs to the outputs' shape; nothing to do when empty
        return outs


__all__ = ["FusedKernel", "elementwise_source", "fuse_elementwise", "operation"]
