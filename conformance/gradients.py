"""Gradient checks of one op, built from its declared samples: the machinery of ``test_gradients``.

A ``GradCase`` turns one sample into a function of the sample's floating tensors of the dtype
under test (its differentiable inputs), so that the same sample can be

- checked against finite differences (``ember.autograd.gradcheck`` and ``gradgradcheck``, in
  float64, where finite differences are precise enough to mean something), and
- compared with the CPU backend's float64 gradient of the very same input values, for dtypes
  too coarse for finite differences and for backends that lack float64.

Only samples that make sense for a derivative are kept: finite inputs (the special-value
samples test forward semantics, not slopes), finite outputs, at least one floating output.
Values come from the seeded ``make`` (continuous random draws), so they sit on no kink or tie
of piecewise ops. Ops whose natural domain is smaller than ``make``'s default range declare it
in ``OpDef.grad_domain``; their inputs are redrawn there.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

import ember
from ember.autograd import grad, no_grad
from ember.dispatch.ops import F

from .checks import call, describe
from .compare import mismatch, tolerance
from .gauge import invariant_outputs
from .oracle import host, is_tensor, outputs_of, wide

#: Finite-difference checks compare the whole Jacobian of inputs with at most this many entries
#: (inputs x outputs elements); bigger ones compare a random projection (fast mode), which costs two
#: forward calls and one backward however large the input is.
FULL_JACOBIAN_ENTRIES = 64


def is_gradient_op(op) -> bool:
    """Ops whose outputs can require grad: differentiable, taking tensors, not creating or drawing them."""
    return op.differentiable and op.category not in ("creation", "random") and bool(op.tensor_positions)


# -- one sample as a function of its differentiable tensors -----------------------------------------------

def _slots(sample):
    """(slot, tensor) for every tensor of a sample; a slot is ("args", i[, j]) or ("kwargs", name[, j])."""
    for where, items in (("args", enumerate(sample.args)), ("kwargs", sample.kwargs.items())):
        for key, value in items:
            if is_tensor(value):
                yield (where, key), value
            elif isinstance(value, (list, tuple)):
                for j, item in enumerate(value):
                    if is_tensor(item):
                        yield (where, key, j), item


def substitute(sample, values: dict):
    """A copy of ``sample`` with the tensors at the given slots replaced."""
    args, kwargs = list(sample.args), dict(sample.kwargs)
    for slot, value in values.items():
        container = args if slot[0] == "args" else kwargs
        if len(slot) == 2:
            container[slot[1]] = value
        else:
            items = list(container[slot[1]])
            items[slot[2]] = value
            container[slot[1]] = items
    return replace(sample, args=tuple(args), kwargs=kwargs)


class GradCase:
    """One sample of ``op``, callable as ``case(*inputs) -> floating outputs``.

    The outputs are the op's, except where it declares a gauge: eigen- and singular vectors are then replaced
    by products that do not depend on the signs a library picks (``gauge.invariant_outputs``), since only
    such functions of them have a well-defined gradient, the same on every backend.

    ``inputs`` are fresh leaves requiring grad, holding the sample's tensors of ``dtype`` with their
    layout (or those at ``slots``), less the op's ``nondifferentiable_inputs``. Ops that write into
    their first input get a copy of it on every call, so that repeated evaluations (finite
    differences) see the same input and no leaf is modified in place.
    """

    def __init__(self, op, sample, dtype, slots=None) -> None:
        self.op, self.sample, self.dtype = op, sample, dtype
        tensors = dict(_slots(sample))
        if slots is None:
            slots = [slot for slot, t in tensors.items()
                     if t.dtype is dtype and _param_name(op, slot) not in op.nondifferentiable_inputs]
        self.slots = list(slots)
        self.inputs = [tensors[slot].detach().requires_grad_() for slot in self.slots]

    def __call__(self, *tensors):
        sample = substitute(self.sample, dict(zip(self.slots, tensors)))
        if self.op.mutates:
            sample = replace(sample, args=(F.clone(sample.args[0]),) + tuple(sample.args[1:]))
        outputs = invariant_outputs(self.op, outputs_of(self.op, call(self.op, sample)))
        return tuple(o for o in outputs if o.dtype.is_inexact)

    def describe(self) -> str:
        return describe(self.op, self.sample)

    @property
    def jacobian_entries(self) -> int:
        """How many entries the full Jacobian has (for choosing full or fast finite differences)."""
        with no_grad():
            outputs = self(*self.inputs)
        return sum(t.numel() for t in self.inputs) * sum(o.numel() for o in outputs)



def _finite(t) -> bool:
    return not t.dtype.is_inexact or bool(np.all(np.isfinite(wide(t))))


def usable(case) -> str | None:
    """None when the case can be differentiated; else why not (the sample is then left out)."""
    if not case.inputs:
        return "no input of the tested dtype"
    if not all(_finite(t) for _, t in _slots(case.sample)):
        return "non-finite inputs"
    try:
        with no_grad():
            outputs = case(*case.inputs)
    except Exception as exc:  # a sample the op refuses (test_values checks the refusal)
        return f"refused: {type(exc).__name__}"
    if not outputs:
        return "no floating output"
    if not all(_finite(o) for o in outputs):
        return "non-finite outputs (outside the op's domain)"
    return None


def redraw(op, sample, make):
    """``sample`` with the inputs named in ``op.grad_domain`` redrawn there (same shape, dtype and layout)."""
    if not op.grad_domain:
        return sample
    values = {}
    for slot, t in _slots(sample):
        name = _param_name(op, slot)
        if name in op.grad_domain and t.dtype.is_inexact:
            values[slot] = make(tuple(t.shape), dtype=t.dtype, noncontiguous=not t.is_contiguous(),
                                **op.grad_domain[name])
    return substitute(sample, values) if values else sample


def _param_name(op, slot) -> str:
    if slot[0] == "kwargs":
        return slot[1]
    return op.params[slot[1]].name if slot[1] < len(op.params) else ""


def gradient_cases(op, make, dtype, samples) -> list:
    """The usable GradCases among ``samples`` (from ``fixed_samples``), inputs redrawn per ``grad_domain``."""
    cases = []
    for sample in samples:
        case = GradCase(op, redraw(op, sample, make), dtype)
        if usable(case) is None:
            cases.append(case)
    return cases


# -- vector-Jacobian products -------------------------------------------------------------------------

def vjp(fn, inputs, weights, create_graph: bool = False) -> list:
    """d(sum of weights * fn(inputs))/d(inputs), one gradient per input (None where it does not reach)."""
    outputs = fn(*inputs)
    connected = [(o, w) for o, w in zip(outputs, weights) if o.requires_grad]
    if not connected:
        return [None] * len(inputs)
    return list(grad([o for o, _ in connected], list(inputs), [w for _, w in connected],
                     create_graph=create_graph, allow_unused=True))


def first_derivative(fn, count: int):
    """``(inputs..., weights...) -> vjp``: the function whose gradients are second derivatives."""
    def derivative(*values):
        inputs, weights = values[:count], values[count:]
        grads = vjp(fn, inputs, weights, create_graph=True)
        return tuple(g if g is not None else F.zeros_like(x) for g, x in zip(grads, inputs))
    return derivative


# -- the CPU float64 reference ------------------------------------------------------------------------

def reference_case(case):
    """The same case on the CPU backend, its tensors of the tested dtype (and dtype= attributes) in float64
    (complex128 for complex dtypes).

    Other tensors (indices, masks, operands of other dtypes) move to the CPU unchanged; the
    differentiable inputs are the case's own, in the same order.
    """
    cpu = ember.device("cpu")
    widest = widest_like(case.dtype)
    values = {slot: (ember.tensor(wide(t), dtype=widest, device=cpu) if t.dtype is case.dtype else t.to(cpu))
              for slot, t in _slots(case.sample)}
    sample = substitute(case.sample, values)
    sample = replace(sample, args=tuple(_attr(a, case.dtype) for a in sample.args),
                     kwargs={k: _attr(v, case.dtype) for k, v in sample.kwargs.items()})
    return GradCase(case.op, sample, widest, case.slots)


def widest_like(dt):
    """float64, or complex128 for a complex ``dt``: where the reference gradients are computed."""
    return ember.complex128 if dt.is_complex else ember.float64


def _attr(value, dtype):
    """A ``dtype=`` attribute naming the tested dtype becomes float64 (complex128) in the reference."""
    return widest_like(dtype) if value is dtype or (isinstance(value, str) and value == dtype.name) else value


def standard_normal(rng, shape: tuple, dt) -> np.ndarray:
    """Seeded standard-normal values for a tensor of dtype ``dt``: both parts drawn for complex dtypes."""
    values = rng.standard_normal(shape)
    return np.asarray(values + 1j * rng.standard_normal(shape) if dt.is_complex else values)


def random_weights(outputs, rng) -> list:
    """One seeded standard-normal tensor per output, in the output's dtype and on its device."""
    return [ember.tensor(standard_normal(rng, tuple(o.shape), o.dtype), dtype=o.dtype, device=o.device)
            for o in outputs]


def matching(weights, outputs) -> list:
    """The same weight values in the dtypes and on the devices of ``outputs`` (the reference's)."""
    return [ember.tensor(wide(w), dtype=o.dtype, device=o.device) for w, o in zip(weights, outputs)]


def compare_gradients(case, reference, rng, order: int = 1) -> None:
    """The case's gradients (``order`` 2: second derivatives) against the reference's: dtype, device,
    shape and values within the tested dtype's tolerance. Raises AssertionError naming the sample."""
    fn, inputs = case, list(case.inputs)
    ref_fn, ref_inputs = reference, list(reference.inputs)
    if order == 2:
        with no_grad():
            outputs, ref_outputs = fn(*inputs), ref_fn(*ref_inputs)
        weights = random_weights(outputs, rng)
        ref_weights = [w.requires_grad_() for w in matching(weights, ref_outputs)]
        weights = [w.requires_grad_() for w in weights]
        fn, ref_fn = first_derivative(fn, len(inputs)), first_derivative(ref_fn, len(ref_inputs))
        inputs, ref_inputs = inputs + weights, ref_inputs + ref_weights
    with no_grad():
        outputs, ref_outputs = fn(*inputs), ref_fn(*ref_inputs)
    weights = random_weights(outputs, rng)
    ref_weights = matching(weights, ref_outputs)
    grads = vjp(fn, inputs, weights)
    expected = vjp(ref_fn, ref_inputs, ref_weights)
    rtol, atol = tolerance(case.op, case.dtype)  # atol is scaled per gradient, see gradient_mismatch
    for k, (x, g, e) in enumerate(zip(inputs, grads, expected)):
        where = f"{case.describe()}: {'second-order ' if order == 2 else ''}gradient of input {k}"
        if g is None and e is None:
            continue
        if g is None:
            g = F.zeros_like(x)
        assert g.dtype is x.dtype, f"{where} is {g.dtype.name}, the input is {x.dtype.name}"
        assert g.device == x.device, f"{where} is on {g.device}, the input on {x.device}"
        actual = host(g)
        problem = gradient_mismatch(actual, np.zeros(actual.shape) if e is None else host(e), x.dtype, rtol, atol)
        assert problem is None, f"{where} ({x.dtype.name}) differs from the CPU float64 gradient: {problem}"


def gradient_mismatch(actual, expected, dt, rtol: float, atol: float) -> str | None:
    """``compare.mismatch`` with ``atol`` relative to the gradient's largest magnitude (when above 1).

    A gradient element is a sum of products (over broadcast dims, reductions, the chain rule), so its
    rounding error in a low-precision dtype scales with the terms summed, which can dwarf the element
    itself after cancellation; a wrong formula is off by the size of the gradient, far more than this.
    """
    magnitudes = np.abs(expected[np.isfinite(expected)])
    scale = max(float(np.max(magnitudes)), 1.0) if magnitudes.size else 1.0
    return mismatch(actual, expected, dt, rtol, atol * scale)


def is_small(case) -> bool:
    """Whether finite differences should compare the whole Jacobian (else a random projection)."""
    return case.jacobian_entries <= FULL_JACOBIAN_ENTRIES


def finite_differences_apply(case) -> bool:
    """Whether finite differences can check the case: not where the sample says its gradient is a
    convention (``Sample.gradcheck``), nor where an output has less precision than the inputs (a cast
    down to float16 makes an eps-sized step invisible; other dtypes' samples cover the cast)."""
    if not case.sample.gradcheck:
        return False
    with no_grad():  # complex128 -> float64 (abs) keeps the precision
        return all(o.dtype.to_real() is case.dtype.to_real() for o in case(*case.inputs))
