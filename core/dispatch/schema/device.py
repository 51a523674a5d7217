"""Devices: ``ember.device("opencl:0")``. One interned object per (type, index)."""
from __future__ import annotations

from .errors import DeviceError
from ..contract.plugins import backend_for, why_unknown


class device:
    """A device type and index. ``device("cuda:1")``, ``device("cuda", 1)`` or ``device("cpu")``."""

    __slots__ = ("type", "index", "_str", "__weakref__")
    _interned: dict = {}

    def __new__(cls, type_or_spec, index: int | None = None):
        if isinstance(type_or_spec, device):
            if index is None:
                return type_or_spec
            type_or_spec = type_or_spec.type
        key = (type_or_spec, index)
        try:
            cached = cls._interned.get(key)
        except TypeError:  # an unhashable spec (a list) names no device
            raise TypeError(f"device: expected a string like 'cpu' or 'opencl:0', got "
                            f"{type(type_or_spec).__name__}") from None
        if cached is not None:
            return cached
        dev_type, dev_index = _parse(type_or_spec, index)
        _check_known(dev_type, type_or_spec)
        canonical = cls._interned.get((dev_type, dev_index))
        if canonical is None:
            canonical = object.__new__(cls)
            canonical.type = dev_type
            canonical.index = dev_index
            canonical._str = dev_type if dev_index is None else f"{dev_type}:{dev_index}"
            cls._interned[(dev_type, dev_index)] = canonical
        cls._interned[key] = canonical
        return canonical

    def __repr__(self) -> str:
        return f"device(type='{self.type}')" if self.index is None else \
            f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self._str

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except (DeviceError, TypeError):
                return False
        return self is other

    # Devices are interned, so identity hashing is exact, and C-level fast (devices key hot caches).
    __hash__ = object.__hash__

    def __reduce__(self):
        return (device, (self._str,))


# pickles name the class under the path every Ember version can import (an alias ember.dispatch keeps), so
# files written now load in versions from before ember.dispatch had rooms too
device.__module__ = "ember.dispatch.device"


def _check_known(dev_type: str, spec) -> None:
    """Unknown device types fail here, as in PyTorch, naming the types the installed plugins provide."""
    if backend_for(dev_type) is None:
        raise DeviceError(f"device: unknown device type {dev_type!r} in {spec!r}; {why_unknown(dev_type)}")


def _parse(spec, index):
    if isinstance(spec, int) and not isinstance(spec, bool):
        raise DeviceError(f"device: a bare index {spec} is ambiguous; write 'cuda:{spec}' or 'opencl:{spec}'")
    if not isinstance(spec, str):
        raise TypeError(f"device: expected a string like 'cpu' or 'opencl:0', got {type(spec).__name__}")
    text = spec.strip()
    if ":" in text:
        if index is not None:
            raise DeviceError(f"device: {spec!r} already has an index; do not pass index={index} too")
        text, _, idx = text.partition(":")
        if not idx.isdigit():
            raise DeviceError(f"device: invalid device string {spec!r}; expected 'type' or 'type:index'")
        index = int(idx)
    if not text or not text.replace("_", "").isalnum():
        raise DeviceError(f"device: invalid device string {spec!r}; expected 'type' or 'type:index'")
    if index is not None and (not isinstance(index, int) or index < 0):
        raise DeviceError(f"device: index must be a non-negative int, got {index!r}")
    return text, index
