"""What every checkpoint reader and writer shares: dtype tables, host copies, device mapping, tensor making."""
from __future__ import annotations

import sys
from typing import Any, Callable

import ml_dtypes  # also registers "bfloat16" with NumPy, which safetensors' NumPy reader relies on
import numpy as np

from ..dispatch.contract import registry
from ..dispatch.schema.device import device as Device
from ..dispatch.schema.dtypes import ALL_DTYPES, dtype as DType
from ..dispatch.schema.errors import DeviceError, DtypeError
from ..tensor import Tensor, wrap
from .errors import CheckpointError

DTYPES = {d.name: d for d in ALL_DTYPES}
NUMPY = {d: np.dtype(ml_dtypes.bfloat16) if d.name == "bfloat16" else np.dtype(d.name) for d in ALL_DTYPES}
BIG_ENDIAN = sys.byteorder == "big"


def type_name(kind: type) -> str:
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


# -- paths inside an object tree, for error messages ------------------------------------------------------

class Step:
    """A path step that is not a plain subscript (an attribute, a dict key itself)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


AS_KEY = Step(" (as a dict key)")


def format_path(path) -> str:
    """``obj['layers'][2]``: built only when an error needs it, so saving stays cheap. A string passes as is."""
    if isinstance(path, str):
        return path
    return "obj" + "".join(step.text if isinstance(step, Step) else f"[{step!r}]" for step in path)


# -- shapes a checkpoint may claim ----------------------------------------------------------------------------

MAX_DIMS = 64  # NumPy's limit (NPY_MAXDIMS), so every Ember backend's host arrays can hold the tensor
_MAX_BYTES = int(np.iinfo(np.intp).max)  # the largest array NumPy can address


def checked_shape(shape, itemsize: int, what: str) -> tuple[int, ...]:
    """``shape`` as a tuple once it is a list or tuple of at most ``MAX_DIMS`` non-negative ints whose
    elements NumPy can address (zero-size shapes included: NumPy refuses ``(0, 2**62)`` of float32 too)."""
    if not isinstance(shape, (list, tuple)) or not all(type(n) is int and n >= 0 for n in shape):
        raise CheckpointError(f"{what} has an invalid shape {_short(shape)}: expected a list of non-negative ints")
    if len(shape) > MAX_DIMS:
        raise CheckpointError(f"{what} has {len(shape)} dimensions; Ember (like NumPy) supports at most {MAX_DIMS}")
    nbytes = itemsize
    for n in shape:
        nbytes *= max(n, 1)
    if nbytes > _MAX_BYTES:
        raise CheckpointError(f"{what} has shape {_short(list(shape))}, too large to address "
                              f"(more than {_MAX_BYTES} bytes even where a zero dimension makes it empty)")
    return tuple(shape)


def addressable(count: int, itemsize: int) -> bool:
    """Whether ``count`` elements of ``itemsize`` bytes is a byte count NumPy can address (offsets, strides)."""
    return 0 <= count * itemsize <= _MAX_BYTES


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:76] + " ..."


# -- tensors to and from host arrays ------------------------------------------------------------------------

def is_parameter(t: Tensor) -> bool:
    """No tensor can be a Parameter before ``ember.nn.parameter`` is imported, so never import it here."""
    parameter = getattr(sys.modules.get("ember.nn.parameter"), "Parameter", None)
    return parameter is not None and isinstance(t, parameter)


def c_order(array: np.ndarray) -> np.ndarray:
    """``array`` itself when already C-contiguous (no copy for CPU tensors); 0-d stays 0-d."""
    return array if array.flags.c_contiguous else array.copy(order="C")


def host_values(t: Tensor) -> np.ndarray:
    """The tensor's own values in C order on the host; a view contributes only the elements it shows."""
    array = np.asarray(t._host())
    if array.dtype != NUMPY[t.dtype]:
        array = array.astype(NUMPY[t.dtype])
    return c_order(array)


def make_tensor(array: np.ndarray, dt: DType, dev: Device, requires_grad: bool = False,
                parameter: bool = False) -> Tensor:
    """A tensor on ``dev`` from a host array the caller hands over (no copy on CPU, so views stay views)."""
    backend = registry.get_backend(dev.type)
    if dt not in backend.supported_dtypes(dev.index):
        raise DtypeError(f"{dev} does not support {dt.name}")
    out = wrap(backend.from_numpy(array, dt, dev.index), dt, dev)
    if requires_grad:
        out.requires_grad = True
    if parameter:
        from ..nn.parameter import Parameter
        out = Parameter(out, requires_grad=requires_grad)
    return out


# -- map_location ---------------------------------------------------------------------------------------------

def _map_rule(map_location) -> Callable[[str], Any]:
    """``map_location`` as a function from a saved device string to a device spec."""
    if map_location is None:
        return lambda saved: saved
    if isinstance(map_location, (str, Device)):
        return lambda saved: map_location
    if isinstance(map_location, dict):
        table = {str(key): value for key, value in map_location.items()}
        return lambda saved: table.get(saved, table.get(saved.partition(":")[0], saved))
    if callable(map_location):
        return lambda saved: _or(map_location(saved), saved)
    raise TypeError(f"ember.load: map_location must be None, a device, a dict or a callable, "
                    f"got {type_name(type(map_location))}")


def _or(value, default):
    return default if value is None else value


class DeviceMap:
    """Resolves each saved device to an available one once per load, with errors that say what to do."""

    def __init__(self, map_location) -> None:
        self.map_location = map_location
        self._rule = _map_rule(map_location)
        self._resolved: dict[str, Device] = {}

    def __call__(self, saved: str, path) -> Device:
        target = self._resolved.get(saved)
        if target is None:
            target = self._resolved[saved] = self._resolve(saved, path)
        return target

    def _resolve(self, saved: str, path) -> Device:
        spec = self._rule(saved)
        try:
            return registry.resolve_device(spec)
        except (DeviceError, TypeError) as exc:
            if self.map_location is None:
                raise DeviceError(f"ember.load: the tensor at {format_path(path)} was saved on {saved}, which is "
                                  f"not available here ({exc}); pass map_location='cpu' (or a device, a dict "
                                  f"{{saved: target}} or a callable) to load it elsewhere") from None
            raise DeviceError(f"ember.load: map_location sends tensors saved on {saved} to {spec!r}, which is "
                              f"not available ({exc})") from None
