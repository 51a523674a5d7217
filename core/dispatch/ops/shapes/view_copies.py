"""The ``*_copy`` ops: each view op's result in fresh memory (PyTorch's functionalized forms, as
``torch.expand_copy``), plus narrow and narrow_copy (one set of checks, shapes, reference and samples).

Each borrows its view op's checks (which then name the copy), shape inference, NumPy reference and samples,
looked up when first used (so the view may be declared in any module), and returns a clone of the view: its
derivative is the view's.
"""
from __future__ import annotations

import numpy as np

from ...schema import rules
from ...schema.bound import BoundArgs
from ...schema.errors import OutOfRangeError, describe
from ...schema.meta import require_dims, shape
from ...schema import OPS, Sample, defop
from ..namespace import F


def _copied(value):
    return tuple(F.clone(v) for v in value) if isinstance(value, tuple) else F.clone(value)


def _np_copied(value):
    return tuple(np.array(v) for v in value) if isinstance(value, (tuple, list)) else np.array(value)


def _view_checks(view: str):
    """The normalize hook of a copy: the view's hook, reading the copy's values by the view's parameter names
    (the copy may rename one, as split_copy's split_size), and given the copy op so that its errors name the
    op that was called (permute_copy, not permute)."""
    def normalize(op, args):
        hook = OPS[view].normalize
        if hook is not None:
            hook(op, BoundArgs(OPS[view], args.values))
    return normalize


def _copy_of(signature: str, view: str) -> None:
    """Declare ``signature`` (the view's parameters first, then any of PyTorch's extra keywords that a copy
    ignores) as the copy of the op ``view``."""
    defop(signature, "view", kind="composite", promotion=rules.passthrough, method=False,
          outputs=OPS[view].outputs if view in OPS else ("out",),
          meta=lambda *args: OPS[view].meta(*args[:len(OPS[view].params)]),
          normalize=_view_checks(view),
          composite=lambda *args: _copied(getattr(F, view)(*args[:len(OPS[view].params)])),
          reference=lambda *args: _np_copied(OPS[view].reference(*args[:len(OPS[view].params)])),
          samples=lambda make, dtype: OPS[view].samples(make, dtype),
          doc=f"{view}(...) in fresh memory rather than as a view of input")


_copy_of("expand_copy(Tensor input, int[] size, *, bool implicit=False)", "expand")
_copy_of("permute_copy(Tensor input, int[] dims)", "permute")
_copy_of("select_copy(Tensor input, dim dim, int index)", "select")
_copy_of("slice_copy(Tensor input, dim dim=0, int? start=None, int? end=None, int step=1)", "slice")
_copy_of("split_copy(Tensor input, Any split_size, dim dim=0)", "split")
_copy_of("split_with_sizes_copy(Tensor input, int[] split_sizes, dim dim=0)", "split_with_sizes")
_copy_of("squeeze_copy(Tensor input, dim[]? dim=None)", "squeeze")
_copy_of("t_copy(Tensor input)", "t")
_copy_of("transpose_copy(Tensor input, dim dim0, dim dim1)", "transpose")
_copy_of("unbind_copy(Tensor input, dim dim=0)", "unbind")
_copy_of("unfold_copy(Tensor input, dim dimension, int size, int step)", "unfold")
_copy_of("unsqueeze_copy(Tensor input, int dim)", "unsqueeze")
_copy_of("view_copy(Tensor input, int[] size)", "view")
_copy_of("diagonal_copy(Tensor input, int offset=0, dim dim1=0, dim dim2=1)", "diagonal")
_copy_of("alias_copy(Tensor input)", "clone")
_copy_of("as_strided_copy(Tensor input, int[] size, int[] stride, int? storage_offset=None)", "as_strided")


def _detach_samples(make, dtype):
    yield Sample((make((2, 3)),))
    yield Sample((make((3, 4), noncontiguous=True),), note="non-contiguous")
    yield Sample((make(()),), note="0-d")


defop("detach_copy(Tensor input)", "view", kind="composite", promotion=rules.passthrough, method=False,
      differentiable=False, meta=lambda x: shape(x), composite=lambda x: F.clone(x).detach(),
      reference=np.array, samples=_detach_samples,
      doc="a copy of input in fresh memory, cut off from the autograd graph")


# -- narrow, narrow_copy ------------------------------------------------------------------------------------

def _narrow_normalize(op, args):
    """narrow's rules, for narrow and narrow_copy (each named in its errors): start may count from the end;
    start + length must fit the dim."""
    x, dim, start, length = args["input"], args["dim"], args["start"], args["length"]
    require_dims(op.name, x)
    size = shape(x)[dim]
    if not -size <= start <= size:
        raise OutOfRangeError(f"{op.name}: start {start} out of range for dim {dim} of size {size} "
                              f"(expected {-size}..{size})")
    if length < 0:
        raise OutOfRangeError(f"{op.name}: length must be non-negative, got {length} ({describe(x)})")
    start %= size if size else 1
    if start + length > size:
        raise OutOfRangeError(f"{op.name}: start ({start}) + length ({length}) exceeds dimension size ({size}) "
                              f"of dim {dim} ({describe(x)})")
    args["start"] = start


def _narrow_meta(x, dim, start, length):
    return shape(x)[:dim] + (length,) + shape(x)[dim + 1:]


def _narrow_reference(x, dim, start, length):
    return np.take(x, np.arange(start, start + length) % max(x.shape[dim], 1), axis=dim)


def _narrow_samples(make, dtype):
    yield Sample((make((5, 3)), 0, 1, 3))
    yield Sample((make((3, 6), noncontiguous=True), -1, -4, 2), note="negative dim and start")
    yield Sample((make((2, 4)), 1, -2, 2), note="negative start up to the end")
    yield Sample((make((4,)), 0, 4, 0), note="empty")


def _narrow(x, dim, start, length):
    return F.slice(x, dim, start, start + length)


defop("narrow(Tensor input, dim dim, int start, int length)", "view", kind="composite", varying=("start",),
      promotion=rules.passthrough, normalize=_narrow_normalize, meta=_narrow_meta, composite=_narrow,
      reference=_narrow_reference, samples=_narrow_samples,
      doc="length entries of dim from start (negative: counted from the end; a 0-d integer tensor too), "
          "as a view of input")
defop("narrow_copy(Tensor input, dim dim, int start, int length)", "view", kind="composite",
      promotion=rules.passthrough, normalize=_narrow_normalize, meta=_narrow_meta,
      composite=lambda x, dim, start, length: F.clone(_narrow(x, dim, start, length)),
      reference=_narrow_reference, samples=_narrow_samples, doc="input.narrow(dim, start, length) in fresh memory")
