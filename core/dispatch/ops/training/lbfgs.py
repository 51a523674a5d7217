"""L-BFGS's search direction as one op: the two-loop recursion over the stored curvature pairs.

``ember.optim.LBFGS`` needs ``-H @ g`` every iteration, ``H`` being its inverse-Hessian estimate built from
the last ``m`` pairs (y = change of gradient, s = step). Written as tensor ops that is 4 m small dispatches
(a dot and an axpy per pair and loop), which at one thread cost far more than their arithmetic; declared
as one op, the same recursion stays written in Ember ops (so every backend runs it, with no host read) and
a backend may run it as one kernel. Ember's own op: PyTorch runs the loop in Python.
"""
from __future__ import annotations

import numpy as np

from ...schema import Sample, defop
from ...schema.errors import ArgumentError, DtypeError, describe
from ...schema.meta import require, shape
from ..namespace import F

_NAME = "_lbfgs_direction"


def _two_loop(flat_grad, old_dirs, old_stps, ro, H_diag):
    """PyTorch's order of operations: ``al[i] = s_i . q * ro[i]``, ``q -= al[i] y_i`` from the newest pair
    back, ``r = q * H_diag``, then ``r += (al[i] - y_i . r * ro[i]) s_i`` from the oldest pair on."""
    q = F.neg(flat_grad)
    alphas = [None] * len(old_dirs)
    for i in range(len(old_dirs) - 1, -1, -1):
        alphas[i] = F.mul(F.dot(old_stps[i], q), ro[i])
        q = F.sub(q, F.mul(old_dirs[i], alphas[i]))
    r = F.mul(q, H_diag)
    for i in range(len(old_dirs)):
        beta = F.mul(F.dot(old_dirs[i], r), ro[i])
        r = F.add(r, F.mul(old_stps[i], F.sub(alphas[i], beta)))
    return r


def _reference(flat_grad, old_dirs, old_stps, ro, H_diag):
    """The same recursion in NumPy."""
    q = -np.asarray(flat_grad)
    alphas = [0.0] * len(old_dirs)
    for i in range(len(old_dirs) - 1, -1, -1):
        alphas[i] = np.dot(old_stps[i], q) * ro[i]
        q = q - alphas[i] * old_dirs[i]
    r = q * H_diag
    for i in range(len(old_dirs)):
        r = r + (alphas[i] - np.dot(old_dirs[i], r) * ro[i]) * old_stps[i]
    return r.astype(np.asarray(flat_grad).dtype)


def _promotion(rt, op, args):
    """No promotion: the history has the gradient's floating dtype, which the direction takes."""
    grad = args["flat_grad"]
    if not grad._dtype.is_floating_point:
        raise DtypeError(f"{_NAME}: flat_grad must be floating point, got {describe(grad)}")
    for name in ("old_dirs", "old_stps"):
        value = args[name]
        for t in value if isinstance(value, (list, tuple)) else (value,):
            if not hasattr(t, "_dtype"):
                raise TypeError(f"{_NAME}(): {name} must hold Tensors, not {type(t).__name__}")
            if t._dtype is not grad._dtype:
                raise DtypeError(f"{_NAME}: {name} must have the gradient's dtype, got {describe(grad)} and "
                                 f"{describe(t)}")
    return None, grad._dtype


def _normalize(op, args) -> None:
    ro = args["ro"]
    if not isinstance(ro, (list, tuple)) or not all(isinstance(v, (int, float)) for v in ro):
        raise ArgumentError(f"{_NAME}: ro must be a list of numbers (1 / y.s per pair), got {ro!r}")
    args["ro"] = tuple(float(v) for v in ro)


def _meta(flat_grad, old_dirs, old_stps, ro, H_diag):
    require(len(shape(flat_grad)) == 1, _NAME, "flat_grad must be 1-D", flat_grad)
    require(len(old_dirs) == len(old_stps) == len(ro), _NAME, f"needs one y, one s and one ro per pair: "
            f"{len(old_dirs)} old_dirs, {len(old_stps)} old_stps, {len(ro)} ro", *old_dirs[:1], *old_stps[:1])
    for t in (*old_dirs, *old_stps):
        require(shape(t) == shape(flat_grad), _NAME, f"every stored pair must have the gradient's shape "
                f"{shape(flat_grad)}", flat_grad, t)
    return shape(flat_grad)


def _samples(make, dtype):
    def pairs(m: int, n: int, noncontiguous: bool = False):
        # y close to s, as in the pairs LBFGS keeps (y.s > 0), and ro near 1 / y.s (about 1 / (8 n) for
        # values uniform in [-5, 5)), so that the recursion stays well conditioned in half precision too
        steps = [make((n,), noncontiguous=noncontiguous) for _ in range(m)]
        dirs = [F.add(s, F.mul(make((n,), noncontiguous=noncontiguous), 0.1)) for s in steps]
        return dirs, steps, [(0.1 + 0.02 * i) / n for i in range(m)]
    dirs, steps, ro = pairs(3, 7)
    yield Sample((make((7,)), dirs, steps, ro, 0.8), note="three pairs")
    dirs, steps, ro = pairs(1, 4, noncontiguous=True)
    yield Sample((make((4,), noncontiguous=True), dirs, steps, ro, 0.3), note="one pair, non-contiguous")


defop("_lbfgs_direction(Tensor flat_grad, Tensor[] old_dirs, Tensor[] old_stps, Any ro, float H_diag)", "nn",
      kind="composite", promotion=_promotion, dtypes="float", normalize=_normalize, meta=_meta,
      composite=_two_loop, reference=_reference, samples=_samples, method=False, differentiable=False,
      unkeyed=("ro", "H_diag"),  # change every iteration; no check or plan depends on their values
      tolerances={"float16": (3e-2, 3e-2), "bfloat16": (1e-1, 1e-1)},
      doc="L-BFGS's direction -H @ flat_grad by the two-loop recursion over one or more curvature pairs "
          "(old_dirs: gradient changes y, old_stps: steps s, ro: 1 / y.s, oldest first) from the initial scale "
          "H_diag")
