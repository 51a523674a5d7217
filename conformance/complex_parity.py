"""Parity with PyTorch on complex numbers: every op that accepts complex, and every ``ember.fft`` op, against torch.

For each op and dtype (complex64 and complex128 inputs; the fft ops also on float32/float64, whose transforms
are complex), the op's conformance samples run on the backend under test and, converted value for value, in
PyTorch on the CPU. Values and the gradients of ``sum Re(conj(v) * out)`` with respect to every input of the
tested dtype (the same seeded ``v`` on both sides, PyTorch's convention for complex gradients on both) are
compared: the largest absolute error and the largest error relative to the largest expected magnitude, for a
row per op and dtype. A row passes when both are within the dtype's tolerance (``compare.tolerance``) and
NaN and infinities sit where PyTorch's do. ``scripts/complex_parity.py`` prints the table; see ``main``.
"""
from __future__ import annotations

import argparse
import warnings
from dataclasses import dataclass, field, replace

import numpy as np

import ember
from ember.autograd import grad as ember_grad
from ember.dispatch import builtin_ops

from .cases import accepts
from .checks import call, on_device
from .compare import _differ, tolerance
from .gauge import align
from .gradients import standard_normal
from .make import Maker, Unsupported
from .oracle import host, is_tensor, multi_output, outputs_of
from .samples import fixed_samples
from .target import optional_kernels_fall_back, resolve
from .transforms import UNINITIALIZED

#: Where a torch function of an Ember op's name may live, tried in order: (namespace, prefix to drop).
TORCH_NAMESPACES = (("", ""), ("linalg", "linalg_"), ("fft", "fft_"), ("special", "special_"),
                    ("nn.functional", ""), ("ops.aten", ""), ("Tensor", ""))
#: Ember ops whose name finds the wrong torch function (or none) in TORCH_NAMESPACES: where their torch
#: counterpart is, or (primitives without one) the torch expression of their semantics.
TORCH_NAMES = {"unfold": "Tensor.unfold", "slice": "ops.aten.slice",
               "index": lambda x, indices: x[tuple(slice(None) if i is None else i for i in indices)],
               "to_dtype": lambda x, dtype: x.to(dtype)}
#: Ops whose inputs may be real and whose outputs are complex: they are compared on floating inputs too.
REAL_INPUT_PREFIXES = ("fft_", "_fft_r2c", "stft", "istft")


@dataclass
class Row:
    """One op and dtype: the largest errors over its samples, and why it could not be compared, if so."""

    op: str
    dtype: str
    samples: int = 0
    value_abs: float = 0.0
    value_rel: float = 0.0
    grad_abs: float | None = None
    grad_rel: float | None = None
    problems: list = field(default_factory=list)  # why it fails
    notes: list = field(default_factory=list)  # what differs without failing it (see compare_sample)

    @property
    def passed(self) -> bool:
        return self.samples > 0 and not self.problems

    @property
    def compared(self) -> bool:
        """False where nothing could be compared (no torch counterpart, or torch takes other arguments)."""
        return self.samples > 0 or bool(self.problems)


def torch_function(name: str):
    """The PyTorch function (or Tensor method) an Ember op name stands for, or None."""
    import torch
    if callable(TORCH_NAMES.get(name)):
        return TORCH_NAMES[name]
    if name in TORCH_NAMES:
        *namespace, attribute = TORCH_NAMES[name].split(".")
        places = ((".".join(namespace), attribute),)
    else:
        places = ((namespace, name[len(prefix):]) for namespace, prefix in TORCH_NAMESPACES if name.startswith(prefix))
    for namespace, attribute in places:
        holder = torch
        for part in filter(None, namespace.split(".")):
            holder = getattr(holder, part)
        fn = getattr(holder, attribute, None)
        if callable(fn):
            return fn
    return None


def tested_dtypes(op, supported) -> list:
    """complex64 and complex128 where the op and the backend accept them (the fft ops: float32/float64 too)."""
    names = ["complex64", "complex128"]
    if op.name.startswith(REAL_INPUT_PREFIXES):
        names = ["float32", "float64"] + names
    dtypes = [getattr(ember, n) for n in names]
    return [dt for dt in dtypes if dt in supported and accepts(op, dt, supported)]


def is_candidate(op) -> bool:
    """Ops taking tensors and computing values: random ops and uninitialized memory have none to compare."""
    return (bool(op.tensor_positions) and op.category != "random" and op.name not in UNINITIALIZED
            and not op.name.startswith(("_foreach", "_fused")))


# -- converting a sample to torch ----------------------------------------------------------------------------

def to_torch(value, requires_grad_dtype=None, param=None):
    """Ember tensors (anywhere in lists) as CPU torch tensors with the same values; dtypes (and, for ``dtype``
    parameters, dtype names) as torch's."""
    import torch
    if is_tensor(value):
        t = torch.from_numpy(np.array(host(value), copy=True))
        return t.requires_grad_() if value.dtype is requires_grad_dtype else t
    if isinstance(value, ember.dtype) or (isinstance(value, str) and param is not None and "dtype" in param.type):
        return getattr(torch, ember.dispatch.schema.dtypes.as_dtype(value).name)
    if isinstance(value, (list, tuple)) and any(is_tensor(v) for v in value):
        return type(value)(to_torch(v, requires_grad_dtype) for v in value)
    return value


def _torch_outputs(op, result) -> list:
    return list(result) if multi_output(op) else [result]


def _as_leaves(value, dtype):
    """Ember tensors of ``dtype`` (in lists too) as fresh leaves requiring grad, as ``to_torch`` makes them."""
    if is_tensor(value) and value.dtype is dtype:
        return value.detach().requires_grad_()
    if isinstance(value, (list, tuple)) and any(is_tensor(v) for v in value):
        return type(value)(_as_leaves(v, dtype) for v in value)
    return value


def _tensors(sample) -> list:
    return [t for v in (*sample.args, *sample.kwargs.values())
            for t in (v if isinstance(v, (list, tuple)) else (v,)) if is_tensor(t)]


def _leaves(values) -> list:
    """The tensors requiring grad among ``values`` (in lists too), in order."""
    out = []
    for v in values:
        items = v if isinstance(v, (list, tuple)) else (v,)
        out += [t for t in items if getattr(t, "requires_grad", False)]
    return out


# -- errors --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Errors:
    """How far ``actual`` is from ``expected``, over the positions where both are finite."""

    absolute: float  # the largest |actual - expected|
    scale: float  # the largest |expected|
    specials_match: bool  # NaN and infinities at the same positions (a complex NaN is NaN in either part)

    @property
    def relative(self) -> float:
        return self.absolute / self.scale if self.scale else (0.0 if self.absolute == 0 else float("inf"))

    def within(self, rtol: float, atol: float) -> bool:
        """Normwise, over the finite positions: the largest error against ``atol`` plus ``rtol`` times the largest
        magnitude."""
        return self.absolute <= atol + rtol * self.scale


def errors(actual: np.ndarray, expected: np.ndarray) -> Errors:
    """The Errors of two arrays of one shape (real or complex)."""
    wide = np.complex128 if np.iscomplexobj(actual) or np.iscomplexobj(expected) else np.float64
    a, e = np.asarray(actual).astype(wide), np.asarray(expected).astype(wide)
    finite = np.isfinite(a) & np.isfinite(e)
    specials_match = not np.any(_differ(a[~finite], e[~finite], 0.0, 0.0))
    if not np.any(finite):
        return Errors(0.0, 0.0, specials_match)
    return Errors(float(np.max(np.abs(a[finite] - e[finite]))), float(np.max(np.abs(e[finite]))), specials_match)


def _record(row: Row, kind: str, actual: np.ndarray, expected: np.ndarray, dt, op, what: str,
            special_inputs: bool = False) -> None:
    if actual.shape != expected.shape:
        row.problems.append(f"{what}: shape {actual.shape}, torch {expected.shape}")
        return
    found = errors(actual, expected)
    if kind == "value":
        row.value_abs, row.value_rel = max(row.value_abs, found.absolute), max(row.value_rel, found.relative)
    else:
        row.grad_abs = max(row.grad_abs or 0.0, found.absolute)
        row.grad_rel = max(row.grad_rel or 0.0, found.relative)
    rtol, atol = tolerance(op, dt)
    if not found.specials_match:
        (row.notes if special_inputs else row.problems).append(f"{what}: NaN or infinities where torch has others"
                                                               + (" (special-value inputs)" if special_inputs else ""))
    if not found.within(rtol, atol):
        row.problems.append(f"{what}: error {found.absolute:.3g} (relative {found.relative:.3g}) beyond "
                            f"rtol={rtol}, atol={atol}")


# -- one sample ------------------------------------------------------------------------------------------------

def compare_sample(op, sample, dtype, row: Row, rng, gradients: bool) -> None:
    """Run ``sample`` in Ember and in torch; add its errors (and problems) to ``row``.

    Where the sample's inputs hold NaN or infinities, results that put them elsewhere than PyTorch are a note,
    not a failure: C99's complex special values are a convention that PyTorch itself bends (its ``add`` with
    ``alpha`` multiplies by ``1 + 0j``, so ``(inf + 0j) + (inf + 0j)`` is ``inf + nanj`` there). An input that
    torch refuses must be refused by Ember too, except an empty one (MKL refuses some empty strided FFTs): a
    note then, as is a sample whose arguments torch cannot take (a TypeError: the signatures differ)."""
    torch_fn = torch_function(op.name)
    # a sample marked gradcheck=False has no meaningful gradient (a Hermitian input whose one triangle is read)
    differentiate = gradients and op.differentiable and not op.mutates and sample.gradcheck
    try:
        targs, tkwargs, expected = _run_torch(op, torch_fn, sample, dtype if differentiate else None)
    except _NoComplexDerivative:  # torch computes the values but has no derivative for them: compare those
        row.notes.append("torch has no complex derivative")
        differentiate = False
        targs, tkwargs, expected = _run_torch(op, torch_fn, sample, None)
    except TypeError as exc:  # the signatures differ beyond what _run_torch bridges: nothing to compare
        row.notes.append(f"torch takes other arguments: {_brief(exc)}")
        return
    except Exception as exc:
        _torch_refused(op, sample, row, _brief(exc))
        return
    special_inputs = any(not np.all(np.isfinite(host(t))) for t in _tensors(sample))
    if differentiate:
        sample = replace(sample, args=tuple(_as_leaves(a, dtype) for a in sample.args),
                         kwargs={k: _as_leaves(v, dtype) for k, v in sample.kwargs.items()})
    try:
        actual = outputs_of(op, call(op, sample))
    except Exception as exc:
        row.problems.append(f"ember refused: {_brief(exc)}")
        return
    if len(actual) != len(expected):
        row.problems.append(f"{len(actual)} outputs, torch has {len(expected)}")
        return
    row.samples += 1
    hosts = [host(t) for t in actual]
    wanted = [_torch_host(t) for t in expected]
    if op.gauge is not None:
        hosts = align(op, hosts, wanted, *tolerance(op, dtype))
    for k, (a, e, t) in enumerate(zip(hosts, wanted, actual)):
        _record(row, "value", a, e, t.dtype, op, f"output {k}", special_inputs)
    if differentiate and not special_inputs:
        try:
            _compare_gradients(op, sample, actual, expected, (targs, tkwargs), row, rng)
        except Exception as exc:
            row.problems.append(f"gradients raise {_brief(exc)}")


class _NoComplexDerivative(Exception):
    pass


def _run_torch(op, torch_fn, sample, requires_grad_dtype):
    """(torch args, torch kwargs, outputs) of the sample in torch. Tensor lists that torch takes as separate
    arguments (``broadcast_tensors(*tensors)``) are spread, and attributes that torch takes by keyword only
    are passed by their Ember names, when the call as Ember makes it is refused."""
    def convert(name, value):
        return to_torch(value, requires_grad_dtype, op.params[op.param_index[name]] if name in op.param_index else None)
    targs = [convert(op.params[i].name if i < len(op.params) else "", a) for i, a in enumerate(sample.args)]
    tkwargs = {k: convert(k, v) for k, v in sample.kwargs.items() if k != "device"}
    attempts = [(targs, tkwargs)]
    if targs and isinstance(targs[0], list):
        attempts.append(([*targs[0], *targs[1:]], tkwargs))
    named = {op.params[i].name: a for i, a in enumerate(targs[1:], 1) if i < len(op.params)}
    attempts.append((targs[:1], {**named, **tkwargs}))
    for k, (args, kwargs) in enumerate(attempts):
        try:
            with warnings.catch_warnings():  # torch's casts of complex to real, where a sample asks for one
                warnings.filterwarnings("ignore", "Casting complex values to real", UserWarning)
                return args, kwargs, _torch_outputs(op, torch_fn(*args, **kwargs))
        except RuntimeError as exc:
            if "does not support automatic differentiation" in str(exc):
                raise _NoComplexDerivative() from exc
            if k == len(attempts) - 1:
                raise
        except TypeError:
            if k == len(attempts) - 1:
                raise
    raise AssertionError("unreachable")


def _torch_host(t) -> np.ndarray:
    """A torch result's values (conjugate and negative views resolved: torch's conj is lazy)."""
    if not hasattr(t, "detach"):
        return np.asarray(t)
    return t.detach().resolve_conj().resolve_neg().numpy()


def _brief(exc: Exception) -> str:
    return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:80]}"


def _torch_refused(op, sample, row: Row, why: str) -> None:
    try:
        call(op, sample)
    except Exception:
        return  # both refuse
    if any(t.numel() == 0 for t in _tensors(sample)):
        row.notes.append(f"torch refuses an empty input that ember computes: {why}")
    else:
        row.problems.append(f"torch refuses an input that ember computes: {why}")


def _compare_gradients(op, sample, actual, expected, torch_inputs, row, rng) -> None:
    """Gradients of ``sum Re(conj(v) * out)`` with respect to the tested inputs, in both frameworks."""
    import torch
    targs, tkwargs = torch_inputs
    chosen = range(len(actual)) if op.gauge is None else [op.outputs.index(op.gauge.values)]
    pairs = [(actual[k], expected[k]) for k in chosen
             if actual[k].dtype.is_inexact and actual[k].requires_grad and expected[k].requires_grad]
    inputs = _leaves([*sample.args, *sample.kwargs.values()])
    tinputs = _leaves([*targs, *tkwargs.values()])
    if not pairs or not inputs or len(inputs) != len(tinputs):
        return
    weights = [standard_normal(rng, tuple(a.shape), a.dtype) for a, _ in pairs]
    try:
        tgrads = torch.autograd.grad([e for _, e in pairs], tinputs,
                                     [torch.from_numpy(w).to(e.dtype) for w, (_, e) in zip(weights, pairs)],
                                     allow_unused=True)
    except RuntimeError as exc:
        row.notes.append(f"torch's gradient raises {_brief(exc)}")
        return
    grads = ember_grad([a for a, _ in pairs], inputs,
                       [ember.tensor(w, dtype=a.dtype, device=a.device) for w, (a, _) in zip(weights, pairs)],
                       allow_unused=True)
    for k, (g, tg, x) in enumerate(zip(grads, tgrads, inputs)):
        a = np.zeros(tuple(x.shape)) if g is None else host(g)
        e = np.zeros(tuple(x.shape)) if tg is None else _torch_host(tg)
        _record(row, "grad", a, e, x.dtype, op, f"gradient of input {k}")


# -- every op ------------------------------------------------------------------------------------------------

def parity_rows(backend: str = "cpu", names=None, gradients: bool = True, seed: int = 0) -> list[Row]:
    """A Row per op and dtype (``names``: only those ops) on ``backend``."""
    target = resolve(backend)
    if not target.available:
        raise RuntimeError(f"complex_parity: backend {backend!r} is unavailable: {target.reason}")
    rows = []
    with optional_kernels_fall_back(target):  # as the suite runs them (see conftest)
        for op in builtin_ops():
            if (names is not None and op.name not in names) or not is_candidate(op):
                continue
            for dt in tested_dtypes(op, target.dtypes):
                rows.append(_row(op, dt, target, gradients, seed))
    return rows


def _row(op, dt, target, gradients: bool, seed: int) -> Row:
    row = Row(op.name, dt.name)
    if torch_function(op.name) is None:
        row.notes.append("no torch counterpart")
        return row
    rng = np.random.default_rng(seed)
    make = Maker(target, dt, seed)
    try:
        samples = fixed_samples(op, make, dt)
    except Unsupported:
        samples = []
    except Exception as exc:  # drawing the samples runs Ember ops, which may refuse complex
        row.problems.append(f"its samples raise {_brief(exc)}")
        return row
    for sample in samples:
        compare_sample(op, on_device(op, sample, target.device), dt, row, rng, gradients)
    if not samples:
        row.notes.append("no sample")
    return row


# -- the table -----------------------------------------------------------------------------------------------

def _number(x) -> str:
    return "-" if x is None else f"{x:.1e}"


def table(rows: list[Row]) -> list[str]:
    """The report's lines: one per row, then the summary line."""
    lines = [f"{'op':<34} {'dtype':<10} {'n':>2} {'val abs':>8} {'val rel':>8} {'grad abs':>8} {'grad rel':>8}  "
             "result"]
    for r in rows:
        verdict = "pass" if r.passed else ("FAIL: " + "; ".join(dict.fromkeys(r.problems)) if r.compared
                                           else "not compared")
        if r.notes:
            verdict += " (" + "; ".join(dict.fromkeys(r.notes)) + ")"
        lines.append(f"{r.op:<34} {r.dtype:<10} {r.samples:>2} {_number(r.value_abs):>8} {_number(r.value_rel):>8} "
                     f"{_number(r.grad_abs):>8} {_number(r.grad_rel):>8}  {verdict}")
    lines.append(summary(rows))
    return lines


def summary(rows: list[Row]) -> str:
    passed = sum(r.passed for r in rows)
    uncompared = sum(not r.compared for r in rows)
    ops = len({r.op for r in rows})
    return (f"complex parity: {passed} of {len(rows)} op x dtype pairs pass ({ops} ops); "
            f"{len(rows) - passed - uncompared} fail, {uncompared} not compared")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/complex_parity.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="cpu", help="an installed backend: cpu, opencl, template, ...")
    parser.add_argument("--ops", help="comma-separated op names (default: every op accepting complex)")
    parser.add_argument("--no-grad", action="store_true", help="compare values only")
    parser.add_argument("--failures", action="store_true", help="print only the rows that fail")
    args = parser.parse_args(argv)
    rows = parity_rows(args.backend, args.ops.split(",") if args.ops else None, gradients=not args.no_grad)
    lines = table([r for r in rows if not (args.failures and r.passed)])
    print("\n".join(lines[:-1] + [summary(rows)]))
    return 0 if all(r.passed or not r.compared for r in rows) else 1
