"""DLPack exchange for Ember tensors: ``Tensor.__dlpack__``/``__dlpack_device__`` and ``ember.from_dlpack``.

Host-memory tensors (native NumPy arrays) go through Ember's own structs (``dlpack_host``), so every dtype
travels, bfloat16 and bool included. A native array with a ``__dlpack__`` of its own (CuPy on cuda) speaks
for itself. Native arrays with neither (PyOpenCL buffers) cannot be shared; they leave as host copies
when the caller allows a copy. Imports of device memory go to the backend of that device through its
optional ``from_dlpack(producer, copy)`` hook.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..creation import from_numpy
from ..dispatch.contract import registry
from ..dispatch.schema.dtypes import as_dtype
from ..dispatch.schema.errors import DeviceError, DtypeError, EmberError
from ..tensor import Tensor, wrap
from . import dlpack_host as host
from . import dlpack_structs as s
from .dlpack_structs import DLDeviceType

#: DLPack device type -> the Ember (and PyTorch) device type name serving it.
DEVICE_NAMES = {
    DLDeviceType.kDLCPU: "cpu", DLDeviceType.kDLCUDA: "cuda", DLDeviceType.kDLOpenCL: "opencl",
    DLDeviceType.kDLVulkan: "vulkan", DLDeviceType.kDLMetal: "mps", DLDeviceType.kDLOneAPI: "xpu",
}
DEVICE_TYPES = {name: code for code, name in DEVICE_NAMES.items()}


def _device_label(code: int, index: int) -> str:
    try:
        return f"{DLDeviceType(code).name}:{index}"
    except ValueError:
        return f"DLPack device type {code}:{index}"


# -- export -----------------------------------------------------------------------------------------------

def dlpack_device(t: Tensor) -> tuple[DLDeviceType, int]:
    """``Tensor.__dlpack_device__``: where the tensor's memory is, as a DLPack (device type, index) pair."""
    native = t._data
    if isinstance(native, np.ndarray):
        return DLDeviceType.kDLCPU, 0
    own = getattr(native, "__dlpack_device__", None)
    if own is not None:
        code, index = own()
        return DLDeviceType(code), int(index)
    code = DEVICE_TYPES.get(t.device.type)
    if code is None:
        raise BufferError(f"__dlpack_device__: Ember device type {t.device.type!r} has no DLPack device type")
    return code, t.device.index or 0


def to_capsule(t: Tensor, *, stream: Any = -1, max_version: tuple[int, int] | None = None,
               dl_device: tuple[int, int] | None = None, copy: bool | None = None):
    """``Tensor.__dlpack__``: a capsule sharing ``t``'s memory, or describing a copy where one is allowed.

    A versioned capsule ("dltensor_versioned") when the consumer takes DLPack >= 1.0, else a legacy one."""
    if t.requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if stream is not None and type(stream) is not int:
        raise TypeError(f"__dlpack__: stream must be an int or None, got {type(stream).__name__}")
    versioned = max_version is not None and max_version[0] >= 1
    source = dlpack_device(t)
    target = source if dl_device is None else (DLDeviceType(dl_device[0]), int(dl_device[1]))
    native = t._data
    if target == source and isinstance(native, np.ndarray):
        if stream not in (None, -1):
            raise BufferError(f"__dlpack__: a stream ({stream}) means nothing for host memory; pass None or -1")
        shared = native.copy() if copy else native
        return host.export_array(shared, t.dtype, versioned=versioned, flags=s.FLAG_IS_COPIED if copy else 0)
    if target == source and hasattr(native, "__dlpack__"):
        capsule, _ = call_producer(native, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)
        return capsule
    return _export_host_copy(t, target, unshareable=target == source, versioned=versioned, copy=copy)


def _export_host_copy(t: Tensor, target, *, unshareable: bool, versioned: bool, copy: bool | None):
    """The export left when the memory itself cannot go: a host copy (kDLCPU), where the caller allows one.

    ``unshareable``: the consumer asked for the tensor's own device, whose memory has no DLPack export."""
    where = f"the {t.device} tensor (shape {tuple(t.shape)}, {t.dtype.name})"
    if not unshareable and target[0] != DLDeviceType.kDLCPU:
        raise BufferError(f"__dlpack__: cannot export {where} to {_device_label(*target)}; Ember exports to the "
                          f"tensor's own device or to the host (kDLCPU)")
    if unshareable and not copy:
        raise BufferError(f"__dlpack__: {where} cannot be shared through DLPack ({t.device.type} memory has no "
                          f"DLPack export); copy it to the host with tensor.cpu() first, or pass copy=True for a "
                          f"host copy")
    if copy is False:
        raise BufferError(f"__dlpack__: exporting {where} to the host needs a copy, and copy=False forbids one")
    array = t._host()  # a fresh host array: natives that are not NumPy arrays are copied out
    return host.export_array(array, t.dtype, versioned=versioned, flags=s.FLAG_IS_COPIED)


def call_producer(producer, **kwargs) -> tuple[Any, bool]:
    """``producer.__dlpack__(**kwargs)``, dropping keywords an older producer does not take (as PyTorch does).

    Returns the capsule and whether ``copy`` reached the producer."""
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    for dropped in (set(), {"max_version"}, {"max_version", "copy"}):
        try:
            return producer.__dlpack__(**{k: v for k, v in kwargs.items() if k not in dropped}), \
                "copy" not in dropped
        except TypeError:
            continue
    return producer.__dlpack__(**{k: v for k, v in kwargs.items() if k == "stream"}), False


# -- import -----------------------------------------------------------------------------------------------

def from_dlpack(ext_tensor: Any, *, device=None, copy: bool | None = None) -> Tensor:
    """``ember.from_dlpack``: a tensor sharing the memory of a DLPack producer (or of a capsule)."""
    if s.is_capsule(ext_tensor):
        if device is not None or copy is not None:
            raise ValueError("from_dlpack: device and copy cannot be honoured for a bare DLPack capsule; pass "
                             "the producing tensor or array instead")
        return _from_capsule(ext_tensor)
    if not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ (a tensor or array) or a DLPack "
                        f"capsule, got {type(ext_tensor).__name__}")
    code, index = ext_tensor.__dlpack_device__()
    if code in s.HOST_DEVICE_TYPES:
        out = _from_host_producer(ext_tensor, copy)
    else:
        out = _from_device_producer(ext_tensor, code, index, copy)
    return out if device is None else _move(out, device, copy)


def _from_host_producer(producer, copy: bool | None) -> Tensor:
    try:
        capsule, copy_reached = call_producer(producer, max_version=(1, 0), copy=copy)
    except BufferError:
        if not isinstance(producer, np.ndarray):
            raise
        # NumPy exports no ml_dtypes (bfloat16): describe the array with Ember's own structs instead
        array = producer.copy() if copy else producer
        capsule, copy_reached = host.export_array(array, as_dtype(array.dtype), versioned=True,
                                                  who="from_dlpack"), True
    out = _from_capsule(capsule)
    return out.clone() if copy and not copy_reached else out


def _from_capsule(capsule) -> Tensor:
    versioned = s.capsule_kind(capsule)
    if versioned is None:
        raise EmberError("from_dlpack: received an invalid capsule: a DLPack capsule can be consumed only once, "
                         "and this one was consumed already or is not a DLPack capsule")
    code, index = host.tensor_device(s.peek_capsule(capsule, versioned))
    if code not in s.HOST_DEVICE_TYPES:
        return _from_device_producer(_CapsuleProducer(capsule, code, index), code, index, None)
    return from_numpy(host.import_managed(s.consume_capsule(capsule, versioned), versioned))


class _CapsuleProducer:
    """A bare capsule dressed as a producer, for backends whose array library takes producers."""

    def __init__(self, capsule, code: int, index: int) -> None:
        self._capsule, self._device = capsule, (code, index)

    def __dlpack__(self, **_ignored):
        return self._capsule

    def __dlpack_device__(self):
        return self._device


def _from_device_producer(producer, code: int, index: int, copy: bool | None) -> Tensor:
    """Device memory goes to the backend of that device, through its ``from_dlpack`` hook."""
    label = _device_label(code, index)
    name = DEVICE_NAMES.get(code)
    if name is None or name not in registry.backends():
        raise DeviceError(f"from_dlpack: the tensor lives on {label}, which no Ember backend serves "
                          f"(registered: {', '.join(sorted(registry.backends()))})")
    try:
        backend = registry.get_backend(name)
    except DeviceError as exc:
        raise DeviceError(f"from_dlpack: the tensor lives on {label}: {exc}") from None
    hook = getattr(backend, "from_dlpack", None)
    if hook is None:
        raise BufferError(f"from_dlpack: the tensor lives on {label}, and Ember's {name} backend cannot import "
                          f"DLPack tensors; copy it to the host in its own library first")
    native = hook(producer, copy)
    try:
        dt = as_dtype(native.dtype)
    except TypeError:
        raise DtypeError(f"from_dlpack: the tensor on {label} has dtype {native.dtype}, which Ember lacks") from None
    return wrap(native, dt, registry.resolve_device(f"{name}:{index}"))


def _move(out: Tensor, device, copy: bool | None) -> Tensor:
    target = registry.resolve_device(device)
    if target == out.device:
        return out
    if copy is False:
        raise ValueError(f"from_dlpack: cannot move the tensor from {out.device} to {target} without a copy; "
                         f"pass copy=None or copy=True")
    return out.to(target)
