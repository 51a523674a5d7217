"""The OpenCL backend's ``fuse_elementwise``: one generated OpenCL C kernel per elementwise program.

``ember.backends.codegen.render_c`` writes the program's per-element function; this module wraps it in a
kernel with one work-item per result element (over a 2-d range of rows where the merged shape allows, see
``strided.by_rows``), each input read through its own offset and strides
(broadcast dims have stride 0, and dims every input walks contiguously are merged, as the op-by-op
strided kernels do), each output written contiguously at the work-item's index. A kernel depends on the
program and the merged rank, never on sizes or strides (those are arguments); builds are cached in the
process by ``program.key()`` and rank, and PyOpenCL/PoCL keep compiled binaries on disk across processes.

Declined (None, so the compiler runs the steps op by op): bfloat16 anywhere (OpenCL C has no such type),
float16 on devices without ``cl_khr_fp16`` (such devices cannot hold it), float64 and complex128 on devices
without ``cl_khr_fp64``, and programs the renderer cannot express (integer ``pow``, complex ``<``). float16 data
is stored as ``half`` and computed in ``float``, as the op-by-op kernels do. Complex programs render through
the same complex dialect as the op-by-op formula kernels (float2/double2 pairs), so fusing them costs no code
of its own and agrees with op by op.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ember.backends.codegen import OPENCL, render_c
from ember.dispatch import ElementwiseProgram, UnsupportedProgram, bfloat16, complex128, float16, float64, value_dtype

from .array import CLArray, empty
from .cltypes import NUMPY_DTYPE, STORAGE_CTYPE, arg_dtype, compute_ctype, load, scalar_arg, store
from .runtime import DeviceRuntime, runtime_of
from .strided import broadcast_strides, by_rows, collapse, index_space, launch, position

_ELEMENT = "ember_element"
_LONG = np.dtype(np.int64)

_fused: dict[tuple, "FusedKernel | None"] = {}  # (device index, program key) -> kernel, or None: declined


def fuse_elementwise(program: ElementwiseProgram, index: int | None, numbers: int = 0) -> Callable[..., tuple] | None:
    """A callable running ``program`` as one kernel on ``opencl:index``, or None where this device cannot.
    ``numbers``: how many of the program's last inputs (0-d) the callable takes as Python numbers, passed as
    kernel arguments (an optimizer step's scalars)."""
    runtime = runtime_of(index)
    key = (runtime.index, program.key(), numbers)
    if key not in _fused:
        _fused[key] = _build(program, runtime, numbers)
    return _fused[key]


def _build(program: ElementwiseProgram, runtime: DeviceRuntime, numbers: int) -> "FusedKernel | None":
    if not _supported(program, runtime):
        return None
    try:
        element = render_c(program, OPENCL, _ELEMENT)
    except UnsupportedProgram:
        return None
    kernel = FusedKernel(runtime, program, element, numbers)
    # compile now, while the graph is built, for contiguous inputs (replays with other layouts of another
    # merged rank compile that rank on first use)
    arrays = program.inputs[:len(program.inputs) - numbers]
    kernel.layout([CLArray(runtime, None, shape, NUMPY_DTYPE[dt]) for shape, dt in arrays])
    return kernel


def _supported(program: ElementwiseProgram, runtime: DeviceRuntime) -> bool:
    used = program.dtypes()
    if bfloat16 in used:
        return False
    if float16 in used and not runtime.fp16:
        return False
    return runtime.fp64 or not used & {float64, complex128}


class FusedKernel:
    """``kernel(*inputs)``: the program's outputs as new contiguous CLArrays, computed by one launch."""

    def __init__(self, runtime: DeviceRuntime, program: ElementwiseProgram, element: str, numbers: int = 0) -> None:
        self.runtime = runtime
        self.program = program
        self.element = element
        self.shape = tuple(program.shape)
        self.size = math.prod(self.shape)
        self.arrays = len(program.inputs) - numbers
        self.in_dtypes = [NUMPY_DTYPE[dt] for _, dt in program.inputs]
        self.out_dtypes = [NUMPY_DTYPE[program.steps[j].out] for j in program.outputs]
        self._layouts: dict[tuple, tuple] = {}  # input shapes and strides -> (merged dims, strides, by rows, kernel)
        self._kernels: dict[tuple, object] = {}  # (merged rank, by rows) -> compiled kernel

    def __call__(self, *inputs) -> tuple:
        runtime = self.runtime
        outs = tuple(empty(runtime, self.shape, dt) for dt in self.out_dtypes)
        if self.size == 0:
            return outs
        arrays = inputs[:self.arrays]
        dims, strides, rows, kernel = self.layout(arrays)
        args: list = []
        for a, walk in zip(arrays, strides):
            args += [a.buffer, a.offset, *walk]
        args += [y.buffer for y in outs]
        args += [self.size, *dims]
        args += [scalar_arg(value, dt) for value, dt in zip(inputs[self.arrays:], self.in_dtypes[self.arrays:])]
        launch(runtime, kernel, dims, self.size, args, rows)
        return outs

    def layout(self, arrays) -> tuple:
        """The merged dims and per-input strides for these inputs' layouts (only their shapes and strides
        are read), and the kernel of that rank, compiled on first use."""
        key = tuple((a.shape, a.strides) for a in arrays)
        layout = self._layouts.get(key)
        if layout is None:
            dims, strides = collapse(self.shape, [broadcast_strides(a, self.shape) for a in arrays])
            rows = by_rows(self.runtime, dims)
            layout = self._layouts[key] = (dims, strides, rows, self._kernel(len(dims), rows))
        return layout

    def _kernel(self, ndim: int, rows: bool):
        kernel = self._kernels.get((ndim, rows))
        if kernel is None:
            values = [value_dtype(self.program.steps[j].out) for j in self.program.outputs]
            source, scalar_dtypes = kernel_source(self.element, self.in_dtypes[:self.arrays], self.out_dtypes, values,
                                                  ndim, rows, self.in_dtypes[self.arrays:])
            kernel = self._kernels[ndim, rows] = self.runtime.programs.kernel(source, "ember_fused", scalar_dtypes)
        return kernel


def kernel_source(element: str, in_dtypes: list, out_dtypes: list, out_values: list, ndim: int,
                  rows: bool = False, numbers: list = ()) -> tuple[str, list]:
    """OpenCL C of ``ember_fused``: element ``g`` with coordinates over the merged dims ``d*`` (see
    ``strided.index_space``; ``rows``: a 2-d range of rows),
    loads each input ``a{k}`` at its offset and strides, calls the element function, and stores each output
    ``out{i}`` at ``g``; inputs of the ``numbers`` dtypes follow, as the last parameters ``x{k}``. Also the
    ``set_scalar_arg_dtypes`` list of its parameters."""
    params, scalar_dtypes, loads = [], [], []
    for k, dt in enumerate(in_dtypes):
        params.append(f"__global const {STORAGE_CTYPE[dt]} *a{k}")
        params += [f"const long a{k}_o"] + [f"const long a{k}_s{d}" for d in range(ndim)]
        scalar_dtypes += [None] + [_LONG] * (1 + ndim)
        loads.append(load(dt, f"a{k}", position(f"a{k}", ndim)))
    for i, dt in enumerate(out_dtypes):
        params.append(f"__global {STORAGE_CTYPE[dt]} *out{i}")
        scalar_dtypes.append(None)
    params += ["const long n"] + [f"const long d{d}" for d in range(ndim)]
    scalar_dtypes += [_LONG] * (1 + ndim)
    for k, dt in enumerate(numbers, start=len(in_dtypes)):
        params.append(f"const {compute_ctype(dt)} x{k}")
        scalar_dtypes.append(arg_dtype(dt))
        loads.append(f"x{k}")
    values = [f"{OPENCL.types[v.name]} y{i};" for i, v in enumerate(out_values)]
    call = f"{_ELEMENT}({', '.join(loads + [f'&y{i}' for i in range(len(out_dtypes))])});"
    stores = [store(dt, f"out{i}", "g", f"y{i}") for i, dt in enumerate(out_dtypes)]
    body = "\n    ".join([index_space(ndim, rows), *values, call, *stores])
    source = f"""{OPENCL.helpers}{element}
__kernel void ember_fused({', '.join(params)})
{{
    {body}
}}
"""
    return source, scalar_dtypes


__all__ = ["FusedKernel", "fuse_elementwise", "kernel_source"]
