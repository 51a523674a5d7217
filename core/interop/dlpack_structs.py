"""DLPack's C structs and the PyCapsule calls that carry them, written with ctypes.

The layouts follow ``dlpack.h`` (DLPack 1.x): ``DLManagedTensor`` travels in a capsule named
"dltensor" (the legacy ABI), ``DLManagedTensorVersioned`` in one named "dltensor_versioned". A consumer
renames the capsule to "used_dltensor"/"used_dltensor_versioned" when it takes ownership, so that the
capsule's destructor knows not to call the deleter; the consumer then calls it when it is done.
"""
from __future__ import annotations

import ctypes
import enum

DLPACK_VERSION = (1, 1)  # the ABI these structs describe, announced in versioned capsules

FLAG_READ_ONLY = 1 << 0
FLAG_IS_COPIED = 1 << 1

LEGACY_NAME = b"dltensor"
VERSIONED_NAME = b"dltensor_versioned"
USED_LEGACY_NAME = b"used_dltensor"
USED_VERSIONED_NAME = b"used_dltensor_versioned"


class DLDeviceType(enum.IntEnum):
    """Where a DLTensor's memory lives (DLPack's ``DLDeviceType``, as ``torch.utils.dlpack`` spells it)."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17
    kDLTrn = 18


#: Device types whose memory the host reads directly: such tensors come in as cpu tensors.
HOST_DEVICE_TYPES = frozenset({DLDeviceType.kDLCPU, DLDeviceType.kDLCUDAHost, DLDeviceType.kDLROCMHost})


class DLDataTypeCode(enum.IntEnum):
    kDLInt = 0
    kDLUInt = 1
    kDLFloat = 2
    kDLOpaqueHandle = 3
    kDLBfloat = 4
    kDLComplex = 5
    kDLBool = 6


#: Ember dtype name -> (type code, bits); lanes are always 1 (no vector types).
DTYPE_CODES = {
    "bool": (DLDataTypeCode.kDLBool, 8),
    "uint8": (DLDataTypeCode.kDLUInt, 8),
    "int8": (DLDataTypeCode.kDLInt, 8),
    "int16": (DLDataTypeCode.kDLInt, 16),
    "int32": (DLDataTypeCode.kDLInt, 32),
    "int64": (DLDataTypeCode.kDLInt, 64),
    "float16": (DLDataTypeCode.kDLFloat, 16),
    "bfloat16": (DLDataTypeCode.kDLBfloat, 16),
    "float32": (DLDataTypeCode.kDLFloat, 32),
    "float64": (DLDataTypeCode.kDLFloat, 64),
    "complex64": (DLDataTypeCode.kDLComplex, 64),
    "complex128": (DLDataTypeCode.kDLComplex, 128),
}
DTYPE_NAMES = {code: name for name, code in DTYPE_CODES.items()}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),  # in elements; NULL means C-contiguous
        ("byte_offset", ctypes.c_uint64),
    ]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensor(ctypes.Structure):
    pass


class DLManagedTensorVersioned(ctypes.Structure):
    pass


# Both deleters take the managed struct's address; c_void_p keeps the callback free of ctypes object churn.
Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", Deleter)]
DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", Deleter),
    ("flags", ctypes.c_uint64),
    ("dl_tensor", DLTensor),
]


# -- the PyCapsule API through ctypes.pythonapi (the GIL stays held) ------------------------------------------

def _capi(name: str, restype, *argtypes):
    function = ctypes.pythonapi[name]  # a fresh function object: argtypes differ between the two uses
    function.restype = restype
    function.argtypes = argtypes
    return function


CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_new = _capi("PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, CapsuleDestructor)
_is_valid = _capi("PyCapsule_IsValid", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
_get_pointer = _capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)
_set_name = _capi("PyCapsule_SetName", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
# The destructor gets the dying capsule as a raw address: it must not be turned into a new reference.
_raw_is_valid = _capi("PyCapsule_IsValid", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)
_raw_get_pointer = _capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)


def _call_deleter_if_unconsumed(capsule_address: int) -> None:
    """A capsule nobody consumed still owns its tensor: free it (DLPack's rule for producers)."""
    for name, struct in ((VERSIONED_NAME, DLManagedTensorVersioned), (LEGACY_NAME, DLManagedTensor)):
        if _raw_is_valid(capsule_address, name):
            pointer = _raw_get_pointer(capsule_address, name)
            managed = struct.from_address(pointer)
            if managed.deleter:
                managed.deleter(pointer)
            return


_DESTRUCTOR = CapsuleDestructor(_call_deleter_if_unconsumed)


def new_capsule(managed_address: int, versioned: bool):
    """A capsule owning the managed tensor at ``managed_address`` until a consumer renames it."""
    return _new(managed_address, VERSIONED_NAME if versioned else LEGACY_NAME, _DESTRUCTOR)


def capsule_kind(capsule) -> bool | None:
    """True for an unconsumed versioned capsule, False for an unconsumed legacy one, None otherwise."""
    if _is_valid(capsule, VERSIONED_NAME):
        return True
    if _is_valid(capsule, LEGACY_NAME):
        return False
    return None


def peek_capsule(capsule, versioned: bool):
    """The managed tensor an unconsumed capsule carries, leaving the capsule its owner."""
    pointer = _get_pointer(capsule, VERSIONED_NAME if versioned else LEGACY_NAME)
    return (DLManagedTensorVersioned if versioned else DLManagedTensor).from_address(pointer)


def consume_capsule(capsule, versioned: bool):
    """Take ownership of a capsule's managed tensor: mark the capsule used, return the struct."""
    managed = peek_capsule(capsule, versioned)
    _set_name(capsule, USED_VERSIONED_NAME if versioned else USED_LEGACY_NAME)
    return managed


def is_capsule(obj) -> bool:
    return type(obj).__name__ == "PyCapsule"
