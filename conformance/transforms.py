"""Checks of the function transforms on one op: forward-mode AD (``OpDef.jvp``) and vmap (``OpDef.batch``).

- ``check_jvp``: the JVP of a gradient case against its VJP (``<J t, u> = <t, Jᵀ u>`` for random t and u), and
  against central differences of the op along t where the backend has float64.
- ``check_vmap``: vmap of the op over a batch of two samples (the sample and a perturbed copy), against a
  Python loop over the two, with every tensor operand batched, with only the first batched, and with the
  batch dim last instead of first.
"""
from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

import ember
from ember.dispatch.ops import F
from ember.func.batched import VmapUnsupported

from .checks import call, describe
from .compare import mismatch, tolerance
from .gradients import _slots, random_weights, substitute, vjp, widest_like
from .oracle import host, outputs_of, wide

_FD_STEP = 1e-6


def _dot(a, b) -> float:
    """The real inner product ``Re sum(conj(a) b)``: the one forward and reverse mode are adjoint under (PyTorch's
    convention for complex tensors); for real tensors the plain dot product."""
    return float(np.real(np.sum(np.conj(wide(a)) * wide(b))))


def _random_like(t, rng):
    values = rng.standard_normal(tuple(t.shape))
    return ember.tensor(values, dtype=t.dtype, device=t.device)


def check_jvp(case, rng, finite_differences: bool) -> bool:
    """Raise AssertionError naming the sample where the op's JVP disagrees with its VJP or with differences;
    False where the backend refuses the op on a view, which a dual tensor is (``as_strided`` on opencl)."""
    inputs = [x.detach() for x in case.inputs]
    tangents = [_random_like(x, rng) for x in inputs]
    try:
        outputs, jt = ember.func.jvp(case, tuple(inputs), tuple(tangents))
    except ember.DeviceError as exc:
        if "views" in str(exc):
            return False
        raise
    weights = random_weights(list(outputs), rng)
    leaves = [x.detach().requires_grad_() for x in inputs]
    grads = vjp(case, leaves, weights)
    forward = sum(_dot(j, w) for j, w in zip(jt, weights))
    backward = sum(_dot(t, g) for t, g in zip(tangents, grads) if g is not None)
    scale = sum(float(np.abs(wide(j)).sum() * np.abs(host(w)).max(initial=0.0))
                for j, w in zip(jt, weights)) + abs(backward) + 1e-12
    rtol = 1e-9 if case.dtype is ember.float64 else 10 * tolerance(case.op, case.dtype)[0]
    if not np.isfinite(backward):
        return True  # reverse mode's own answer is not a number here (0/0 at a degenerate sample): nothing to compare
    assert abs(forward - backward) <= rtol * scale + rtol, (
        f"{case.describe()}: <J t, u> = {forward!r} but <t, Jᵀ u> = {backward!r} (forward mode against reverse)")
    if not finite_differences or not case.sample.gradcheck:
        return True
    plus = case(*[x + _FD_STEP * t for x, t in zip(inputs, tangents)])
    minus = case(*[x - _FD_STEP * t for x, t in zip(inputs, tangents)])
    for k, (p, m, j) in enumerate(zip(plus, minus, jt)):
        expected = (wide(p) - wide(m)) / (2 * _FD_STEP)
        problem = mismatch(wide(j), expected, widest_like(j.dtype), 1e-4, 1e-5)
        assert problem is None, f"{case.describe()}: output {k}: JVP against central differences: {problem}"
    return True


# -- vmap ----------------------------------------------------------------------------------------------

UNINITIALIZED = {"empty_like", "new_empty", "new_empty_strided", "empty_strided"}  # values are whatever memory holds


def _writes(op) -> bool:
    return bool(op.mutates) or op.name.endswith("_")


def _perturbed(t, rng):
    """A second batch element near ``t``: each floating value moved 1% of the way to another of ``t``'s values,
    so that every value stays within the range of the sample's (an op's domain, as [0, 1] for probabilities)."""
    if not t.dtype.is_floating_point or t.numel() < 2:
        return F.clone(t)
    flat = F.reshape(t, (-1,))
    other = F.reshape(F.index(flat, [ember.tensor(rng.permutation(t.numel()), device=t.device)]), tuple(t.shape))
    return F.add(F.mul(t, 0.99), F.mul(other, 0.01))


def _fresh(sample):
    """The sample with its tensors copied, for ops that write into an operand."""
    return substitute(sample, {slot: F.clone(t) for slot, t in _slots(sample)})


def _outputs(op, sample) -> list:
    return [o for o in outputs_of(op, call(op, sample)) if hasattr(o, "dtype")]


def vmap_cases(op, sample, rng) -> list[tuple[str, list, list, tuple]]:
    """(label, slots, batches, in_dims) for the batchings tried on ``sample``: batches stack the sample's tensor
    and a perturbed copy, along dim 0 or, for "last", along a new last dim."""
    slots = [slot for slot, _ in _slots(sample)]
    if not slots:
        return []
    firsts = [t for _, t in _slots(sample)]
    seconds = [_perturbed(t, rng) for t in firsts]
    stacked = [F.stack([a, b]) for a, b in zip(firsts, seconds)]
    cases = [("all batched", slots, stacked, (0,) * len(slots))]
    if len(slots) > 1:
        cases.append(("first batched", slots, [stacked[0]] + firsts[1:], (0,) + (None,) * (len(slots) - 1)))
    if op.batch != "loop":  # a layout op (as_strided) reads the storage, which a batch dim last interleaves
        last = [F.movedim(s, 0, -1) for s in stacked]
        cases.append(("batch dim last", slots, last, tuple(s.dim() - 1 for s in last)))
    return cases


def check_vmap(op, sample, rng, every_batching: bool = True) -> bool:
    """Compare vmap of ``op`` at ``sample`` with a loop (every batching, or only with every operand batched);
    False where the loop itself cannot run (the op refuses the perturbed copy, or its elements' outputs differ
    in shape: nothing to batch)."""
    ran = False
    batchings = vmap_cases(op, sample, rng)
    for label, slots, batches, in_dims in batchings if every_batching else batchings[:1]:
        def function(*tensors, slots=slots):
            called = substitute(sample, dict(zip(slots, tensors)))
            return tuple(_outputs(op, _fresh(called) if _writes(op) else called))
        elements = []
        try:
            for b in range(2):
                element = [F.select(x, d, b) if d is not None else x for x, d in zip(batches, in_dims)]
                elements.append(function(*element))
            expected = [F.stack([e[k] for e in elements]) for k in range(len(elements[0]))]
        except Exception:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the loop fallback's performance warning
            try:
                actual = ember.func.vmap(function, in_dims=in_dims)(*batches)
            except VmapUnsupported:
                if _writes(op) and label != "all batched":
                    continue  # a batch written into an unbatched operand: refused, as PyTorch refuses it
                raise
            except Exception as exc:
                raise AssertionError(f"{describe(op, sample)}: vmap ({label}) raised {type(exc).__name__}: "
                                     f"{exc}") from exc
        ran = True
        for k, (a, e) in enumerate(zip(actual, expected)):
            assert tuple(a.shape) == tuple(e.shape) and a.dtype is e.dtype, (
                f"{describe(op, sample)}: vmap ({label}) output {k}: {tuple(a.shape)} {a.dtype}, the loop gives "
                f"{tuple(e.shape)} {e.dtype}")
            if op.name in UNINITIALIZED:
                continue
            rtol, atol = tolerance(op, e.dtype)
            problem = mismatch(host(a), host(e), e.dtype, rtol, atol)
            assert problem is None, f"{describe(op, sample)}: vmap ({label}) output {k} against a loop: {problem}"
    return ran


__all__ = ["check_jvp", "check_vmap", "vmap_cases", "replace"]
