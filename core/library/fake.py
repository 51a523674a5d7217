"""Fake tensors: a custom op's fake function (``register_fake``) runs on tensors whose values are not there.

The dispatcher needs a call's output shapes and dtypes before it runs a kernel (an op's ``meta`` and promotion
rule); a custom op learns them from its fake function. PyTorch runs that function on FakeTensors; Ember runs it
on *fake tensors*: real tensors of the inputs' shapes, dtypes and devices whose native arrays are one zero
element broadcast to the shape (the backend's ``expand`` view: no memory however large the shape), under
``FakeMode``, a dispatch mode that answers every op call from the op's schema (its promotion rule and ``meta``,
validated as a first call is) with a new fake tensor, without running a kernel. A fake function may read
shapes, dtypes and devices; reading values (``item()``, ``numpy()``, printing) or moving data raises.

``run_fake`` runs a function so; ``run_apart`` runs a kernel for real instead (a custom op without a fake
function learns its outputs by running its kernel once per new kind of call). Both hide the dispatch modes
active around the validation (a profiler, a tracer, autocast), since the calls inside are no part of the
program, and both run with grad mode off.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

import ml_dtypes
import numpy as np

from ..dispatch.contract import registry
from ..dispatch.execution import dispatcher, links, modes
from ..dispatch.execution.executor import named
from ..dispatch.schema.errors import EmberError

_zeros: dict = {}  # (device, dtype) -> a 0-d native holding zero, which fake tensors broadcast


class FakeValueError(EmberError):
    """A fake function read tensor values or moved data: it may look only at shapes, dtypes and devices."""


def fake_tensor(shape: tuple, dtype, device):
    """A tensor of ``shape``, ``dtype`` and ``device`` holding no memory of its own (one zero, broadcast)."""
    key = (device, dtype)
    zero = _zeros.get(key)
    backend = registry.get_backend(device.type)
    if zero is None:
        host = np.zeros((), np.dtype(ml_dtypes.bfloat16) if dtype.name == "bfloat16" else np.dtype(dtype.name))
        zero = _zeros[key] = backend.from_numpy(host, dtype, device.index)
    return links.tensor.wrap(backend.kernels["expand"](zero, tuple(shape)), dtype, device)


def fake_like(value):
    """``value`` with every tensor (in lists too) replaced by a fake tensor of its shape, dtype and device."""
    Tensor = links.tensor.type
    if isinstance(value, Tensor):
        return fake_tensor(tuple(value._data.shape), value._dtype, value._device)
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return type(value)(fake_like(v) for v in value)
    return value


class FakeMode(modes.DispatchMode):
    """Answers every op call with fake results from the op's schema, running no kernel (module docstring)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        op = func.op
        plan, values, meta = dispatcher.infer(op, args, kwargs or {})
        if op.mutates is True:  # writes into its first input and returns it: nothing to write
            return values[op.tensor_positions[0]]
        if op.mutates.__class__ is tuple:
            return None
        many = len(op.outputs) > 1 or op.outputs == ("*",)
        shapes = list(meta) if many else [meta]
        if not all(isinstance(s, (tuple, list)) and all(isinstance(d, int) for d in s) for s in shapes):
            raise FakeValueError(f"{op.name}: the size of its result depends on tensor values, which a fake "
                                 f"function cannot know")
        dtypes = plan.out if isinstance(plan.out, tuple) else (plan.out,) * len(shapes)
        results = tuple(fake_tensor(tuple(s), d, plan.device) for s, d in zip(shapes, dtypes))
        return named(op, results) if many else results[0]


@contextmanager
def _alone() -> Iterator[None]:
    """The block runs with no dispatch mode active and grad mode off; the modes come back after it."""
    stashed = list(modes.active)
    del modes.active[:]
    try:
        with links.recorder.no_grad():
            yield
    finally:
        modes.active[:] = stashed


def run_fake(function: Callable, args: tuple, kwargs: dict, who: str) -> Any:
    """``function(*args, **kwargs)`` on fake tensors under ``FakeMode`` (``args`` hold fakes already, or real
    tensors, taken for their shapes only); ``who`` names the function in errors."""
    def refuse(what: str) -> None:
        raise FakeValueError(f"{who} did {what}; a fake function may use the inputs' shapes, dtypes and devices "
                             f"only, never their values (as in PyTorch, where its inputs hold no data)")
    with _alone(), dispatcher.reads_apart(refuse), FakeMode():
        return function(*fake_like(args), **{k: fake_like(v) for k, v in kwargs.items()})


def run_apart(function: Callable, args: tuple, kwargs: dict) -> Any:
    """``function(*args, **kwargs)`` for real, as no part of the program running around it: no mode sees its
    calls, grad mode is off, and its reads of values are its own (see ``dispatcher.reads_apart``)."""
    with _alone(), dispatcher.reads_apart():
        return function(*args, **kwargs)


__all__ = ["FakeMode", "FakeValueError", "fake_tensor", "fake_like", "run_fake", "run_apart"]
