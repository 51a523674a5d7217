"""Views share storage with their base: writes through either side show in the other.

Each case is a view made with Ember and the same view made with NumPy on a copy of
the base; after a write, the Ember base must equal the NumPy base.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.conformance.cases import target_dtypes
from ember.conformance.oracle import host

# name -> (base shape, the view in Ember, the same view in NumPy)
VIEWS = {
    "view": ((4, 6), lambda x: x.view(3, 8), lambda a: a.reshape(3, 8)),
    "reshape-contiguous": ((4, 6), lambda x: x.reshape(2, 12), lambda a: a.reshape(2, 12)),
    "transpose": ((4, 6), lambda x: x.transpose(0, 1), lambda a: a.T),
    "t": ((4, 6), lambda x: x.t(), lambda a: a.T),
    "permute": ((2, 3, 4), lambda x: x.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    "slice": ((6, 4), lambda x: x[1:5:2], lambda a: a[1:5:2]),
    "slice-columns": ((6, 4), lambda x: x[:, 1:3], lambda a: a[:, 1:3]),
    "select": ((6, 4), lambda x: x[2], lambda a: a[2]),
    "select-column": ((6, 4), lambda x: x.select(1, -1), lambda a: a[:, -1]),
    "unsqueeze": ((6, 4), lambda x: x.unsqueeze(1), lambda a: a[:, None]),
    "squeeze": ((6, 1, 4), lambda x: x.squeeze(1), lambda a: a[:, 0]),
    "flatten": ((2, 3, 4), lambda x: x.flatten(), lambda a: a.reshape(-1)),
    "unflatten": ((6, 4), lambda x: x.unflatten(0, (2, 3)), lambda a: a.reshape(2, 3, 4)),
    "split": ((6, 4), lambda x: ember.split(x, 4)[1], lambda a: a[4:]),
    "chunk": ((6, 4), lambda x: ember.chunk(x, 3, 1)[0], lambda a: a[:, :2]),
    "unfold": ((8,), lambda x: x.unfold(0, 3, 3), lambda a: a[:6].reshape(2, 3)),
    "narrow": ((6, 4), lambda x: x.narrow(1, -3, 2), lambda a: a[:, 1:3]),
    "adjoint": ((2, 3, 4), lambda x: x.adjoint(), lambda a: a.swapaxes(-2, -1)),
    "detach": ((6, 4), lambda x: x.detach(), lambda a: a),
}
EXPAND = ((3, 1), lambda x: x.expand(3, 4), lambda a: np.broadcast_to(a, (3, 4)))
#: Views of complex tensors only: their parts, and the (..., 2) real view of the pairs they are stored as.
COMPLEX_VIEWS = {
    "real": ((4, 6), lambda x: x.real, lambda a: a.real),
    "imag": ((4, 6), lambda x: x.imag, lambda a: a.imag),
    "view_as_real": ((4, 6), lambda x: ember.view_as_real(x), lambda a: a.view(a.real.dtype).reshape(4, 6, 2)),
    "view_as_real-select": ((4, 6), lambda x: ember.view_as_real(x)[..., 1], lambda a: a.imag),
}
#: The real views that complex tensors are checked through too (a few: the layouts differ, not the code).
COMPLEX_CHECKED = ("transpose", "slice-columns", "select", "unsqueeze")


def pytest_generate_tests(metafunc) -> None:
    """(view case, dtype): every view in float32, some and the complex-only ones in complex64 where supported."""
    if "view_case" not in metafunc.fixturenames or "dtype" not in metafunc.fixturenames:
        return
    cases = [pytest.param(VIEWS[name], ember.float32, id=name) for name in sorted(VIEWS)]
    if metafunc.definition.name == "test_view_sees_base_writes":  # an expanded view cannot be written through
        cases.append(pytest.param(EXPAND, ember.float32, id="expand"))
    if ember.complex64 in target_dtypes(metafunc.config):
        cases += [pytest.param(VIEWS[name], ember.complex64, id=f"{name}-complex64") for name in COMPLEX_CHECKED]
        cases += [pytest.param(case, ember.complex64, id=f"{name}-complex64") for name, case in COMPLEX_VIEWS.items()]
    metafunc.parametrize("view_case,dtype", cases)


def _number(dtype, value: float):
    """``value``, or for complex dtypes a complex number with both parts (so that the parts cannot swap)."""
    return complex(value, 1 - value) if dtype.is_complex else value


def test_shares_storage(view_case, dtype, make):
    shape, view_of, _ = view_case
    base = make(shape)
    assert view_of(base).data_ptr_id() == base.data_ptr_id()


def test_write_through_view(view_case, dtype, make):
    """add_ on the view changes exactly the base elements it covers."""
    shape, view_of, numpy_view = view_case
    base = make(shape)
    expected = host(base)
    view = view_of(base)
    version = base._version[0]
    step = _number(view.dtype, 1)
    out = view.add_(step)
    numpy_view(expected)[...] += step
    assert out is view
    np.testing.assert_allclose(host(base), expected, rtol=1e-6)
    assert base._version[0] > version, "an in-place write through a view must bump the base's version"
    assert view._version is base._version, "a view shares its base's version counter"


def test_write_through_view_with_copy(view_case, dtype, make):
    shape, view_of, numpy_view = view_case
    base = make(shape)
    expected = host(base)
    view = view_of(base)
    source = make(tuple(view.shape), dtype=view.dtype)
    view.copy_(source)
    numpy_view(expected)[...] = host(source)
    np.testing.assert_allclose(host(base), expected, rtol=1e-6)


def test_view_sees_base_writes(view_case, dtype, make):
    """Writing into the base (setitem, then fill_) shows through the view."""
    shape, view_of, numpy_view = view_case
    base = make(shape)
    view = view_of(base)
    base[0] = _number(dtype, 7.0)
    expected = host(base)
    np.testing.assert_allclose(host(view), numpy_view(expected), rtol=1e-6)
    base.fill_(_number(dtype, -2.0))
    np.testing.assert_array_equal(host(view), numpy_view(np.full(shape, _number(dtype, -2.0), host(base).dtype)))


def test_setitem_writes_base(make):
    base, value = make((4, 5)), make(())
    expected = host(base)
    version = base._version[0]
    base[1, 2:4] = 3.5
    base[:, 0] = value
    expected[1, 2:4] = 3.5
    expected[:, 0] = host(value)
    np.testing.assert_allclose(host(base), expected, rtol=1e-6)
    assert base._version[0] >= version + 2


def test_reshape_of_noncontiguous_copies(make):
    base = make((4, 6))
    flat = base.t().reshape(-1)
    np.testing.assert_array_equal(host(flat), host(base).T.reshape(-1))
    assert flat.data_ptr_id() != base.data_ptr_id()
    before = host(base)
    flat.add_(100)
    np.testing.assert_array_equal(host(base), before)


def test_view_of_noncontiguous_refuses(make):
    """view() cannot merge dims whose strides do not line up; it says so instead of copying."""
    with pytest.raises(ember.ShapeError, match="view"):
        make((4, 6)).t().view(24)


def test_contiguous(make):
    base = make((4, 6))
    assert base.is_contiguous() and base.contiguous() is base
    transposed = base.t()
    assert not transposed.is_contiguous()
    copy = transposed.contiguous()
    assert copy.is_contiguous() and copy.data_ptr_id() != base.data_ptr_id()
    np.testing.assert_array_equal(host(copy), host(base).T)


@pytest.mark.parametrize("method,argument", [("add_", 2), ("sub_", 1), ("mul_", 3), ("div_", 2), ("clamp_", 0.5),
                                             ("fill_", 1.5), ("zero_", None), ("copy_", None), ("neg_", None)])
def test_inplace_keeps_identity(method, argument, make):
    """In-place methods return the very tensor they were called on, and bump its version once."""
    x = make((3, 4))
    version = x._version[0]
    if method == "copy_":
        args = (make((3, 4)),)
    else:
        args = () if argument is None else (argument,)
    assert getattr(x, method)(*args) is x
    assert x._version[0] == version + 1


def test_augmented_assignment_keeps_identity(make):
    x = make((3, 4))
    alias = x
    expected = host(x) * 2 + 1
    x *= 2
    x += 1
    assert x is alias
    np.testing.assert_allclose(host(alias), expected, rtol=1e-6)
    assert x._version[0] == 2


def test_inplace_on_view_bumps_base_and_siblings(make):
    base = make((4, 4))
    row, column = base[1], base[:, 2]
    version = base._version[0]
    row.mul_(0)
    assert base._version[0] == version + 1
    assert row._version[0] == column._version[0] == base._version[0]
    assert host(column)[1] == 0
