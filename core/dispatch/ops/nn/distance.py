"""Distances between vectors: pairwise_distance, cosine_similarity and pdist, with PyTorch's signatures.

Each is a composite of Ember ops; the vectors lie along one dim (the last, for pairwise_distance and pdist).
"""
from __future__ import annotations

import numpy as np

from ...schema import rules
from ...schema.meta import broadcast_shapes, require, shape
from ...schema import FLOAT32_ON_CUDA, Sample, defop
from ..namespace import F
from ..elementwise.opmath import in_opmath
from ...schema.binding import tensor_argument
from ...schema.errors import ArgumentError


def distance_reference(x1, x2, p=2.0, eps=1e-6):
    """||x1 - x2 + eps||_p along the last dim, in NumPy: the references of the distance ops and losses."""
    difference = np.abs(x1 - x2 + eps)
    if p == 0:
        return (difference != 0).sum(-1).astype(np.float64)
    if np.isinf(p):
        return difference.max(-1) if p > 0 else difference.min(-1)
    return (difference ** p).sum(-1) ** (1 / p)


def _tensor_operands(op, args) -> None:
    """PyTorch's TypeError for a number given as either operand: these ops take no Scalar overload."""
    for position, name in enumerate(("x1", "x2"), 1):
        tensor_argument(op.name, name, args[name], position)


# -- pairwise_distance ---------------------------------------------------------------------------------------

def _pairwise_distance_meta(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    out = broadcast_shapes("pairwise_distance", shape(x1), shape(x2))
    if not out:
        return out
    return out[:-1] + (1,) if keepdim else out[:-1]


def _pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p along the last dim; eps keeps the norm's gradient finite for equal vectors."""
    return F.norm(F.add(F.sub(x1, x2), eps), p, -1, keepdim)


def _pairwise_distance_reference(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    x1, x2 = np.broadcast_arrays(x1, x2)
    if x1.ndim == 0:
        return np.abs(x1 - x2 + eps)
    out = distance_reference(x1, x2, p, eps)
    return out[..., None] if keepdim else out


def _pairwise_distance_samples(make, dtype):
    yield Sample((make((4, 5)), make((4, 5))), note="p=2")
    yield Sample((make((3, 6), noncontiguous=True), make((6,)), 1.0), {"keepdim": True}, note="broadcast, p=1")
    yield Sample((make((2, 3, 4)), make((2, 3, 4)), float("inf"), 1e-3), note="p=inf")
    yield Sample((make((5,)), make((5,)), 3.0), note="1-d, p=3")


defop("pairwise_distance(Tensor x1, Tensor x2, float p=2.0, float eps=1e-6, bool keepdim=False)", "nn",
      kind="composite", promotion=rules.same, dtypes="float", meta=_pairwise_distance_meta,
      normalize=_tensor_operands, composite=in_opmath(_pairwise_distance), reference=_pairwise_distance_reference,
      samples=_pairwise_distance_samples, method=False,
      doc="the p-norm distance ||x1 - x2 + eps||_p between the vectors along the last dim (broadcast)")


# -- cosine_similarity ---------------------------------------------------------------------------------------

def _cosine_similarity_meta(x1, x2, dim=1, eps=1e-8):
    out = broadcast_shapes("cosine_similarity", shape(x1), shape(x2))
    require(-len(out) <= dim < max(len(out), 1), "cosine_similarity",
            f"dim {dim} is out of range for inputs of {len(out)} dimensions", x1, x2)
    return tuple(s for i, s in enumerate(out) if i != dim % max(len(out), 1)) if out else out


def _unit(x, dim: int, eps: float):
    """x divided by its 2-norm clamped below at eps; as PyTorch clamps without recording, the gradient flows
    through the norm as if unclamped."""
    norm = F.norm(x, 2, dim, True)
    return F.div(x, F.add(norm, F.sub(F.clamp(norm, eps), norm).detach()))


def _cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) along dim."""
    out = broadcast_shapes("cosine_similarity", tuple(x1.shape), tuple(x2.shape))
    x1, x2 = F.expand(x1, out), F.expand(x2, out)
    return F.sum(F.mul(_unit(x1, dim, eps), _unit(x2, dim, eps)), dim)


def _cosine_similarity_reference(x1, x2, dim=1, eps=1e-8):
    x1, x2 = np.broadcast_arrays(x1, x2)

    def unit(x):
        return x / np.maximum(np.sqrt((x * x).sum(dim, keepdims=True)), eps)
    return (unit(x1) * unit(x2)).sum(dim)


def _cosine_similarity_samples(make, dtype):
    yield Sample((make((4, 5)), make((4, 5))), note="dim=1")
    yield Sample((make((3, 1, 6), noncontiguous=True), make((2, 6))), {"dim": -1}, note="broadcast, last dim")
    yield Sample((make((6,)), make((6,)), 0), note="1-d")
    yield Sample((make((3, 4)), make((3, 4), low=-1e-9, high=1e-9), 1, 1e-6), gradcheck=False,
                 note="vanishing vectors: the norms are clamped at eps")


defop("cosine_similarity(Tensor x1, Tensor x2, int dim=1, float eps=1e-8)", "nn", kind="composite",
      promotion=rules.same, dtypes="float", meta=_cosine_similarity_meta, normalize=_tensor_operands,
      composite=in_opmath(_cosine_similarity),
      reference=_cosine_similarity_reference, samples=_cosine_similarity_samples, method=False,
      autocast=FLOAT32_ON_CUDA,
      doc="the cosine of the angle between the vectors along dim (broadcast), each norm clamped below at eps")


# -- pdist ---------------------------------------------------------------------------------------------------

def _pdist_meta(input, p=2.0):
    require(len(shape(input)) == 2, "pdist", f"pdist only supports 2D tensors, got: {len(shape(input))}D", input)
    rows = shape(input)[0]
    return (rows * (rows - 1) // 2,)


def _pdist_normalize(op, args) -> None:
    if args["p"] < 0:
        raise ArgumentError(f"pdist: pdist only supports non-negative p values, got p={args['p']}")


def _pdist(input, p=2.0):
    """||x_i - x_j||_p for every pair of rows i < j, in row-major order of the pairs."""
    rows, columns = input.shape
    index = F.arange(rows, device=input.device)
    upper = F.lt(F.unsqueeze(index, 1), F.unsqueeze(index, 0))  # (i, j) with i < j
    differences = F.sub(F.unsqueeze(input, 1), F.unsqueeze(input, 0))
    mask = F.expand(F.unsqueeze(upper, 2), (rows, rows, columns))
    return F.norm(F.reshape(F.masked_select(differences, mask), (-1, columns)), p, -1)


def _pdist_reference(x, p=2.0):
    i, j = np.triu_indices(len(x), 1)
    return distance_reference(x[i], x[j], p, 0.0)


def _pdist_samples(make, dtype):
    yield Sample((make((5, 3)),), note="p=2")
    yield Sample((make((4, 6), noncontiguous=True), 1.0), note="p=1")
    yield Sample((make((3, 2)), 3.5), note="p=3.5")
    yield Sample((make((1, 4)),), note="one row: no pairs")


defop("pdist(Tensor input, float p=2)", "nn", kind="composite", promotion=rules.same, dtypes="float",
      meta=_pdist_meta, normalize=_pdist_normalize, composite=in_opmath(_pdist), reference=_pdist_reference,
      samples=_pdist_samples, method=False, autocast=FLOAT32_ON_CUDA,
      doc="the p-norm distance between every pair of rows i < j of an (N, M) input: N * (N - 1) / 2 values")
