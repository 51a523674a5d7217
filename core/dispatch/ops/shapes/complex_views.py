"""Complex tensors seen as pairs of reals and back: ``view_as_real``, ``view_as_complex``, ``real``, ``imag``
(views, as PyTorch's), and ``conj``.

PyTorch's ``conj`` flips a lazy conjugate bit; Ember keeps no such bit, so ``conj`` of a complex tensor is
``conj_physical`` (a new tensor) and ``is_conj`` is always False. Of a real tensor it is the tensor itself.
"""
from __future__ import annotations

import numpy as np

from ...schema import OPS, Sample, defop, rules
from ...schema.dtypes import SCALAR_TYPE_NAMES, float16, float32, float64
from ...schema.errors import DeviceError, UnsupportedDtypeError, describe
from ...execution.dispatcher import note_value_read
from ...schema.meta import numel, require, shape
from ..namespace import F

#: the real dtypes view_as_complex pairs up (PyTorch's half becomes complex32, which Ember does not have)
_PAIRABLE = (float32, float64)


def _refuse(op, args, message: str):
    """PyTorch's dtype error, naming the operand: raised by the promotion rules, which see the dtype first (and
    so tell the conformance suite which dtypes each op takes)."""
    x = args["input"]  # a tensor, or the conformance suite's stand-in for a dtype alone (no shape)
    shown = describe(x) if hasattr(x, "shape") else f"dtype={x.dtype.name}"
    raise UnsupportedDtypeError(f"{op.name}: {message} ({shown})")


def _complex_only(message: str):
    """The promotion of an op that reads a complex tensor's components: the output is the component type."""
    def promotion(rt, op, args):
        if not rt.is_complex:
            _refuse(op, args, message)
        return None, rt.to_real()
    promotion.__doc__ = f"Complex inputs only ({message}), answered in their component type."
    return promotion


def _paired_dtype(rt, op, args):
    """The complex dtype whose components ``rt`` holds; other dtypes are PyTorch's error (naming a half input's
    missing complex32)."""
    if rt not in _PAIRABLE:
        missing = " (Ember has no complex32)" if rt == float16 else ""
        _refuse(op, args, f"view_as_complex is only supported for float and double tensors, but got a tensor of "
                          f"scalar type: {SCALAR_TYPE_NAMES[rt]}{missing}")
    return None, rt.to_complex()


def _unchanged_unless_complex(rt, op, args):
    """``real`` of a real tensor is the tensor itself, dtype and all."""
    return None, rt.to_real() if rt.is_complex else rt


_as_real_dtype = _complex_only("view_as_real is only supported for complex tensors")
_imag_dtype = _complex_only("imag is not implemented for tensors with non-complex dtypes.")


# -- view_as_real / view_as_complex: the primitives -----------------------------------------------------

def _view_as_complex_normalize(op, args):
    """PyTorch's layout checks, in its order: the last dim is a contiguous pair, the other strides and the storage
    offset are even (each complex element starts on a pair)."""
    x = args["input"]
    require(len(shape(x)) > 0, op.name, "Input tensor must have one or more dimensions", x)
    require(shape(x)[-1] == 2, op.name, "Tensor must have a last dimension of size 2", x)
    if not numel(shape(x)):
        return  # no element to misplace (and an empty array's strides are arbitrary)
    strides = x.stride()
    require(strides[-1] == 1, op.name, "Tensor must have a last dimension with stride 1", x)
    require(all(s % 2 == 0 for s in strides[:-1]), op.name,
            f"Tensor must have a stride divisible by 2 for all but last dimension; strides {strides}", x)
    note_value_read()  # plans are keyed on shapes and strides, not offsets: these checks run on every call
    offset = _storage_offset(x)
    require(offset is None or offset % 2 == 0, op.name,
            f"Tensor must have a storage_offset divisible by 2; storage_offset {offset}", x)


def _storage_offset(x) -> int | None:
    """The offset in elements, or None on a backend whose arrays expose no address to measure it by."""
    try:
        return x.storage_offset()
    except DeviceError:
        return None


def _complex_viewable(t) -> bool:
    """Whether ``t`` (real, last dim 2) passes view_as_complex's layout checks as it is (a gradient may come
    expanded, strided or at an odd offset; it is packed first then)."""
    strides = t.stride()
    return not t.numel() or strides[-1] == 1 and all(s % 2 == 0 for s in strides[:-1]) and \
        (t._base is None or (_storage_offset(t) or 0) % 2 == 0)


def _view_as_real_derivative(grad):
    """The gradient pairs seen as complex again (packed first where they are not laid out as pairs)."""
    return F.view_as_complex(grad if _complex_viewable(grad) else F.clone(grad))


def _view_as_complex_derivative(grad):
    return F.view_as_real(grad)


def _view_as_real_samples(make, dtype):
    yield Sample((make((2, 3)),))
    yield Sample((make((3, 4), noncontiguous=True),), note="non-contiguous")
    yield Sample((make(()),), note="0-d")
    yield Sample((make((0, 2)),), note="empty")


def _view_as_complex_samples(make, dtype):
    yield Sample((make((3, 2)),))
    yield Sample((make((2, 3, 2)),), note="batched")
    yield Sample((make((2,)),), note="to 0-d")
    yield Sample((make((0, 2)),), note="empty")


def _view_as_complex_reference(x):
    pairs = np.ascontiguousarray(x)
    return pairs[..., 0] + 1j * pairs[..., 1]


defop("view_as_real(Tensor input)", "view", promotion=_as_real_dtype,
      meta=lambda x: shape(x) + (2,), view=True, derivative=_view_as_real_derivative, batch="trailing",
      samples=_view_as_real_samples, reference=lambda x: np.stack([np.real(x), np.imag(x)], axis=-1),
      doc="a complex tensor's elements as (real, imaginary) pairs along a new last dim of size 2, as a view")

defop("view_as_complex(Tensor input)", "view", promotion=_paired_dtype, normalize=_view_as_complex_normalize,
      meta=lambda x: shape(x)[:-1], view=True, layout_dependent=True, derivative=_view_as_complex_derivative,
      batch="trailing", samples=_view_as_complex_samples, reference=_view_as_complex_reference,
      doc="a float32/float64 tensor whose last dim holds (real, imaginary) pairs, as a complex view")

# the ``*_copy`` forms (see view_copies.py), declared here since their dtype is not their input's
defop("view_as_real_copy(Tensor input)", "view", kind="composite", promotion=_as_real_dtype, method=False,
      meta=lambda x: shape(x) + (2,), samples=_view_as_real_samples,
      composite=lambda x: F.clone(F.view_as_real(x)), reference=OPS["view_as_real"].reference,
      doc="view_as_real(input) in fresh memory")
defop("view_as_complex_copy(Tensor input)", "view", kind="composite", promotion=_paired_dtype, method=False,
      normalize=_view_as_complex_normalize, meta=lambda x: shape(x)[:-1], samples=_view_as_complex_samples,
      layout_dependent=True, composite=lambda x: F.clone(F.view_as_complex(x)), reference=_view_as_complex_reference,
      doc="view_as_complex(input) in fresh memory")


# -- real / imag: composites, a select of view_as_real ---------------------------------------------------

def _samples(make, dtype):
    yield Sample((make((2, 3)),))
    yield Sample((make((3, 4), noncontiguous=True),), note="non-contiguous")
    yield Sample((make(()),), note="0-d")


defop("real(Tensor input)", "view", kind="composite", promotion=_unchanged_unless_complex,
      meta=lambda x: shape(x), view=True, samples=_samples, reference=np.real,
      composite=lambda x: F.select(F.view_as_real(x), -1, 0) if x.dtype.is_complex else x,
      doc="the real parts, as a view (of a real tensor: the tensor itself)")

defop("imag(Tensor input)", "view", kind="composite", promotion=_imag_dtype,
      meta=lambda x: shape(x), view=True, samples=_samples, reference=np.imag,
      composite=lambda x: F.select(F.view_as_real(x), -1, 1),
      doc="the imaginary parts of a complex tensor, as a view")


# -- conj -------------------------------------------------------------------------------------------------

defop("conj(Tensor input)", "view", kind="composite", promotion=rules.passthrough,
      meta=lambda x: shape(x), samples=_samples, reference=np.conj,
      composite=lambda x: F.conj_physical(x) if x.dtype.is_complex else x,
      doc="the complex conjugate (a new tensor, since Ember keeps no lazy conjugate bit; a real tensor itself)")

defop("resolve_conj(Tensor input)", "view", kind="composite", promotion=rules.passthrough,
      meta=lambda x: shape(x), samples=_samples, reference=lambda x: x, composite=lambda x: x,
      doc="input itself: Ember conjugates eagerly, so no tensor has a conjugation left to resolve")
