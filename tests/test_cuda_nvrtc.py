"""Every CUDA C source the cuda backend can produce compiles with NVRTC for sm_80 and sm_90, without a GPU.

(a) The fusion renderer's kernel (``backends/cuda/fusion.py``'s ``elementwise_source``) for every op with a
``scalar=`` formula, as the one-step programs the conformance fusion test builds from the op's samples
(declared attribute variants, Python-number operands, defaults), in every dtype the cuda backend holds but
bfloat16, which the fusion declines. (b) Every kernel of ``backends/cuda/fused`` in every dtype it is
instantiated for. (c) The complex dialect (``codegen.complex_c``): every complex helper function, and the
fusion kernel of every formula op whose complex one-step program renders, whether or not the op's schema
enables complex yet. No other module of the backend holds CUDA C (rng.py calls cuRAND, conv.py cuDNN).

Each record is wrapped as CuPy 14 wraps it (``translation.py``) and compiled for real machine code. The
many fusion kernels of one dtype compile as one NVRTC call with ``--Ofast-compile=max`` (ptxas optimizes
less; what compiles does not change), which keeps the test near a minute on two cores; a failing group is
compiled member by member, so a failure names the op, its dtype and the architecture, with NVRTC's log.
The fused kernels compile one by one with exactly CuPy's options. Skips where the ``nvrtc`` extra is absent.
"""
from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass, field, replace

import pytest

from ember.backends.codegen import CUDA, complex_c, one_step_program
from ember.backends.cuda import fused, nvrtc, translation
from ember.backends.cuda.kernel_sources import ElementwiseSource, ModuleSource
from ember.dispatch import ALL_DTYPES, COMPLEX_DTYPES, OPS, UnsupportedProgram, bfloat16, bool_, complex128
from ember.dispatch.schema import REQUIRED

_REASON = nvrtc.unavailable_reason()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=f"the NVRTC compile check needs NVRTC: {_REASON}")

ARCHS = ("sm_80", "sm_90")
#: the cuda backend holds every Ember dtype (bfloat16 where CuPy can); the fusion declines bfloat16
FUSION_DTYPES = tuple(d for d in ALL_DTYPES if d is not bfloat16)
#: for the grouped fusion compiles only: ptxas spends less effort on the machine code
FAST = ("--Ofast-compile=max",)


def _failures(units: list, arch: str, extra: tuple = ()) -> list[str]:
    """NVRTC's complaint about each unit that does not compile, compiling them as one call first."""
    toolchain = nvrtc.toolchain()
    group = translation.combined(units, f"{len(units)} units") if len(units) > 1 else units[0]
    try:
        toolchain.compile(group.code, arch, (*group.options, *extra), "ember_group")
        return []
    except nvrtc.CompileError as whole:
        failed = []
        for unit in units:
            try:
                toolchain.compile(unit.code, arch, (*unit.options, *extra), "ember_kernel")
            except nvrtc.CompileError as one:
                failed.append(f"{unit.label} does not compile for {arch}:\n{one.log}")
        return failed or [f"the units compile one by one but not together (a name clash?):\n{whole.log}"]


# -- (a) the fusion renderer's kernels ------------------------------------------------------------------

@dataclass
class _FusionCatalog:
    """The fusion kernels of every op with a formula, and which formula variants they cover."""

    units: dict = field(default_factory=lambda: defaultdict(list))  # dtype name -> units (distinct code)
    compiled: dict = field(default_factory=lambda: defaultdict(set))  # (op, dtype) -> formula texts rendered
    declined: set = field(default_factory=set)  # (op, dtype) with a program the renderer declines
    reached: dict = field(default_factory=lambda: defaultdict(set))  # (op, dtype) -> texts the samples reach


@functools.cache
def _fusion_catalog() -> _FusionCatalog:
    from ember.backends.cuda.fusion import elementwise_source
    from ember.conformance.cases import accepts
    from ember.conformance.fused import NotAProgram, one_step
    from ember.conformance.make import Maker, Unsupported
    from ember.conformance.oracle import bound_values
    from ember.conformance.samples import fixed_samples
    from ember.conformance.target import resolve
    from ember.dispatch.fusion import formula

    cpu = resolve("cpu")  # builds each program the way the conformance fusion test does, on the CPU
    target = replace(cpu, dtypes=tuple(d for d in cpu.dtypes if d in FUSION_DTYPES))
    catalog, seen = _FusionCatalog(), set()
    for op in OPS.values():
        if op.scalar is None:
            continue
        defaults = tuple(op.params[i].default for i in op.attr_positions)
        for dt in target.dtypes:
            if not accepts(op, dt, target.dtypes):
                continue
            key = (op.name, dt.name)
            catalog.reached[key].add(formula(op, defaults) if all(d is not REQUIRED for d in defaults) else None)
            for sample in fixed_samples(op, Maker(target, dt, seed=0), dt):
                try:
                    values = bound_values(op, sample.args, dict(sample.kwargs))
                except Exception:  # noqa: BLE001  (the op refuses the sample as it binds it)
                    continue
                catalog.reached[key].add(formula(op, tuple(values[i] for i in op.attr_positions)))
                try:
                    program, _, _ = one_step(op, sample, target)
                except (Unsupported, NotAProgram):
                    continue  # a sample of a dtype the target lacks, or one the op refuses
                source = elementwise_source(program)
                if source is None:
                    catalog.declined.add(key)
                    continue
                catalog.compiled[key].add(formula(op, program.steps[0].attrs))
                code = (source.in_params, source.out_params, source.operation, source.preamble)
                if code not in seen:  # programs differing only in shapes are one kernel apart from its name
                    seen.add(code)
                    catalog.units[dt.name] += translation.units(source, f"{op.name} on {dt.name}: {program.key()}")
    return catalog


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype", [d.name for d in FUSION_DTYPES])
def test_fusion_kernels_compile(dtype, arch):
    units = _fusion_catalog().units[dtype]
    assert units, f"no fusion kernel was rendered for {dtype}"
    failures = _failures(units, arch, FAST)
    assert not failures, "\n\n".join(failures)


def test_every_formula_op_is_compiled_in_every_dtype():
    """Each op with a formula has a rendered kernel in each dtype it accepts, unless the renderer declines
    its programs there (integer pow): the enumeration cannot lose an op silently."""
    catalog = _fusion_catalog()
    missing = sorted(key for key in catalog.reached if key not in catalog.compiled and key not in catalog.declined)
    assert not missing, f"(op, dtype) pairs with no program to compile: {missing}"


def test_every_formula_variant_is_compiled():
    """Every formula text the op's defaults and samples reach (callable formulas differ by attribute values:
    add's alpha, gelu's approximate) is among the kernels compiled for that dtype."""
    catalog = _fusion_catalog()
    lost = {key: sorted(texts - catalog.compiled[key] - {None}) for key, texts in catalog.reached.items()
            if key not in catalog.declined and texts - catalog.compiled[key] - {None}}
    assert not lost, f"formula variants reached by samples but not compiled: {lost}"
    variants = {name: set().union(*(t for (op, _), t in catalog.compiled.items() if op == name))
                for name, op in OPS.items() if callable(op.scalar)}
    assert variants["gelu"] >= {OPS["gelu"].scalar(approximate="none"), OPS["gelu"].scalar(approximate="tanh")}
    assert variants["add"] >= {OPS["add"].scalar(alpha=1), OPS["add"].scalar(alpha=2)}


# -- (b) the fused kernels -------------------------------------------------------------------------------

def _fused_units() -> list:
    return [unit for source in fused.sources() for unit in translation.units(source)]


@pytest.mark.parametrize("arch", ARCHS)
def test_fused_kernels_compile(arch):
    failures = [failure for unit in _fused_units() for failure in _failures([unit], arch)]
    assert not failures, "\n\n".join(failures)


def test_fused_kernels_cover_every_dtype_they_run_in():
    """The float division kernels (NumPy's semantics at ±inf) are there for float16, float32 and float64."""
    labels = {unit.label for unit in _fused_units()}
    for op in ("floor_divide", "remainder"):
        assert {f"ember_{op}_float[T=float16]", f"ember_{op}_float[T=float32]",
                f"ember_{op}_double[T=float64]"} <= labels


# -- (c) the complex dialect --------------------------------------------------------------------------------

def _complex_fusion_units(dtype) -> tuple[list, set]:
    """The fusion kernel of each formula op's complex one-step program (attributes at their defaults, every
    operand complex), and the ops whose program the renderer declines (max, floor, <: undefined on complex)."""
    from ember.backends.cuda.fusion import elementwise_source
    from ember.dispatch.schema import REQUIRED
    units, declined = [], set()
    for op in OPS.values():
        defaults = tuple(op.params[i].default for i in op.attr_positions)
        if op.scalar is None or any(d is REQUIRED for d in defaults):
            continue
        dtypes = [dtype if op.params[i].type.startswith("Tensor") else bool_ for i in op.tensor_positions]
        try:
            program = one_step_program(op.name, dtypes, defaults, (4,))
            source = elementwise_source(program)
        except (UnsupportedProgram, ValueError):
            source = None
        if source is None:
            declined.add(op.name)
            continue
        units += translation.units(source, f"{op.name} on {dtype.name}")
    return units, declined


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype", [d.name for d in COMPLEX_DTYPES])
def test_complex_fusion_kernels_compile(dtype, arch):
    units, declined = _complex_fusion_units(next(d for d in COMPLEX_DTYPES if d.name == dtype))
    assert {"add", "mul", "div", "exp", "log", "sqrt", "tanh", "pow", "eq", "where", "abs"} - declined <= \
        {u.label.split(" on ")[0] for u in units}
    assert {"lt", "maximum", "floor"} <= declined  # undefined on complex numbers: declined, not miscompiled
    failures = _failures(units, arch, FAST)
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("arch", ARCHS)
def test_every_complex_helper_compiles(arch):
    """The whole helper library of both complex dtypes, the inverse functions no formula reaches included."""
    def call(name: str) -> str:
        value = f"{complex_c.function(name, complex128)}({', '.join(['in[0]'] * (2 if name == 'pow' else 1))})"
        return f"out[0].x = {value};" if name == "abs" else f"out[0] = {value};"
    calls = " ".join(call(name) for name in complex_c.FUNCTIONS)  # (the complex64 helpers compile unused)
    code = (complex_c.helpers_for(COMPLEX_DTYPES, CUDA)
            + f'extern "C" __global__ void ember_complex_helpers(const double2 *in, double2 *out) {{ {calls} }}\n')
    unit = translation.units(ModuleSource("complex helpers", code, ("--std=c++17",)))[0]
    assert not _failures([unit], arch)


# -- the check itself can fail ---------------------------------------------------------------------------

def test_a_broken_kernel_fails_and_is_named():
    good = ElementwiseSource("T x", "T y", "y = x * (T)2", "ember_good", dtypes=("float32",))
    broken = ElementwiseSource("T x", "T y", "y = ember_no_such_function(x)", "ember_broken", dtypes=("float32",))
    failures = _failures([*translation.units(good), *translation.units(broken)], "sm_90")
    assert len(failures) == 1
    assert failures[0].startswith("ember_broken[T=float32] does not compile for sm_90")
    assert "ember_no_such_function" in failures[0]


def test_the_wrapping_includes_the_headers_a_type_needs():
    """float16 is only declared by carray.cuh; CuPy includes float16.cuh where a kernel uses it, and so
    must the wrapping, or every float16 kernel would fail here while compiling on the GPU."""
    unit = translation.units(ElementwiseSource("float16 x", "float16 y", "y = x", "ember_half_copy"))[0]
    assert not _failures([unit], "sm_80")
    stripped = replace(unit, body=unit.body.replace('#include "cupy/float16.cuh"', ""))
    failures = _failures([stripped], "sm_80")
    assert len(failures) == 1 and failures[0].startswith("ember_half_copy does not compile for sm_80")
