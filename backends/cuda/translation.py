"""The translation units CuPy 14 compiles for a kernel record (``kernel_sources.py``): what the NVRTC test
compiles, so that a kernel that would not compile on the GPU fails in CI.

A RawModule is compiled as written. An ElementwiseKernel or ReductionKernel is wrapped: CuPy's headers, a
typedef per type placeholder (``typedef float T;``), the preamble, then an ``extern "C"`` kernel whose
parameters are ``CArray``s (arrays; non-raw ones named ``_raw_<name>``), C scalars (numbers) and
``CIndexer``s, and whose loop binds each element's inputs and outputs to references named as the
parameters before the record's code runs. The loops written here are Ember's own and simpler than CuPy's
(no block-wide reduction), but each piece of a record is compiled in the context CuPy gives it: the same
names in scope with the same C types, the same headers and the same options (CuPy adds ``-ftz=true``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ember.backends.codegen import CUDA

from .kernel_sources import ElementwiseSource, KernelSource, ModuleSource, ReductionSource

#: what CuPy includes before an ElementwiseKernel's or ReductionKernel's code (not before a RawModule's)
CUPY_HEADERS = ("cupy/complex.cuh", "cupy/carray.cuh", "cupy/atomics.cuh", "cupy/math_constants.h")
#: the options CuPy adds to every NVRTC compile, besides the include directories and ``-arch``
CUPY_OPTIONS = ("-ftz=true", "--device-as-default-execution-space")
#: CuPy 14's language standard where the kernel's options name none (its CCCL headers need C++17)
DEFAULT_STD = "--std=c++17"
#: CuPy's C type of each dtype (cupy._core._scalar.get_typename): the fusion renderer's CUDA dialect's, plus
#: the unsigned types Ember has no dtype for and CuPy's own half and complex types (the renderer's complex
#: values are float2/double2 pairs, converted on load and store: ``fusion.operation``)
CUPY_TYPES = {**CUDA.types, "uint16": "unsigned short", "uint32": "unsigned int", "uint64": "unsigned long long",
              "float16": "float16", "bfloat16": "bfloat16", "complex64": "complex<float>",
              "complex128": "complex<double>"}
#: the header CuPy includes (before the typedefs) where a kernel's parameters use a type of its own
CUPY_TYPE_HEADERS = {"float16": "cupy/float16.cuh", "bfloat16": "cupy/bfloat16.cuh"}
#: the layout every array parameter is compiled with: 1-d, C-contiguous, 32-bit indices
_ARRAY_LAYOUT = "1, 1, 1"


@dataclass(frozen=True)
class TranslationUnit:
    """One NVRTC compile: ``headers`` included first, then ``body``, under ``options``; ``label`` names it."""

    label: str
    headers: tuple[str, ...]
    body: str
    options: tuple[str, ...]

    @property
    def code(self) -> str:
        return "".join(f"#include <{h}>\n" for h in self.headers) + self.body


@dataclass(frozen=True)
class _Param:
    """One parameter of a CuPy kernel's parameter string, as CuPy parses it ("raw T w", "float64 beta1")."""

    name: str
    type: str  # a dtype name, or a one-letter type placeholder
    raw: bool
    const: bool

    @property
    def placeholder(self) -> bool:
        return len(self.type) == 1

    def ctype(self, bound: dict) -> str:
        """The concrete C type, with the placeholders bound to dtype names."""
        return CUPY_TYPES[self.dtype(bound)]

    def declared(self, bound: dict, scalar: bool) -> str:
        """How the parameter appears in the kernel's parameter list."""
        const = "const " if self.const else ""
        if scalar:
            return f"{const}{self.ctype(bound)} {self.name}"
        return f"{const}CArray<{self.ctype(bound)}, {_ARRAY_LAYOUT}> {self.name if self.raw else '_raw_' + self.name}"

    def dtype(self, bound: dict) -> str:
        return bound[self.type] if self.placeholder else self.type

    def element_type(self) -> str:
        """The type name the kernel's code sees for one element: the placeholder itself, or the C type."""
        return self.type if self.placeholder else CUPY_TYPES[self.type]

    def bound_to(self, index: str, copy: bool = False) -> str:
        """The statement naming this parameter's element at ``index`` (a reference, or for a constant
        reduction input a copy)."""
        if self.const:
            return f"const {self.element_type()} {'' if copy else '&'}{self.name} = _raw_{self.name}[{index}];"
        return f"{self.element_type()} &{self.name} = _raw_{self.name}[{index}];"


def _params(text: str, const: bool) -> list[_Param]:
    params = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        *keywords, type_, name = item.split()
        unknown = set(keywords) - {"raw", "_non_const"}
        if unknown or (len(type_) != 1 and type_ not in CUPY_TYPES):
            raise ValueError(f"kernel parameter {item!r}: unknown keyword or type")
        params.append(_Param(name, type_, "raw" in keywords, const and "_non_const" not in keywords))
    return params


def options(kernel_options: Sequence[str]) -> tuple[str, ...]:
    """The options CuPy compiles with: the kernel's own, its default standard, and CUPY_OPTIONS."""
    std = () if any("-std=" in option for option in kernel_options) else (DEFAULT_STD,)
    return (*kernel_options, *std, *CUPY_OPTIONS)


def units(source: KernelSource, label: str | None = None) -> list[TranslationUnit]:
    """What CuPy compiles for ``source``: one unit per dtype its placeholders take (one for a RawModule)."""
    label = label or source.name
    if isinstance(source, ModuleSource):
        return [TranslationUnit(label, (), source.code, options(source.options))]
    ins, outs = _params(source.in_params, True), _params(source.out_params, False)
    placeholders = sorted({p.type for p in ins + outs if p.placeholder})
    if bool(placeholders) != bool(source.dtypes):
        raise ValueError(f"{source.name}: type placeholders {placeholders} but run-time dtypes {source.dtypes}")
    unknown = set(source.scalars) - {p.name for p in ins}
    if unknown:
        raise ValueError(f"{source.name}: scalars {sorted(unknown)} are not input parameters")
    wrap = _elementwise if isinstance(source, ElementwiseSource) else _reduction
    made = []
    for dtype in source.dtypes or (None,):
        bound = {t: dtype for t in placeholders}
        used = {p.dtype(bound) for p in ins + outs}
        typedefs = "".join(f'#include "{CUPY_TYPE_HEADERS[d]}"\n' for d in sorted(used & CUPY_TYPE_HEADERS.keys()))
        typedefs += "".join(f"typedef {CUPY_TYPES[dtype]} {t};\n" for t in placeholders)
        name = f"{label}[{', '.join(f'{t}={dtype}' for t in placeholders)}]" if placeholders else label
        made.append(TranslationUnit(name, CUPY_HEADERS, wrap(source, ins, outs, bound, typedefs),
                                    options(source.options)))
    return made


def _signature(source, ins: list[_Param], outs: list[_Param], bound: dict) -> str:
    return ", ".join([p.declared(bound, p.name in source.scalars) for p in ins]
                     + [p.declared(bound, False) for p in outs])


def _arrays(source, params: list[_Param]) -> list[_Param]:
    """The parameters bound to one element each (arrays that are not raw)."""
    return [p for p in params if not p.raw and p.name not in source.scalars]


def _elementwise(source: ElementwiseSource, ins, outs, bound: dict, typedefs: str) -> str:
    refs = [p.bound_to("_ind.get()") for p in _arrays(source, ins + outs)]
    newline = "\n        "
    return f"""{typedefs}{source.preamble}
extern "C" __global__ void {source.name}({_signature(source, ins, outs, bound)}, CIndexer<1, 1> _ind) {{
    CUPY_FOR(i, _ind.size()) {{
        _ind.set(i);
        {newline.join(refs)}
        {source.operation};
    }}
}}
"""


def _reduction(source: ReductionSource, ins, outs, bound: dict, typedefs: str) -> str:
    reduce_type = source.reduce_type or outs[0].element_type()
    loads = [p.bound_to("_in_ind.get()", copy=True) for p in _arrays(source, ins)]
    stores = [p.bound_to("_out_ind.get()") for p in _arrays(source, outs)]
    newline = "\n            "
    return f"""{typedefs}typedef int IndexT;
{source.preamble}
#define REDUCE(a, b) ({source.reduce_expr})
#define POST_MAP(a) ({source.post_map_expr})
typedef {reduce_type} _type_reduce;
extern "C" __global__ void {source.name}({_signature(source, ins, outs, bound)}, CIndexer<1, 1> _in_ind,
                                          CIndexer<1, 1> _out_ind, const int _block_stride) {{
    // one thread per result, combining every reduced position in turn
    for (ptrdiff_t _i = (ptrdiff_t)blockIdx.x * blockDim.x + threadIdx.x; _i < _out_ind.size();
         _i += (ptrdiff_t)gridDim.x * blockDim.x) {{
        _type_reduce _s = _type_reduce({source.identity});
        IndexT _J = 0;
        for (ptrdiff_t _j = _i; _j < _in_ind.size(); _j += _out_ind.size(), ++_J) {{
            _in_ind.set(_j);
            {newline.join(loads)}
            _type_reduce _a = static_cast<_type_reduce>({source.map_expr});
            _s = REDUCE(_s, _a);
        }}
        _out_ind.set(_i);
        {newline.join(stores)}
        POST_MAP(_s);
    }}
}}
#undef REDUCE
#undef POST_MAP
"""


def combined(group: Sequence[TranslationUnit], label: str) -> TranslationUnit:
    """Units of one header list and one option set as a single unit, each in a namespace of its own (their
    helpers may share names; their kernel names must differ). One NVRTC call compiles many kernels several
    times faster than one call each. ``#include`` lines move to the top, outside every namespace."""
    first = group[0]
    if any(u.headers != first.headers or u.options != first.options for u in group):
        raise ValueError(f"{label}: only units of the same headers and options combine")
    includes: dict[str, None] = {}  # in order of first use
    bodies = []
    for k, unit in enumerate(group):
        kept = []
        for line in unit.body.splitlines():
            if line.lstrip().startswith("#include"):
                includes[line.strip()] = None
            else:
                kept.append(line)
        bodies.append(f"namespace ember_unit_{k} {{  // {unit.label}\n" + "\n".join(kept) + "\n}\n")
    return TranslationUnit(label, first.headers, "".join(f"{line}\n" for line in includes) + "".join(bodies),
                           first.options)


__all__ = ["CUPY_HEADERS", "CUPY_OPTIONS", "CUPY_TYPE_HEADERS", "CUPY_TYPES", "DEFAULT_STD", "TranslationUnit",
           "combined", "options", "units"]
