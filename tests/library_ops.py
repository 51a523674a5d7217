"""What the ember.library tests share: the devices, a block that leaves OPS as it found it, and a reference
custom op (a NumPy sine on cpu, Ember ops on every other device, with a fake and a derivative)."""
from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

import ember
from ember import Tensor
from ember.dispatch.schema import OPS
from ember.library.custom_op import OPDEFS
from ember.library.definition import DEFINITIONS

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "custom_op_package"

DEVICES = [pytest.param(name, marks=pytest.mark.skipif(ember.backends.available().get(name) != "available",
                                                       reason=f"{name} is not available here"))
           for name in ("cpu", "opencl")]


def remove_custom_ops(names) -> None:
    """Take the custom ops ``names`` out of the schema, however they were made."""
    for name in names:
        opdef = OPDEFS.get(name)
        if opdef is not None:
            opdef._destroy()
        elif name in DEFINITIONS:
            DEFINITIONS[name].remove()


@contextmanager
def ops_left_as_found() -> Iterator[None]:
    """Every custom op made in the block is gone after it: the conformance suite, the stubs and the other tests
    enumerate OPS."""
    before = set(OPS)
    try:
        yield
    finally:
        remove_custom_ops(set(OPS) - before)
    assert set(OPS) == before


@pytest.fixture(autouse=True)
def leaves_ops_as_found():
    """For a test module that imports it: every test leaves OPS as it found it."""
    with ops_left_as_found():
        yield


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@contextmanager
def example_package() -> Iterator[Any]:
    """The example package (examples/custom_op_package) imported afresh, as a user imports it; removed after."""
    sys.path.insert(0, str(EXAMPLE))
    try:
        for name in [m for m in sys.modules if m == "fused_ops" or m.startswith("fused_ops.")]:
            del sys.modules[name]
        import fused_ops
        yield fused_ops
    finally:
        sys.path.remove(str(EXAMPLE))
        remove_custom_ops(["fused_ops::bias_gelu"])
        for name in [m for m in sys.modules if m == "fused_ops" or m.startswith("fused_ops.")]:
            del sys.modules[name]


def host(t) -> np.ndarray:
    return np.array(t.detach().cpu().numpy(), copy=True)


def define_sin(name: str = "testlib::sin", calls: list | None = None, fake: bool = True,
               autograd: bool = True):
    """``name``: sin(x) * scale, a NumPy kernel on cpu (appending "numpy" to ``calls``) and Ember ops elsewhere
    (appending the device type), a fake function, and a derivative in Ember ops (so it differentiates twice)."""
    calls = [] if calls is None else calls

    @ember.library.custom_op(name, mutates_args=())
    def sin(x: Tensor, scale: float = 1.0) -> Tensor:
        calls.append(x.device.type)
        return ember.sin(x) * scale

    @sin.register_kernel("cpu")
    def _(x, scale=1.0):
        calls.append("numpy")
        return ember.from_numpy((np.sin(x.numpy()) * scale).astype(x.numpy().dtype))

    if fake:
        sin.register_fake(lambda x, scale=1.0: ember.empty_like(x))
    if autograd:
        def setup_context(ctx, inputs, output):
            x, scale = inputs
            ctx.save_for_backward(x)
            ctx.scale = scale

        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return grad * ember.cos(x) * ctx.scale, None
        sin.register_autograd(backward, setup_context=setup_context)
    return sin
