"""A failed device allocation, handled once for every bundled backend as PyTorch's caching allocator does.

An allocation that fails is retried once after the backend's cache of freed blocks is given back to the
device; if it fails again, ``DeviceOutOfMemoryError`` says how many bytes were asked for, on which device,
what the device holds in all and has free, and what Ember's tensors and cache hold. A backend subclasses
``DeviceMemory`` with only what differs per device: ``allocate``, ``free_cache``, ``figures`` and which of
its array library's errors mean "out of memory" (``is_out_of_memory``).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from ember.dispatch import OutOfMemoryError

T = TypeVar("T")


class DeviceOutOfMemoryError(OutOfMemoryError, MemoryError):
    """Ember's ``OutOfMemoryError`` (``ember.cuda.OutOfMemoryError``, a RuntimeError) where it escapes from an
    upload or a copy; also a ``MemoryError``, so that raised inside a kernel the dispatcher's kernel-error hook
    puts the op's name in front of it (``ember.dispatch``'s ``kernel_errors``)."""


@dataclass(frozen=True)
class MemoryFigures:
    """What a device holds, in bytes, when an allocation failed."""

    total: int  # the device's capacity
    free: int  # free on the device now
    allocated: int  # held by Ember's tensors
    cached: int  # held by Ember's allocator for reuse, in no tensor


def in_units(nbytes: int) -> str:
    """``3.00 GiB (3221225472 bytes)``: readable, and exact."""
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= size:
            return f"{nbytes / size:.2f} {unit} ({nbytes} bytes)"
    return f"{nbytes} bytes"


class DeviceMemory(ABC):
    """One device's allocations: the four methods a backend overrides, and the shared retry and error on top."""

    #: The device as users name it (``opencl:0``, ``cuda:1``).
    name: str = "device"
    #: The most bytes one allocation may take (OpenCL's CL_DEVICE_MAX_MEM_ALLOC_SIZE); None: only capacity.
    largest: int | None = None

    @abstractmethod
    def allocate(self, nbytes: int) -> Any:
        """A new block of ``nbytes`` from the backend's allocator, or the array library's own error."""

    @abstractmethod
    def free_cache(self) -> None:
        """Give the blocks the allocator holds for reuse back to the device (PyTorch's ``empty_cache``)."""

    @abstractmethod
    def figures(self) -> MemoryFigures:
        """The device's figures now, for the error's message."""

    def is_out_of_memory(self, error: BaseException) -> bool:
        """Whether ``error`` says the device ran out of memory (the default: a Python ``MemoryError``)."""
        return isinstance(error, MemoryError)

    # -- the shared logic ------------------------------------------------------------------------
    def obtain(self, nbytes: int) -> Any:
        """``allocate(nbytes)``, retried once after freeing the cache; an allocation larger than ``largest``
        can never succeed and is refused at once."""
        if self.largest is not None and nbytes > self.largest:
            raise self.error(nbytes, retried=False)
        return self.retrying(self.allocate, nbytes, nbytes=nbytes)

    def retrying(self, attempt: Callable[..., T], *args: Any, nbytes: int | None = None,
                 action: str | None = None) -> T:
        """``attempt(*args)`` (an allocation, an upload, a kernel launch), run a second time after freeing the
        cache where the first ran out of memory; ``DeviceOutOfMemoryError`` where the second does too.
        ``nbytes`` (where known) or ``action`` say what was being done, for the message."""
        try:
            return attempt(*args)
        except Exception as error:  # noqa: BLE001 - only out-of-memory errors are handled; the rest re-raise
            if not self.is_out_of_memory(error):
                raise
        self.free_cache()
        try:
            return attempt(*args)
        except Exception as error:  # noqa: BLE001 - as above
            if not self.is_out_of_memory(error):
                raise
            raise self.error(nbytes, cause=error, action=action) from error

    def explain(self, error: BaseException, nbytes: int | None = None) -> DeviceOutOfMemoryError | None:
        """The typed error for ``error``, an out-of-memory error the array library raised by itself (inside a
        kernel, after its own pool freed its blocks and retried), with the cache freed; None for other errors."""
        if not self.is_out_of_memory(error):
            return None
        self.free_cache()
        return self.error(nbytes, cause=error)

    def error(self, nbytes: int | None, cause: BaseException | None = None, action: str | None = None,
              retried: bool = True) -> DeviceOutOfMemoryError:
        """The error for ``nbytes`` (None: unknown) that could not be had, with the device's figures, worded
        after PyTorch's ("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of ...")."""
        if nbytes is None:
            asked = action or "An allocation failed"
        else:
            asked = f"Tried to allocate {in_units(nbytes)}"
            if self.largest is not None and nbytes > self.largest:
                asked += f", more than the {in_units(self.largest)} one allocation can take on this device"
        detail = " ".join(str(cause).split()) if cause is not None else ""
        figures = self.figures()
        return DeviceOutOfMemoryError(
            f"{self.name} out of memory. {asked}{f': {detail}' if detail else ''}. {self.name} has a total "
            f"capacity of {in_units(figures.total)} of which {in_units(figures.free)} is free. Ember's tensors "
            f"hold {in_units(figures.allocated)} and its cache {in_units(figures.cached)}"
            f"{', after freeing the cache and trying again' if retried else ''}")


__all__ = ["DeviceMemory", "DeviceOutOfMemoryError", "MemoryFigures", "in_units"]
