"""PyTorch's ``out=`` keyword, for every op that makes new tensors: ``ember.add(a, b, out=c)``.

The op runs as usual; its result is then written into the given tensor(s), which are resized where their
shape differs (with PyTorch's deprecation warning when they held elements) and returned. The result's dtype
must cast to out's by the same-kind rule (no float into an integer tensor), its device must be out's, and
nothing may require grad: a written-into tensor has no history to differentiate through.
"""
from __future__ import annotations

import inspect
import warnings

from . import links
from .caller import caller_stacklevel
from ..schema.errors import DeviceError, DtypeError
from ..schema.promotion import can_cast


def call_with_out(call, op, args: tuple, kwargs: dict):
    """``call(op, args, kwargs)`` without ``out``, its result written into ``out``."""
    kwargs = dict(kwargs)
    out = kwargs.pop("out")
    return write_out(op.name, call(op, args, kwargs), out)


def accepting_out(function, name: str):
    """A Python-level overload (``ember.max``, ``ember.cat``) taking ``out=`` like the op it calls."""
    def with_out(*args, out=None, **kwargs):
        return write_out(name, function(*args, **kwargs), out)
    with_out.__name__ = with_out.__qualname__ = getattr(function, "__name__", name)
    with_out.__doc__ = function.__doc__
    with_out.__signature__ = _with_out_parameter(inspect.signature(function))
    return with_out


def _with_out_parameter(signature: inspect.Signature) -> inspect.Signature:
    params = list(signature.parameters.values())
    at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
    out = inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None)
    return signature.replace(parameters=params[:at] + [out] + params[at:])


def write_out(name: str, result, out):
    """``result`` written into ``out`` (a tensor, or a tuple for several results), which is returned."""
    if out is None:
        return result
    results = result if isinstance(result, tuple) else (result,)
    outs = _out_tensors(name, out, len(results), isinstance(result, tuple))
    if any(t.requires_grad for t in (*results, *outs)) and links.recorder.state.enabled:
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                           f"differentiation, but one of the arguments requires grad.")
    for value, target in zip(results, outs):
        _write(name, value, target)
    if not isinstance(result, tuple):
        return outs[0]
    return type(result)(*outs) if hasattr(result, "_fields") else outs


def _out_tensors(name: str, out, count: int, several: bool) -> tuple:
    outs = tuple(out) if several and isinstance(out, (list, tuple)) else (out,)
    if several and not isinstance(out, (list, tuple)):
        raise TypeError(f"{name}(): out must be a tuple of {count} tensors, got {type(out).__name__}")
    if len(outs) != count or not all(isinstance(t, links.tensor.type) for t in outs):
        kinds = ", ".join(type(t).__name__ for t in outs)
        raise TypeError(f"{name}(): out must be {'a tuple of ' + str(count) + ' tensors' if several else 'a Tensor'}"
                        f", got ({kinds})")
    return outs


def _write(name: str, value, target) -> None:
    if target.device != value.device:
        raise DeviceError(f"{name}(): Expected out tensor to have device {value.device}, but got "
                          f"{target.device} instead")
    if not can_cast(value.dtype, target.dtype):
        raise DtypeError(f"{name}(): result type {value.dtype.name} can't be cast to the desired output type "
                         f"{target.dtype.name}")
    if tuple(target.shape) != tuple(value.shape):
        if target.numel():
            warnings.warn(f"{name}(): An output with one or more elements was resized since it had shape "
                          f"{list(target.shape)}, which does not match the required output shape "
                          f"{list(value.shape)}. This behavior is deprecated, and in a future PyTorch release "
                          f"outputs will not be resized unless they have zero elements. You can explicitly reuse "
                          f"an out tensor t by resizing it, inplace, to zero elements with t.resize_(0).",
                          UserWarning, stacklevel=caller_stacklevel())
        target.resize_(tuple(value.shape))
    target.copy_(value)
