"""The cuda backend's complex host logic, run on the CPU with NumPy standing in for CuPy (CI has no GPU; the
CUDA C it renders for complex is compiled by tests/test_cuda_nvrtc.py): the dtypes it holds and scatter-add
into complex arrays, which adds the real and imaginary parts as two real scatter-adds.
"""
from __future__ import annotations

import types

import numpy as np

import ember
from ember.backends.cuda.library import _BASE_DTYPES, scatter_adder


def test_the_backend_holds_both_complex_dtypes_as_cupys_own():
    assert _BASE_DTYPES[ember.complex64] == np.complex64
    assert _BASE_DTYPES[ember.complex128] == np.complex128


def test_scatter_add_into_complex_adds_both_parts_with_repeats():
    add_at = scatter_adder(types.SimpleNamespace(scatter_add=np.add.at))  # cupyx.scatter_add is np.add.at on the GPU
    for dtype, component in ((np.complex64, np.float32), (np.complex128, np.float64)):
        target = np.array([1 + 1j, 0, 2j], dtype)
        add_at(target, np.array([0, 0, 2]), np.array([1 - 2j, 0.5 + 0.25j, -3 + 1j], dtype))
        np.testing.assert_array_equal(target, np.array([2.5 - 0.75j, 0, -3 + 3j], dtype))
        add_at(target, np.array([1]), np.array([4.0], component))  # real values: the imaginary parts add 0
        assert target[1] == 4 and target.dtype == dtype


def test_fusion_converts_cupys_complex_elements_to_the_dialects_pairs():
    """CuPy hands an ElementwiseKernel complex<T> elements; the rendered element function takes float2/double2."""
    from ember.backends.cuda.fusion import elementwise_source
    from ember.dispatch import ElementwiseProgram, Step, complex64, complex128
    program = ElementwiseProgram((((3,), complex64), ((3,), complex128)), (
        Step("mul", (("input", 0), ("input", 1)), (), complex128, complex128),
        Step("abs", (("step", 0),), (), complex128, ember.float64)), (0, 1), (3,))
    source = elementwise_source(program)
    assert "make_float2(a0.real(), a0.imag())" in source.operation
    assert "make_double2(a1.real(), a1.imag())" in source.operation
    assert "o0 = complex<double>(y0.x, y0.y);" in source.operation and "o1 = y1;" in source.operation
    assert source.in_params == "complex64 a0, complex128 a1"
