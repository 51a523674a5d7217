"""Exception types and the one formatter that describes operands in error messages."""
from __future__ import annotations


class EmberError(RuntimeError):
    """Base class of Ember's own errors."""


class DeviceError(EmberError):
    """Unknown or unavailable device, or tensors on different devices."""


class DtypeError(EmberError, TypeError):
    """A dtype an op or a backend does not accept."""


class UnsupportedDtypeError(DtypeError, NotImplementedError):
    """An op with no kernel for a dtype (``bitwise_and`` of floats): PyTorch raises NotImplementedError
    ("not implemented for 'Float'"), and this is one, as well as the DtypeError Ember raises for dtypes."""


class ArgumentError(EmberError, ValueError):
    """An argument value the op does not take (an unknown mode name, a probability outside [0, 1]): a
    RuntimeError, as PyTorch's C++ checks raise, and a ValueError, as its Python functions raise."""


class ShapeError(EmberError, ValueError):
    """Shapes that do not fit the op."""


class BackendError(EmberError):
    """A backend that is missing a kernel or failed."""


class OutOfRangeError(EmberError, IndexError):
    """A dim or an index value outside the range the op accepts (PyTorch raises IndexError for these)."""


class OutOfMemoryError(EmberError):
    """An allocation the device cannot make (``torch.OutOfMemoryError``, a RuntimeError, in PyTorch)."""


class NumberOverflowError(EmberError, ValueError, OverflowError):
    """A Python number that does not fit the dtype it is stored in. PyTorch raises RuntimeError, ValueError
    or OverflowError for this depending on the path; this is each of them."""


class DivisionByZeroError(EmberError, ZeroDivisionError):
    """Integer division by zero (PyTorch raises RuntimeError "ZeroDivisionError"); also a ZeroDivisionError."""


def describe(value) -> str:
    """``tensor(shape=(2, 3), dtype=float32, device=cpu)`` for a tensor, repr for anything else."""
    data = getattr(value, "_data", None)
    if data is not None and hasattr(value, "_dtype"):
        return f"tensor(shape={tuple(data.shape)}, dtype={value._dtype.name}, device={value._device})"
    return repr(value)


def describe_all(values) -> str:
    return ", ".join(describe(v) for v in values)


class LinAlgError(EmberError):
    """A matrix a linear-algebra op cannot factor or invert (singular, not positive-definite): PyTorch's
    ``torch.linalg.LinAlgError``, also a RuntimeError."""
