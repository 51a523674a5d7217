"""Type promotion: ``promote_types`` against PyTorch's table, and promotion of real calls on the backend."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.conformance.cases import sampled_dtypes, target_dtypes
from ember.conformance.oracle import host, numpy_dtype, wide
from ember.dispatch import ALL_DTYPES

# PyTorch's torch.promote_types, written out (from PyTorch 2.13): row dtype with column dtype.
PROMOTE_TYPES_TABLE = """
         bool     uint8    int8     int16    int32    int64    float16  bfloat16 float32  float64
bool     bool     uint8    int8     int16    int32    int64    float16  bfloat16 float32  float64
uint8    uint8    uint8    int16    int16    int32    int64    float16  bfloat16 float32  float64
int8     int8     int16    int8     int16    int32    int64    float16  bfloat16 float32  float64
int16    int16    int16    int16    int16    int32    int64    float16  bfloat16 float32  float64
int32    int32    int32    int32    int32    int32    int64    float16  bfloat16 float32  float64
int64    int64    int64    int64    int64    int64    int64    float16  bfloat16 float32  float64
float16  float16  float16  float16  float16  float16  float16  float16  float32  float32  float64
bfloat16 bfloat16 bfloat16 bfloat16 bfloat16 bfloat16 bfloat16 float32  bfloat16 float32  float64
float32  float32  float32  float32  float32  float32  float32  float32  float32  float32  float64
float64  float64  float64  float64  float64  float64  float64  float64  float64  float64  float64
"""
# ... and with the complex dtypes (the table is symmetric: these columns are also the missing rows).
COMPLEX_PROMOTE_TYPES_TABLE = """
           complex64   complex128
bool       complex64   complex128
uint8      complex64   complex128
int8       complex64   complex128
int16      complex64   complex128
int32      complex64   complex128
int64      complex64   complex128
float16    complex64   complex128
bfloat16   complex64   complex128
float32    complex64   complex128
float64    complex128  complex128
complex64  complex64   complex128
complex128 complex128  complex128
"""


def _expected_table() -> dict:
    table = {}
    for text in (PROMOTE_TYPES_TABLE, COMPLEX_PROMOTE_TYPES_TABLE):
        header, *rows = [line.split() for line in text.strip().splitlines()]
        for row in rows:
            for column, cell in zip(header, row[1:]):
                table[row[0], column] = table[column, row[0]] = cell
    return table


EXPECTED = _expected_table()
BY_NAME = {d.name: d for d in ALL_DTYPES}


@pytest.mark.parametrize("a,b", [pytest.param(a, b, id=f"{a.name}-{b.name}") for a in ALL_DTYPES for b in ALL_DTYPES])
def test_promote_types(a, b):
    assert ember.promote_types(a, b) is BY_NAME[EXPECTED[a.name, b.name]]


def pytest_generate_tests(metafunc) -> None:
    if metafunc.definition.name == "test_tensor_pairs":
        dtypes, sampled = target_dtypes(metafunc.config), sampled_dtypes(metafunc.config)
        metafunc.parametrize("a,b", [pytest.param(a, b, id=f"{a.name}-{b.name}") for a in sampled for b in sampled
                                     if BY_NAME[EXPECTED[a.name, b.name]] in dtypes])


def test_tensor_pairs(a, b, make):
    """add of two tensors computes in, and stores, the promoted dtype."""
    x, y = make((2, 3), dtype=a, low=0, high=10), make((2, 3), dtype=b, low=0, high=10)
    out = ember.add(x, y)
    expected = ember.promote_types(a, b)
    assert out.dtype is expected
    assert host(out).dtype == numpy_dtype(expected)
    want = (wide(x) + wide(y)).astype(numpy_dtype(expected))
    if expected is ember.bool:
        want = host(x) | host(y)
    np.testing.assert_allclose(wide(out), want.astype(np.complex128), rtol=1e-2)


def _t(make, dtype, shape=(2, 3)):
    return make(shape, dtype=dtype, low=1, high=5)


# (name, dtypes the case needs, a call on the device, the dtype PyTorch gives)
CASES = [
    ("int32 tensor + 1.0", ("int32", "float32"), lambda make: _t(make, "int32") + 1.0, "float32"),
    ("uint8 tensor + 0-d int64 tensor", ("uint8", "int64"), lambda make: _t(make, "uint8") + _t(make, "int64", ()),
     "uint8"),
    ("int32 / int32", ("int32", "float32"), lambda make: _t(make, "int32") / _t(make, "int32"), "float32"),
    ("bool tensor + 1", ("bool", "int64"), lambda make: make((2, 3), dtype="bool") + 1, "int64"),
    ("bool tensor + 1.5", ("bool", "float32"), lambda make: make((2, 3), dtype="bool") + 1.5, "float32"),
    ("float16 tensor + 0-d float64 tensor", ("float16", "float64"),
     lambda make: _t(make, "float16") + _t(make, "float64", ()), "float16"),
    ("int32 tensor + 0-d float64 tensor", ("int32", "float64"),
     lambda make: _t(make, "int32") + _t(make, "float64", ()), "float64"),
    ("0-d int64 + 0-d float16", ("int64", "float16"), lambda make: _t(make, "int64", ()) + _t(make, "float16", ()),
     "float16"),
    ("int8 tensor + True", ("int8",), lambda make: _t(make, "int8") + True, "int8"),
    ("0-d uint8 + 0-d int8", ("uint8", "int8", "int16"), lambda make: _t(make, "uint8", ()) + _t(make, "int8", ()),
     "int16"),
    ("bfloat16 + float16 tensors", ("bfloat16", "float16", "float32"),
     lambda make: _t(make, "bfloat16") + _t(make, "float16"), "float32"),
    ("int64 tensor * 2.5", ("int64", "float32"), lambda make: _t(make, "int64") * 2.5, "float32"),
    ("sum of int8", ("int8", "int64"), lambda make: ember.sum(_t(make, "int8")), "int64"),
    ("sum of bool", ("bool", "int64"), lambda make: ember.sum(make((4,), dtype="bool")), "int64"),
    ("exp of int16", ("int16", "float32"), lambda make: ember.exp(_t(make, "int16")), "float32"),
    ("eq of int8 and float32", ("int8", "float32", "bool"),
     lambda make: ember.eq(_t(make, "int8"), _t(make, "float32")), "bool"),
    # complex: a Python complex or a lower-ranked complex tensor takes the float's complex counterpart
    ("float32 tensor + 1j", ("float32", "complex64"), lambda make: _t(make, "float32") + 1j, "complex64"),
    ("float64 tensor + 1j", ("float64", "complex128"), lambda make: _t(make, "float64") + 1j, "complex128"),
    ("int64 tensor * 2j", ("int64", "complex64"), lambda make: _t(make, "int64") * 2j, "complex64"),
    ("float32 tensor + 0-d complex128 tensor", ("float32", "complex128", "complex64"),
     lambda make: _t(make, "float32") + _t(make, "complex128", ()), "complex64"),
    ("float64 tensor + 0-d complex64 tensor", ("float64", "complex64", "complex128"),
     lambda make: _t(make, "float64") + _t(make, "complex64", ()), "complex128"),
    ("complex64 + float64 tensors", ("complex64", "float64", "complex128"),
     lambda make: _t(make, "complex64") + _t(make, "float64"), "complex128"),
    ("complex64 tensor + 2.5", ("complex64",), lambda make: _t(make, "complex64") + 2.5, "complex64"),
    ("abs of complex64", ("complex64", "float32"), lambda make: ember.abs(_t(make, "complex64")), "float32"),
    ("sum of complex128", ("complex128",), lambda make: ember.sum(_t(make, "complex128")), "complex128"),
    ("eq of complex64 and float32", ("complex64", "float32", "bool"),
     lambda make: ember.eq(_t(make, "complex64"), _t(make, "float32")), "bool"),
]


@pytest.mark.parametrize("needs,compute,expected", [pytest.param(n, c, e, id=name) for name, n, c, e in CASES])
def test_promotion_case(needs, compute, expected, make, backend):
    if not backend.supports(*(BY_NAME[n] for n in needs)):
        pytest.skip(f"{backend.name} lacks one of {needs}")
    out = compute(make)
    assert out.dtype is BY_NAME[expected]
    assert host(out).dtype == numpy_dtype(BY_NAME[expected])


def test_promote_types_bfloat16_float16():
    assert ember.promote_types(ember.bfloat16, ember.float16) is ember.float32


def test_result_type_ranks_operands():
    """Tensors with dims outrank 0-d tensors, which outrank Python numbers (in the same category)."""
    assert ember.result_type(ember.tensor([1], dtype=ember.int8), 1000) is ember.int8
    assert ember.result_type(ember.tensor([1], dtype=ember.int8), ember.tensor(1)) is ember.int8
    assert ember.result_type(ember.tensor(1, dtype=ember.int8), 2.5) is ember.float32


def test_inplace_refuses_lossy_cast(make, backend):
    """An int tensor *= a float tensor would silently truncate: PyTorch refuses, and so must we."""
    if not backend.supports(ember.int32, ember.float32):
        pytest.skip(f"{backend.name} lacks int32 or float32")
    x = make((2, 3), dtype="int32")
    before = host(x)
    with pytest.raises(ember.DtypeError, match="mul") as info:
        x *= make((2, 3), dtype="float32")
    assert "float32" in str(info.value) and "int32" in str(info.value)
    np.testing.assert_array_equal(host(x), before)


def test_inplace_refuses_complex_into_real(make, backend):
    """A float tensor += a complex one would drop the imaginary part: PyTorch refuses, and so must we."""
    if not backend.supports(ember.float32, ember.complex64):
        pytest.skip(f"{backend.name} lacks float32 or complex64")
    x = make((2, 3), dtype="float32")
    before = host(x)
    with pytest.raises(ember.DtypeError, match="add") as info:
        x += make((2, 3), dtype="complex64")
    assert "complex64" in str(info.value) and "float32" in str(info.value)
    with pytest.raises(ember.DtypeError, match="mul"):
        x *= 1j
    np.testing.assert_array_equal(host(x), before)


def test_inplace_allows_safe_cast(make, backend):
    """float32 += int32 and int32 += int8 keep the destination's dtype."""
    if not backend.supports(ember.int32, ember.float32, ember.int8):
        pytest.skip(f"{backend.name} lacks int32, int8 or float32")
    x, i = make((3,), dtype="float32"), make((3,), dtype="int32")
    expected = host(x) + host(i)
    x += i
    assert x.dtype is ember.float32
    np.testing.assert_allclose(host(x), expected, rtol=1e-6)
    small = make((3,), dtype="int8")
    expected = host(i) + host(small)
    i += small
    assert i.dtype is ember.int32
    np.testing.assert_array_equal(host(i), expected)
