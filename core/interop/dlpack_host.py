"""DLPack for host memory: NumPy arrays out to capsules, and capsules in as NumPy arrays, every Ember dtype.

NumPy's own ``__dlpack__`` refuses bfloat16 (an ``ml_dtypes`` type it does not know), so Ember builds the
DLPack structs itself. Exports keep their array alive in ``_LIVE_EXPORTS`` until the consumer calls the
deleter (or the unconsumed capsule dies); imports hold the producer's managed tensor in an ``_Import``
that NumPy keeps as the array's base, and call the producer's deleter when the last view is gone.
"""
from __future__ import annotations

import ctypes

import ml_dtypes
import numpy as np

from ..dispatch.schema.dtypes import dtype as DType, from_name
from . import dlpack_structs as s

# managed struct address -> (array, shape, strides, managed struct): what must outlive the consumer's use
_LIVE_EXPORTS: dict[int, tuple] = {}


def _release_export(managed_address: int) -> None:
    _LIVE_EXPORTS.pop(managed_address, None)


_EXPORT_DELETER = s.Deleter(_release_export)


def element_strides(array: np.ndarray, who: str) -> tuple[int, ...]:
    """Strides in elements, as DLPack wants them; BufferError where a byte stride is not a whole element."""
    itemsize = array.itemsize
    if any(stride % itemsize for stride in array.strides):
        raise BufferError(f"{who}: strides {array.strides} (bytes) are not multiples of the itemsize "
                          f"{itemsize}, so DLPack cannot describe this array; make it contiguous first")
    return tuple(stride // itemsize for stride in array.strides)


def export_array(array: np.ndarray, dt: DType, *, versioned: bool, flags: int = 0, who: str = "__dlpack__"):
    """A capsule describing ``array``'s memory (kDLCPU), keeping ``array`` alive until the deleter runs."""
    code, bits = s.DTYPE_CODES[dt.name]
    ndim = array.ndim
    shape = (ctypes.c_int64 * ndim)(*array.shape)
    strides = (ctypes.c_int64 * ndim)(*element_strides(array, who))
    managed = s.DLManagedTensorVersioned() if versioned else s.DLManagedTensor()
    tensor = managed.dl_tensor
    tensor.data = array.ctypes.data
    tensor.device = s.DLDevice(s.DLDeviceType.kDLCPU, 0)
    tensor.ndim = ndim
    tensor.dtype = s.DLDataType(code, bits, 1)
    tensor.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    tensor.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    tensor.byte_offset = 0
    managed.deleter = _EXPORT_DELETER
    if versioned:
        managed.version = s.DLPackVersion(*s.DLPACK_VERSION)
        managed.flags = flags | (0 if array.flags.writeable else s.FLAG_READ_ONLY)
    elif not array.flags.writeable:
        raise BufferError(f"{who}: a read-only array needs a versioned DLPack capsule (max_version >= (1, 0)) "
                          f"to carry its read-only flag")
    address = ctypes.addressof(managed)
    _LIVE_EXPORTS[address] = (array, shape, strides, managed)
    return s.new_capsule(address, versioned)


def live_export_count() -> int:
    """How many exported arrays still wait for their consumer's deleter (for tests and leak hunts)."""
    return len(_LIVE_EXPORTS)


class _Import:
    """Owns a consumed managed tensor: NumPy keeps it as the array's base; dying, it calls the deleter."""

    def __init__(self, managed) -> None:
        self._managed = managed
        self.__array_interface__: dict = {}

    def release(self) -> None:
        """Hand the tensor back to its producer, once."""
        managed, self._managed = self._managed, None
        if managed is not None and managed.deleter:
            managed.deleter(ctypes.addressof(managed))

    __del__ = release


def tensor_device(managed) -> tuple[int, int]:
    device = managed.dl_tensor.device
    return device.device_type, device.device_id


def import_managed(managed, versioned: bool) -> np.ndarray:
    """A NumPy array over a consumed managed tensor in host memory, owning it from here on."""
    owner = _Import(managed)
    try:
        return _as_array(owner, managed, versioned)
    except BaseException:
        owner.release()
        raise


def _as_array(owner: _Import, managed, versioned: bool) -> np.ndarray:
    if versioned and managed.version.major > s.DLPACK_VERSION[0]:
        raise BufferError(f"from_dlpack: the producer speaks DLPack {managed.version.major}."
                          f"{managed.version.minor}; Ember reads up to {s.DLPACK_VERSION[0]}.x")
    tensor = managed.dl_tensor
    dt = _ember_dtype(tensor.dtype)
    numpy_dtype = np.dtype(ml_dtypes.bfloat16) if dt.name == "bfloat16" else np.dtype(dt.name)
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    if 0 in shape:  # no memory to share: nothing to keep the producer's tensor for
        owner.release()
        return np.empty(shape, numpy_dtype)
    itemsize = numpy_dtype.itemsize
    strides = tuple(tensor.strides[i] * itemsize for i in range(tensor.ndim)) if tensor.strides else None
    read_only = bool(versioned and managed.flags & s.FLAG_READ_ONLY)
    owner.__array_interface__ = {
        "version": 3,
        "shape": shape,
        "strides": strides,  # None: C-contiguous
        "typestr": f"|V{itemsize}",  # bytes of the right width (16 for complex128); the real dtype comes by view
        "data": ((tensor.data or 0) + tensor.byte_offset, read_only),
    }
    return np.asarray(owner).view(numpy_dtype)


def _ember_dtype(dl_dtype) -> DType:
    code, bits, lanes = dl_dtype.code, dl_dtype.bits, dl_dtype.lanes
    name = s.DTYPE_NAMES.get((code, bits)) if lanes == 1 else None
    if name is None:
        try:
            code_name = s.DLDataTypeCode(code).name
        except ValueError:
            code_name = f"type code {code}"
        raise BufferError(f"from_dlpack: DLPack dtype ({code_name}, bits={bits}, lanes={lanes}) has no Ember "
                          f"dtype; Ember has {', '.join(s.DTYPE_CODES)}")
    return from_name(name)
