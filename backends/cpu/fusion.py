"""The CPU backend's ``fuse_elementwise``: one numba-compiled loop per elementwise program.

``ember.backends.codegen.render_python`` writes the program's per-element function; this module wraps it
in a loop over the result's elements (inputs indexed with 0 along the dims they broadcast over) and
compiles both with numba. numba was chosen over numexpr by measurement (benchmarks/fusion_choice.py):
it is faster on every chain measured, it has erf, and numexpr has no integer dtypes below 32 bits nor
half ones. Programs calling functions that NumPy vectorizes much better than numba's scalar libm calls
(``SLOWER_FUSED``) are declined, so they run op by op. The generated source is written to a file under ``EMBER_CACHE_DIR`` (default
``~/.cache/ember/kernels``), named by a hash of the source and imported from there, so numba's on-disk
cache (``cache=True``) serves later processes: they load the machine code instead of compiling. Within
a process, kernels are cached by ``program.key()``.

float16 and bfloat16 compute in float32 (numba has no half types on the CPU): such inputs are widened
before the loop and such outputs rounded once after it. A program ending with a reduction loops over the
kept dims outside and the reduced dims inside, with one accumulator per result element (the renderer's
``element_init``/``_combine``/``_finish``). Without numba the hook answers None and the
compiler runs the steps op by op.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Callable

import numpy as np

from ember.backends.codegen import render_python
from ember.dispatch import ElementwiseProgram, UnsupportedProgram, lower, value_dtype

from .dtypes import LOW_PRECISION, NUMPY_DTYPE

#: Run the outer loop on all cores (numba ``parallel=True``). Off: on the 2-core machines measured, thread
#: start-up and contention cost more than they gained below ~10^6 elements (see benchmarks/fusion_choice.py).
PARALLEL = os.environ.get("EMBER_FUSION_PARALLEL", "0") == "1"
#: Functions NumPy computes with SIMD loops (about 0.4 ns an element for float32) where numba calls scalar
#: libm (7-16 ns): a program calling one runs slower fused than op by op, so the hook declines it (measured
#: in benchmarks/fusion_choice.py: GELU's tanh form took 10x longer fused). exp, log (2-3 ns in numba)
#: and erf stay fusible: float32 erf and exp render as ember.dispatch.fast_erf's and fast_exp's
#: branch-free forms, which numba vectorizes (GELU's exact form on (64, 32, 192): 3.1 ms with libm's erf,
#: 0.22 ms with it; float32 exp: 0.3-0.8 ns an element against libm's 2.3-2.8), and float64's libm erf is
#: still faster than SciPy's.
SLOWER_FUSED = frozenset({"tanh", "sin", "cos", "tan", "expm1", "log1p"})

_kernels: dict[str, Callable[..., tuple] | None] = {}  # program.key() -> runner (None: declined)
_modules: dict[str, object] = {}  # source hash -> imported module


def numba_available() -> bool:
    """Whether numba can be imported, without importing it (ember's import stays cheap)."""
    if "numba" in sys.modules:
        return sys.modules["numba"] is not None  # None: imports of it are blocked
    return importlib.util.find_spec("numba") is not None


def imported_on_first_call(name: str) -> Callable[[], object]:
    """A function that imports this package's module ``name`` on its first call and returns it: the numba loops'
    modules, so that importing ember does not import numba (which takes a while)."""
    module = None

    def load():
        nonlocal module
        if module is None:
            module = importlib.import_module(f"{__package__}.{name}")
        return module
    return load


def cache_dir() -> Path:
    return Path(os.environ.get("EMBER_CACHE_DIR") or Path.home() / ".cache" / "ember" / "kernels")


def fuse_elementwise(program: ElementwiseProgram, index=None, *, parallel: bool | None = None,
                     slower: frozenset = SLOWER_FUSED) -> Callable[..., tuple] | None:
    """A callable computing ``program`` in one pass over NumPy arrays, or None: without numba, for a program
    the renderer cannot express, or for one calling a function in ``slower``."""
    parallel = PARALLEL if parallel is None else parallel
    key = program.key()
    if parallel != PARALLEL or slower != SLOWER_FUSED:
        key = f"{key} parallel={parallel} slower={sorted(slower)}"
    if key not in _kernels:
        _kernels[key] = _build(program, parallel, slower) if numba_available() else None
    return _kernels[key]


def _collapsible(program: ElementwiseProgram) -> bool:
    """Whether every input is either the whole result or one element: the loop can then run over one flat dim."""
    return program.reduction is None and all(tuple(shape) == tuple(program.shape) or int(np.prod(shape)) == 1 for shape, _ in program.inputs)


def _layout(program: ElementwiseProgram) -> tuple[tuple, list[tuple]]:
    """The loop's shape and each input's shape as the loop indexes it (same number of dims, 1 where it
    broadcasts)."""
    if _collapsible(program):
        n = int(np.prod(program.shape))
        return (n,), [(n,) if tuple(shape) == tuple(program.shape) and n != 1 else (1,) for shape, _ in program.inputs]
    ndim = len(program.shape)
    return tuple(program.shape), [(1,) * (ndim - len(shape)) + tuple(shape) for shape, _ in program.inputs]


def kernel_source(program: ElementwiseProgram, parallel: bool = False) -> str:
    """The module numba compiles: the element function and ``kernel(a0, ..., y0, ...)`` looping over the
    outputs' elements. It depends on the broadcasting pattern, not on the sizes."""
    loop_shape, input_shapes = _layout(program)
    ndim = len(loop_shape)
    indices = [f"i{d}" for d in range(ndim)]
    args = [f"a{k}" for k in range(len(program.inputs))]
    outs = [f"y{i}" for i in range(len(program.outputs))]
    loads = [f"{a}[{', '.join('0' if size == 1 and loop_shape[d] != 1 else indices[d] for d, size in enumerate(shape))}]"
             for a, shape in zip(args, input_shapes)]
    here = ", ".join(indices)
    inline = '@njit(cache=True, error_model="numpy", inline="always")\n'
    functions = "\n".join(inline + line if line.startswith("def ") else line
                          for line in render_python(program, "element").rstrip().splitlines())
    lines = ["# Generated by ember.backends.cpu.fusion from ember.backends.codegen.render_python; do not edit.",
             "import math", "", "import numpy as np", "from numba import njit, prange", "", "", functions, "", "",
             f'@njit(cache=True, error_model="numpy", parallel={parallel})']
    if program.reduction is not None:
        return "\n".join(lines + _reducing_loops(program, loads, parallel)) + "\n"
    lines.append(f"def kernel({', '.join(args + outs)}):")
    for d, index in enumerate(indices):
        loop = "prange" if parallel and d == 0 else "range"
        lines.append(f"{'    ' * (d + 1)}for {index} in {loop}(y0.shape[{d}]):")
    body = "    " * (ndim + 1)
    lines.append(f"{body}values = element({', '.join(loads)})")
    lines += [f"{body}{out}[{here}] = values[{i}]" for i, out in enumerate(outs)]
    return "\n".join(lines) + "\n"


def _reducing_loops(program: ElementwiseProgram, loads: list[str], parallel: bool) -> list[str]:
    """``kernel(a0, ..., y0, n0, n1, ...)``: y0 has the reduced shape with kept dims (n* are the program's
    dims); the kept dims are looped outside, the reduced ones inside. Along the innermost reduced dim the
    element values are first written to a buffer, then combined in order: the first loop has no
    dependence between iterations, so it vectorizes (float32 exp and erf with it), where the in-order
    accumulation would keep the whole loop scalar (sum(exp(x - max)) over (64, 3, 32, 32): 0.83 ms in
    one loop with the vectorizable exp, 0.60 with libm's, 0.21 in two)."""
    ndim, dims = len(program.shape), program.reduction[1]
    kept = [d for d in range(ndim) if d not in dims]
    extents = [f"n{d}" for d in range(ndim)]
    last = dims[-1]
    value_type = value_dtype(program.steps[program.outputs[0]].out)
    allocate = f"values = np.empty(n{last}, np.{'bool_' if value_type.name == 'bool' else value_type.name})"
    lines = [f"def kernel({', '.join([f'a{k}' for k in range(len(program.inputs))] + ['y0'] + extents)}):",
             f"    count = {' * '.join(f'n{d}' for d in dims)}"]
    if not (parallel and kept):
        lines.append(f"    {allocate}")
    depth = 1
    for position, d in enumerate(kept):
        loop = "prange" if parallel and position == 0 else "range"
        lines.append(f"{'    ' * depth}for i{d} in {loop}(n{d}):")
        depth += 1
        if parallel and position == 0:
            lines.append(f"{'    ' * depth}{allocate}")  # one buffer per thread's iteration
    outer = "    " * depth
    lines.append(f"{outer}acc = element_init()")
    for d in dims[:-1]:
        lines.append(f"{'    ' * depth}for i{d} in range(n{d}):")
        depth += 1
    inner = "    " * depth
    lines += [f"{inner}for i{last} in range(n{last}):",
              f"{inner}    values[i{last}] = element({', '.join(loads)})[0]",
              f"{inner}for i{last} in range(n{last}):",
              f"{inner}    acc = element_combine(acc, values[i{last}])"]
    here = ", ".join("0" if d in dims else f"i{d}" for d in range(ndim))
    lines.append(f"{outer}y0[{here}] = element_finish(acc, count)")
    return lines


def load_source(source: str):
    """Import ``source`` from a file named by its hash under the cache directory (written once, never
    rewritten: numba's cache is keyed by the file's path and modification time)."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:24]
    module = _modules.get(digest)
    if module is not None:
        return module
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"ember_fused_{digest}.py"
    if not path.exists():
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(source)
        os.replace(partial, path)  # atomic: a concurrent process sees the whole file or none
    name = f"ember_fused_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # numba's cache locator finds the module by name
    spec.loader.exec_module(module)
    _modules[digest] = module
    return module


def _build(program: ElementwiseProgram, parallel: bool, slower: frozenset) -> Callable[..., tuple] | None:
    try:
        if any(ins.kind == "call" and ins.args[0] in slower for ins in lower(program)[0]):
            return None
        source = kernel_source(program, parallel)
    except UnsupportedProgram:
        return None
    kernel = load_source(source).kernel
    if program.reduction is not None:
        return _reducing_runner(program, kernel)
    loop_shape, input_shapes = _layout(program)
    shape = tuple(program.shape)
    out_dtypes = [NUMPY_DTYPE[program.steps[j].out] for j in program.outputs]
    wide = [np.dtype(np.float32) if dt in LOW_PRECISION else dt for dt in out_dtypes]
    empty = int(np.prod(shape)) == 0

    def run(*arrays) -> tuple:
        outs = [np.empty(shape, dt) for dt in wide]
        if not empty:
            kernel(*_loop_inputs(arrays, input_shapes), *(y.reshape(loop_shape) for y in outs))
        return tuple(y if y.dtype == dt else y.astype(dt) for y, dt in zip(outs, out_dtypes))
    return run


def _loop_inputs(arrays, shapes: list[tuple]) -> list[np.ndarray]:
    """The kernel's inputs: half types widened to float32, shaped as the loop indexes them."""
    return [(a.astype(np.float32) if a.dtype in LOW_PRECISION else a).reshape(s) for a, s in zip(arrays, shapes)]


def _reducing_runner(program: ElementwiseProgram, kernel) -> Callable[..., tuple]:
    shape = tuple(program.shape)
    dims = program.reduction[1]
    kept_shape = tuple(1 if d in dims else n for d, n in enumerate(shape))
    _, input_shapes = _layout(program)
    dtype = NUMPY_DTYPE[program.result_dtype()]
    wide = np.dtype(np.float32) if dtype in LOW_PRECISION else dtype
    result_shape = program.result_shape()

    def run(*arrays) -> tuple:
        out = np.empty(kept_shape, wide)
        kernel(*_loop_inputs(arrays, input_shapes), out, *shape)
        out = out.reshape(result_shape)
        return (out if out.dtype == dtype else out.astype(dtype),)
    return run
