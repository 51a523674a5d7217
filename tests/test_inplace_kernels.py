"""In-place calls as in-place kernels: every in-place elementwise op of the schema, on cpu and opencl, gives the
out-of-place result in its target (same tensor, storage, strides; version bumped), and runs as one kernel
where the backend has an out-kernel for it (no ``copy_``), else out of place and a copy."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

import ember
from ember.dispatch import OPS, registry
from ember.dispatch.execution import inplace
from ember.dispatch.execution.modes import DispatchMode
from ember.dispatch.ops import F
from ember.dispatch.schema import REQUIRED
from ember.dispatch.schema.errors import DtypeError

#: every op with an in-place method whose result has its operands' broadcast shape
INPLACE = sorted(name for name, op in OPS.items()
                 if op.inplace and (op.category == "elementwise" or op.scalar is not None))
INTEGRAL = ("integral", "int")


def _device(backend: str) -> str:
    status = ember.backends.available().get(backend)
    if status != "available":
        pytest.skip(f"{backend} is {status}")
    return backend


class _Seen(DispatchMode):
    """The op calls made while entered (composites' inner ops included), seeing in-place calls as one call."""
    observes_nested = True
    sees_inplace_calls = True

    def __init__(self) -> None:
        self.names: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.__name__)
        return func(*args, **(kwargs or {}))


def _dtype(op):
    return ember.int64 if op.dtypes in INTEGRAL else ember.float32


def _values(op, name: str, shape, dtype, rng) -> np.ndarray:
    domain = op.domain.get(name, {})
    if dtype.is_floating_point:
        low, high = domain.get("low", -2.0), domain.get("high", 2.0)
        values = rng.uniform(low, high, shape)
        if domain.get("nonzero"):
            values[np.abs(values) < 0.1] = 0.5
        return values.astype(np.dtype(dtype.name))
    low, high = int(domain.get("low", 1)), int(domain.get("high", 9))
    return rng.integers(max(low, 1), max(high, 2), shape).astype(np.int64)


def _arguments(op, device: str, dtype, shape=(2, 3), other_shape=None, seed: int = 0):
    """(target, other positional arguments): tensors for every tensor parameter (the target of ``shape``, the
    others of ``other_shape``), a number for a required attribute, defaults for the rest (left out)."""
    rng = np.random.default_rng(seed)
    target = ember.tensor(_values(op, op.params[0].name, shape, dtype, rng), device=device)
    others = []
    for p in op.params[1:]:
        if p.is_tensor:
            others.append(ember.tensor(_values(op, p.name, shape if other_shape is None else other_shape, dtype, rng),
                                       device=device))
        elif p.default is REQUIRED:
            others.append(1 if p.type.startswith("int") else 0.5)
        else:
            break
    return target, others


def _expected(name: str, target, others):
    result = getattr(F, name)(target, *others)
    return result.to(target.dtype).cpu().numpy()


def _check(name: str, target, others, backend: str, seen: DispatchMode | None = None) -> int:
    """Run ``target.<name>_(*others)`` (under ``seen``) and check it against the out-of-place op; the number
    of copy-road calls it made."""
    expected = _expected(name, target, others)
    data, strides, version = target._data, target.stride(), target._version[0]
    copies = inplace.copy_road_count()
    with seen if seen is not None else contextlib.nullcontext():
        returned = getattr(target, name + "_")(*others)
    assert returned is target
    assert target._data is data and target.stride() == strides, "the target keeps its storage and strides"
    assert target._version[0] == version + 1
    got = target.cpu().numpy()
    if backend == "cpu":  # the very ufunc of the out-of-place call
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=2e-6, atol=1e-6, equal_nan=True)
    return inplace.copy_road_count() - copies


def _skip_slow_copy_road(name: str, backend: str) -> None:
    """On opencl, ops without an out-kernel run as before (their kernels, then copy_: the conformance suite's
    in-place tests cover them, and the copy road is tested below); PoCL compiles their kernels slowly."""
    if backend == "opencl" and name not in registry.get_backend(_device(backend)).out_kernels:
        pytest.skip("opencl: no out-kernel for this op (the copy road, as before)")


def _op_case(name: str, backend: str):
    op = OPS[name]
    dtype = _dtype(op)
    device = _device(backend)
    target, others = _arguments(op, device, dtype)
    result = getattr(F, name)(target, *others)
    if result.dtype.is_floating_point and result.dtype != dtype:  # float_power computes in float64
        dtype = result.dtype
    return op, dtype, device


@pytest.mark.parametrize("backend", ["cpu", "opencl"])
@pytest.mark.parametrize("name", INPLACE)
def test_inplace_op_equals_out_of_place_and_runs_one_kernel(name, backend):
    _skip_slow_copy_road(name, backend)
    op, dtype, device = _op_case(name, backend)
    target, others = _arguments(op, device, dtype)
    seen = _Seen()
    copies = _check(name, target, others, backend, seen)
    if "copy_" in seen.names:  # out of place, then copied
        assert copies == 1
    else:  # one call of the op, written into the target: no copy_, no composite's inner ops
        assert seen.names == [name] and copies == 0
        assert name in registry.get_backend(backend).out_kernels
    # without modes: the same road, counted
    target, others = _arguments(op, device, dtype, seed=1)
    assert _check(name, target, others, backend) == copies


@pytest.mark.parametrize("backend", ["cpu", "opencl"])
@pytest.mark.parametrize("name", INPLACE)
def test_inplace_layouts(name, backend):
    """Non-contiguous and 0-d targets, operands broadcast to the target, the target as its own operand."""
    _skip_slow_copy_road(name, backend)
    op, dtype, device = _op_case(name, backend)
    target, others = _arguments(op, device, dtype, shape=(3, 2))
    def tensors(f, values):
        return [f(v) if isinstance(v, ember.Tensor) else v for v in values]
    _check(name, target.t(), tensors(lambda o: o.t(), others), backend)  # transposed: strided target and operands
    target, others = _arguments(op, device, dtype, shape=(2, 6))
    _check(name, target[:, ::2], tensors(lambda o: o[:, ::2], others), backend)  # sliced
    target, others = _arguments(op, device, dtype, shape=())
    _check(name, target, others, backend)  # 0-d
    if others and all(isinstance(o, ember.Tensor) for o in others):
        target, others = _arguments(op, device, dtype, other_shape=(3,))
        _check(name, target, others, backend)  # broadcast operands
        target, others = _arguments(op, device, dtype)
        _check(name, target, [target] * len(others), backend)  # x.op_(x)


@pytest.mark.parametrize("backend", ["cpu", "opencl"])
def test_counts_of_common_calls(backend):
    device = _device(backend)
    x, y = ember.rand(10, device=device), ember.rand(10, device=device)
    copies = inplace.copy_road_count()
    x.add_(y)
    x.mul_(2)
    x.sub_(y, alpha=0.5)
    x += y
    x *= 1.5
    x.sqrt_()
    assert inplace.copy_road_count() == copies, "every call ran one kernel into x"
    if backend == "opencl":  # composites rendered from their formula as one kernel
        x.relu_()
        x.clamp_min_(0.25)
        x.lerp_(y, 0.5)
        assert inplace.copy_road_count() == copies
    with _Seen() as seen:
        x.add_(y)
        x.mul_(2)
    assert seen.names == ["add", "mul"]


@pytest.mark.parametrize("backend", ["cpu", "opencl"])
def test_dtype_casts_and_shape_errors_take_the_copy_road(backend):
    device = _device(backend)
    x = ember.tensor([1.0, 2.0, 3.0], device=device)
    wide = ember.tensor([0.5, 0.25, 0.125], dtype=ember.int32, device=device)
    copies = inplace.copy_road_count()
    x.add_(wide)  # float32 + int32 computes in float32, no cast of x: one kernel
    assert inplace.copy_road_count() == copies
    x.mul_(ember.tensor(2.0, device=device, dtype=ember.int64))  # a 0-d operand does not promote x either
    assert inplace.copy_road_count() == copies
    np.testing.assert_allclose(x.cpu().numpy(), [2.0, 4.0, 6.0])
    i = ember.tensor([1, 2, 3], device=device)
    with pytest.raises(DtypeError, match="can't be cast"):
        i.add_(ember.tensor([1.5, 1.5, 1.5], device=device))  # a float result into an int tensor
    b = ember.tensor([True, False, True], device=device)
    f = ember.tensor([1.0, 2.0, 3.0], device=device)
    f.eq_(ember.tensor([1.0, 0.0, 3.0], device=device))  # a bool result, cast into float32: copy road
    np.testing.assert_array_equal(f.cpu().numpy(), [1.0, 0.0, 1.0])
    b.logical_and_(ember.tensor([True, True, False], device=device))
    np.testing.assert_array_equal(b.cpu().numpy(), [True, False, False])
    with pytest.raises(Exception, match="doesn't match the broadcast shape"):
        ember.zeros(3, device=device).add_(ember.ones(2, 3, device=device))
    if ember.float64 in registry.get_backend(backend).supported_dtypes(0 if backend != "cpu" else None):
        g = ember.tensor([1.0, 2.0], device=device)
        before = inplace.copy_road_count()
        g.add_(ember.tensor([0.1, 0.2], dtype=ember.float64, device=device))  # computed in float64, cast into g
        assert inplace.copy_road_count() == before + 1
        assert g.dtype == ember.float32
        np.testing.assert_allclose(g.cpu().numpy(), [1.1, 2.2], rtol=1e-6)


@pytest.mark.parametrize("backend", ["cpu", "opencl"])
def test_overlap(backend):
    """A target overlapping an operand elsewhere than element for element: the values of the out-of-place op."""
    device = _device(backend)
    base = ember.arange(8, dtype=ember.float32, device=device)
    expected = base.cpu().numpy().copy()
    expected[1:] = expected[1:] + expected[:-1]
    base[1:].add_(base[:-1])
    np.testing.assert_array_equal(base.cpu().numpy(), expected)
    row = ember.zeros(3, device=device)
    wide = row.expand(2, 3)
    expected = F.add(wide, 1).cpu().numpy()
    wide.add_(1)  # two elements at each address
    np.testing.assert_array_equal(row.cpu().numpy(), expected[0])


@pytest.mark.parametrize("backend", ["cpu", "opencl"])
def test_autograd_semantics(backend):
    device = _device(backend)
    leaf = ember.ones(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        leaf.add_(1)
    with ember.no_grad():
        version = leaf._version[0]
        copies = inplace.copy_road_count()
        leaf.mul_(2)  # an optimizer's update: one kernel
        assert inplace.copy_road_count() == copies and leaf._version[0] == version + 1
    np.testing.assert_array_equal(leaf.detach().cpu().numpy(), [2.0, 2.0, 2.0])
    # a tensor saved for backward, then changed in place outside the graph: backward refuses it
    x = ember.ones(3, device=device)
    y = (x * leaf).sum()
    x.mul_(3)
    with pytest.raises(RuntimeError, match="modified by an inplace operation|version"):
        y.backward()
    # a non-leaf changed in place with grad: recorded through copy_, gradients flow
    w = ember.ones(3, device=device, requires_grad=True)
    h = w * 2
    h.mul_(ember.tensor([1.0, 2.0, 3.0], device=device))
    h.sum().backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), [2.0, 4.0, 6.0])


def test_backend_without_out_kernels_keeps_the_copy_road():
    """A backend with no out-kernels (the contract's default, as the template backend) copies."""
    from ember.dispatch import Backend
    assert Backend.out_kernels == {} and not Backend.writes_into_any
    backend = registry.get_backend("cpu")
    saved = backend.out_kernels
    from ember.dispatch.execution.plan import clear
    try:
        type(backend).out_kernels = {}
        clear()
        x, y = ember.ones(4), ember.ones(4)
        copies = inplace.copy_road_count()
        x.add_(y)
        assert inplace.copy_road_count() == copies + 1
        np.testing.assert_array_equal(x.cpu().numpy(), [2.0] * 4)
    finally:
        type(backend).out_kernels = saved
        clear()


def test_default_writes_into():
    """The contract's default overlap test (used by cuda and opencl)."""
    from ember.dispatch.contract.backend import no_internal_overlap
    assert no_internal_overlap((2, 3), (3, 1)) and no_internal_overlap((3, 2), (1, 3))
    assert no_internal_overlap((2, 3), (6, 2)) and no_internal_overlap((), ())
    assert not no_internal_overlap((2, 3), (0, 1)) and not no_internal_overlap((3, 3), (1, 1))
    assert no_internal_overlap((1, 3), (0, 1))  # a stride along a dim of size 1 is never taken
    cl = registry.get_backend("opencl")
    if ember.backends.available().get("opencl") != "available":
        pytest.skip("opencl unavailable")
    x = ember.zeros(6, device="opencl")
    assert cl.writes_into(x._data, (x._data,))
    assert not cl.writes_into(x[1:]._data, (x[:-1]._data,))
    assert cl.writes_into(x._data, (ember.ones(6, device="opencl")._data,))
    assert not cl.writes_into(x.expand(2, 6)._data, ())
