"""Bad input raises an Ember error that names the op and the operands, never a silent wrong answer."""
from __future__ import annotations

import pytest

import ember
from ember.conformance.target import all_dtypes
from ember.dispatch.schema.errors import UnsupportedDtypeError
from ember.conformance.plugin import target_of


def _lacking(config) -> list:
    target = target_of(config)
    lacking = [pytest.param(d, id=d.name) for d in all_dtypes() if target.available and d not in target.dtypes]
    return lacking or [pytest.param(None, id="none", marks=pytest.mark.skip(
        reason=f"backend {target.name!r} supports every dtype: nothing to refuse"))]


def pytest_generate_tests(metafunc) -> None:
    if "lacking" in metafunc.fixturenames:
        metafunc.parametrize("lacking", _lacking(metafunc.config))


# (name, the failing call given ``make``, the error type, fragments its message must contain)
SHAPE_ERRORS = [
    ("matmul", lambda make: make((2, 3)) @ make((4, 5)), ember.ShapeError, ["matmul", "(2, 3)", "(4, 5)"]),
    ("mm", lambda make: ember.mm(make((2, 3)), make((2, 3))), ember.ShapeError, ["mm", "(2, 3)"]),
    ("cat", lambda make: ember.cat([make((2, 3)), make((2, 4))]), ember.ShapeError, ["cat", "(2, 3)", "(2, 4)"]),
    ("add", lambda make: make((2, 3)) + make((4,)), ember.ShapeError, ["add", "(2, 3)", "(4,)"]),
    ("view", lambda make: make((2, 3)).view(4, 4), ember.ShapeError, ["view", "(4, 4)", "6"]),
    ("expand", lambda make: make((2, 3)).expand(4, 3), ember.ShapeError, ["expand", "(2, 3)"]),
    ("stack", lambda make: ember.stack([make((2,)), make((3,))]), ember.ShapeError, ["stack"]),
    ("copy_", lambda make: make((2, 3)).copy_(make((3, 2))), ember.ShapeError, ["copy_", "(3, 2)", "(2, 3)"]),
    ("add_", lambda make: make((3,)).add_(make((2, 3))), ember.ShapeError, ["add_", "(3,)", "(2, 3)"]),
    ("amax of empty", lambda make: ember.amax(make((0, 3))), ember.ShapeError, ["amax", "size 0"]),
]
INDEX_ERRORS = [
    ("sum dim", lambda make: ember.sum(make((2, 3)), 2), IndexError, ["sum", "dim 2", "2 dim"]),
    ("transpose dim", lambda make: make((2, 3)).transpose(0, -3), IndexError, ["transpose", "-3"]),
    ("unsqueeze dim", lambda make: make((2, 3)).unsqueeze(4), IndexError, ["unsqueeze", "4"]),
    ("cumsum dim", lambda make: ember.cumsum(make((4,)), 1), IndexError, ["cumsum", "dim 1"]),
    ("index", lambda make: make((3, 4))[5], IndexError, ["index 5", "size 3"]),
    ("negative index", lambda make: make((3, 4)).select(1, -5), IndexError, ["select", "-5"]),
    # value checks: a device that defers them (Backend.defers_value_checks) raises at the next synchronize()
    ("index value", lambda make: make((3, 4))[make((2,), dtype="int64", low=5, high=6)], IndexError,
     ["index 5", "size 3"]),
    ("gather index value", lambda make: ember.gather(make((2, 3)), 1, make((2, 1), dtype="int64", low=3, high=4)),
     IndexError, ["gather", "index 3", "size 3"]),
]
ARGUMENT_ERRORS = [
    ("add str", lambda make: ember.add(make((2,)), "a"), TypeError, ["add", "other"]),
    ("sum axes", lambda make: ember.sum(make((2,)), axes=0), TypeError, ["sum", "axes"]),
    ("mean of int", lambda make: ember.mean(make((2,), dtype="int64")), ember.DtypeError, ["mean", "int64"]),
    ("rand of int", lambda make: ember.rand(2, dtype=ember.int32, device=make.device), ember.DtypeError,
     ["rand", "int32"]),
    ("randint range", lambda make: ember.randint(5, 3, (2,), device=make.device), ValueError, ["randint", "5", "3"]),
    ("integer division by zero", lambda make: ember.floor_divide(make((3,), dtype="int32"),
                                                                 make((3,), dtype="int32", low=0, high=1)),
     ZeroDivisionError, ["floor_divide", "zero"]),
    ("div rounding mode", lambda make: ember.div(make((2,)), make((2,)), rounding_mode="round"), ValueError,
     ["div", "rounding_mode"]),
]


# Ops that PyTorch 2.13 refuses on complex inputs (a NotImplementedError or RuntimeError saying so), with the part
# of its message that Ember's UnsupportedDtypeError repeats: (name, the call given a complex tensor z, fragment).
COMPLEX_REFUSALS = [
    ("lt", lambda z: ember.lt(z, z), "not implemented for 'Complex"),
    ("maximum", lambda z: ember.maximum(z, z), "maximum"),
    ("floor", lambda z: ember.floor(z), "floor"),
    ("argmax", lambda z: ember.argmax(z), "argmax"),
    ("sort", lambda z: ember.sort(z), "sort"),
    ("clamp", lambda z: ember.clamp(z, 0, 1), "clamp"),
    ("remainder", lambda z: ember.remainder(z, z), "not implemented for 'Complex"),
    ("erf", lambda z: ember.erf(z), "not implemented for 'Complex"),
    ("amax", lambda z: ember.amax(z), "amax"),
    ("sign", lambda z: ember.sign(z), "sign"),
]


@pytest.mark.parametrize("call,error,fragments", [pytest.param(c, e, f, id=n) for n, c, e, f in
                                                  SHAPE_ERRORS + INDEX_ERRORS + ARGUMENT_ERRORS])
def test_error_names_the_op(call, error, fragments, make):
    with pytest.raises(error) as info:
        call(make)
        ember.synchronize()  # where checks of values wait for the device's next sync, their errors come here
    message = str(info.value)
    missing = [f for f in fragments if f not in message]
    assert not missing, f"{type(info.value).__name__}: {message!r} does not mention {missing}"


@pytest.mark.parametrize("spec", ["nosuch", "nosuch:0"])
def test_unknown_device(spec, make):
    with pytest.raises(ember.DeviceError) as info:
        ember.zeros(2, device=spec)
    assert "zeros" in str(info.value) and "nosuch" in str(info.value)
    assert "cpu" in str(info.value), "the message should list the backends that are registered"
    with pytest.raises(ember.DeviceError, match="nosuch"):
        make((2,)).to(spec)
    with pytest.raises(ember.DeviceError, match="nosuch"):
        ember.ones(2, device=ember.device(spec))


def test_device_index_out_of_range(backend):
    count = backend.impl.device_count() if backend.impl.default_index() is not None else 1
    with pytest.raises(ember.DeviceError, match=backend.device.type):
        ember.zeros(2, device=f"{backend.device.type}:{count + 7}")


def test_mixed_devices(make, device):
    if device.type == "cpu":
        pytest.skip("mixing needs a second device type; the cpu backend is the host")
    here, host = make((2, 3)), ember.ones(2, 3)
    with pytest.raises(ember.DeviceError) as info:
        here + host
    message = str(info.value)
    assert "add" in message and "cpu" in message and str(device) in message
    with pytest.raises(ember.DeviceError, match="matmul"):
        ember.matmul(here, ember.ones(3, 2))
    zero_dim = here + ember.tensor(2.0)  # a 0-d cpu tensor may join, as in PyTorch
    assert zero_dim.device == device


def test_unsupported_dtype(lacking, device):
    """A dtype the backend lacks is refused when creating or moving a tensor, naming the device and dtype."""
    for create in (lambda: ember.tensor([1, 2], dtype=lacking, device=device),
                   lambda: ember.zeros(2, dtype=lacking, device=device),
                   lambda: ember.ones(2, dtype=lacking).to(device)):
        with pytest.raises(ember.DtypeError) as info:
            create()
        assert lacking.name in str(info.value) and str(device) in str(info.value)


@pytest.mark.parametrize("call,fragment", [pytest.param(c, f, id=n) for n, c, f in COMPLEX_REFUSALS])
def test_complex_refused(call, fragment, make, backend):
    """What PyTorch refuses on complex tensors, Ember refuses with an UnsupportedDtypeError (a DtypeError and a
    NotImplementedError, as PyTorch's) that says so, never with a silent answer from the real part."""
    if not backend.supports(ember.complex64):
        pytest.skip(f"{backend.name} lacks complex64 (test_unsupported_dtype checks that it refuses it)")
    with pytest.raises(UnsupportedDtypeError) as info:
        call(make((2, 3), dtype="complex64"))
    assert fragment in str(info.value) and "complex" in str(info.value).lower(), str(info.value)
