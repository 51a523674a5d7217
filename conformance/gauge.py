"""Outputs that are unique only up to a gauge (``OpDef.gauge``): compared and differentiated without it.

An eigenvector is fixed by A only up to its sign, a pair of singular vectors (u_i, v_i) up to one sign for
both (complex ones: up to a phase e^{i phi}), and where values repeat only their space is fixed (any
orthonormal basis of it, turned alike in U and V). LAPACK and cuSOLVER choose differently and PyTorch promises
no choice, so the suite

- compares such outputs after moving the backend's vectors onto the reference's by the closest change the
  gauge allows (``align``): one orthogonal (unitary) matrix per block of equal values (a sign or a phase, for a
  single value),
  applied to that block of every vector output at once. A result that no such change matches still fails,
  a sign flipped in U alone or a wrong vector included;
- differentiates functions of the outputs that do not see the gauge (``invariant_outputs``), so that a
  gradient check weights what A determines, and not the sign a library happened to pick.
"""
from __future__ import annotations

import numpy as np

import ember


# -- values: align the backend's vectors with the reference's ---------------------------------------------

def align(op, actual: list, expected: list, rtol: float, atol: float) -> list:
    """``actual`` (host arrays, one per output) with its vectors moved onto ``expected``'s by the gauge.

    Values within ``atol + rtol * |value|`` of each other count as repeated. The vector outputs come back in
    float64; the others, and every output of an op without a gauge, unchanged. Arrays that cannot be aligned
    (another shape, non-finite values) come back as they are, for the comparison to report.
    """
    gauge = op.gauge
    if gauge is None:
        return actual
    positions = [op.outputs.index(name) for name, _ in gauge.vectors]
    if not all(_alignable(actual[p], expected[p]) for p in positions):
        return actual
    values = _widened(expected[op.outputs.index(gauge.values)])
    moved = [_as_columns(actual[p], axis) for p, (_, axis) in zip(positions, gauge.vectors)]
    targets = [_as_columns(expected[p], axis) for p, (_, axis) in zip(positions, gauge.vectors)]
    for index in np.ndindex(values.shape[:-1]):
        mine, theirs = [m[index] for m in moved], [t[index] for t in targets]
        for block in _blocks(values[index], rtol, atol):
            _turn(mine, theirs, block)
        for m, t in zip(mine, theirs):  # vectors past the last value: each output's own basis
            _turn([m], [t], list(range(values.shape[-1], m.shape[-1])))
    aligned = list(actual)
    for p, m, (_, axis) in zip(positions, moved, gauge.vectors):
        aligned[p] = _as_columns(m, axis)  # the same adjoint turns columns back into rows
    return aligned


def _alignable(actual: np.ndarray, expected: np.ndarray) -> bool:
    return actual.shape == expected.shape and bool(np.all(np.isfinite(_widened(actual))))


def _widened(x) -> np.ndarray:
    """A float64 (complex128, for complex ``x``) copy of ``x``."""
    x = np.asarray(x)
    return np.array(x, dtype=np.complex128 if x.dtype.kind == "c" else np.float64)


def _as_columns(x: np.ndarray, axis: int) -> np.ndarray:
    """A widened copy of ``x`` with its vectors as columns (the adjoint where ``axis`` is -2: Vh's rows are V's
    columns conjugated, and the same phase turns V's columns as U's)."""
    x = _widened(x)
    return np.conj(np.swapaxes(x, -1, -2)) if axis == -2 else x


def _blocks(values: np.ndarray, rtol: float, atol: float) -> list:
    """The indices of ``values`` (sorted, as decompositions return them) in runs of equal values."""
    blocks = []
    for i, value in enumerate(values):
        if blocks and abs(value - values[blocks[-1][-1]]) <= atol + rtol * abs(value):
            blocks[-1].append(i)
        else:
            blocks.append([i])
    return blocks


def _turn(actual: list, expected: list, block: list) -> None:
    """Turn the ``block`` columns of every ``actual`` matrix (in place) by the one orthogonal (unitary) R that
    brings them closest to ``expected``'s (least squares over all of them: R is the polar factor of sum A^H E)."""
    if not block:
        return
    overlap = sum(a[:, block].conj().T @ e[:, block] for a, e in zip(actual, expected))
    left, _, right = np.linalg.svd(overlap)
    rotation = left @ right
    for a in actual:
        a[:, block] = a[:, block] @ rotation


# -- gradients: functions of the outputs that the gauge leaves alone --------------------------------------

def invariant_outputs(op, outputs: list) -> list:
    """``outputs`` with the vector outputs replaced by products the gauge does not change.

    For the vectors C_j of each output (the first len(values), those a value determines), with weights
    c = 1, 2, ...: C_j diag(c) C_j^H, the sum of c_i c_ji c_ji^H, which no vector's sign (phase) changes, and
    C_j diag(c) C_{j+1}^H, which pairs them (u_i v_i^H keeps its sign only when u_i and v_i flip together).
    Other outputs stay. Where values repeat, the derivative of the vectors is not defined at all, so the
    samples avoid that; the products need not be blind to turns within such a block.
    """
    gauge = op.gauge
    if gauge is None:
        return outputs
    count = outputs[op.outputs.index(gauge.values)].shape[-1]
    columns = [_leading_columns(outputs[op.outputs.index(name)], axis, count) for name, axis in gauge.vectors]
    weights = _vector_weights(columns[0], count)
    products = [_weighted_product(a, weights, a) for a in columns]
    products += [_weighted_product(a, weights, b) for a, b in zip(columns, columns[1:])]
    vector_names = {name for name, _ in gauge.vectors}
    return [o for name, o in zip(op.outputs, outputs) if name not in vector_names] + products


def _leading_columns(x, axis: int, count: int):
    """The first ``count`` vectors of ``x`` as columns (of Vh: V's)."""
    columns = x if axis == -1 else _adjoint(x)
    return columns[..., :count]


def _adjoint(x):
    """x's conjugate transpose (its transpose when real)."""
    x_t = x.transpose(-1, -2)
    return x_t.conj() if x_t.is_complex() else x_t


def _vector_weights(like, count: int):
    """1, 2, ..., count: distinct, so that each vector counts on its own (equal weights would leave only
    their span, which for a square U is constant)."""
    return ember.tensor(np.arange(1.0, count + 1.0), dtype=like.dtype.to_real(), device=like.device)


def _weighted_product(a, weights, b):
    """a diag(weights) b^H, batched."""
    return (a * weights) @ _adjoint(b)
