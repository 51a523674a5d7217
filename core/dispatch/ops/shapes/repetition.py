"""``Tensor.repeat``: tile a tensor along every dim, composed of a reshape, an expand and a copy.

Viewing each dim ``s`` as ``(1, s)`` and expanding the 1 to the repeat count ``r`` lays out ``r``
back-to-back copies of the dim; a copy then a reshape merges each ``(r, s)`` pair into ``r * s``.
"""
from __future__ import annotations

import numpy as np

from ...schema import rules
from ...schema.errors import ShapeError, describe
from ...schema.meta import shape
from ...schema import Sample, defop
from ..namespace import F


def _check(op, args):
    x, repeats = args["input"], args["repeats"]
    if len(repeats) < len(shape(x)):
        raise ShapeError(f"repeat: the number of repeats ({len(repeats)}) can not be smaller than the number of "
                         f"dimensions of the tensor ({describe(x)})")
    if any(r < 0 for r in repeats):
        raise ShapeError(f"repeat: repeats must be non-negative, got {tuple(repeats)}")


def _padded_shape(in_shape: tuple, repeats) -> tuple:
    return (1,) * (len(repeats) - len(in_shape)) + tuple(in_shape)


def _meta(x, repeats):
    return tuple(r * s for r, s in zip(repeats, _padded_shape(shape(x), repeats)))


def _repeat(x, repeats):
    sizes = _padded_shape(tuple(x.shape), repeats)
    pairs_of_one = tuple(d for s in sizes for d in (1, s))
    pairs = tuple(d for r, s in zip(repeats, sizes) for d in (r, s))
    tiled = F.clone(F.expand(F.reshape(x, pairs_of_one), pairs))
    return F.reshape(tiled, _meta(x, repeats))


def _repeat_onnx(g, input, repeats):
    """ONNX Tile, after new leading dims of size 1 for the repeats beyond the input's dims."""
    new_dims = len(repeats) - len(g.shape_of(input))
    if not repeats:
        return g.op("Identity", input)
    padded = g.unsqueeze(input, list(range(new_dims))) if new_dims else input
    return g.op("Tile", padded, g.ints(repeats))


def _samples(make, dtype):
    yield Sample((make((2, 3)), [2, 1]))
    yield Sample((make((2, 3), noncontiguous=True), [3, 1, 2]), note="more repeats than dims")
    yield Sample((make((3,)), [0]), note="zero repeats")
    yield Sample((make(()), [4]), note="0-d")
    yield Sample((make(()), []), note="0-d, no repeats: a copy")
    yield Sample((make((0, 2)), [2, 2]), note="empty")


defop("repeat(Tensor input, int[] repeats)", "view", kind="composite", promotion=rules.passthrough,
      meta=_meta, normalize=_check, composite=_repeat, onnx=_repeat_onnx,
      reference=lambda x, repeats: np.tile(x, repeats) if len(repeats) else np.array(x),
      samples=_samples, doc="input tiled repeats[d] times along each dim d (leading dims added as needed); a copy")
