"""The numba loops of the CPU's bfloat16 work: rounding float32 to it, and elementwise arithmetic that reads
and writes bfloat16 as stored, computing each element in float32 (PyTorch's opmath).

A bfloat16 is the upper half of a float32, so widening is a shift and rounding an integer add: to nearest,
ties to even, with NaN kept NaN (its sign and ml_dtypes' quiet 0x7FC0) instead of carried into an
infinity. The bits are truncated to 32 and 16 bits as they go, which keeps LLVM's vector lanes narrow:
rounding (128, 784) float32 takes about 22 us, against 120-160 us for ml_dtypes' ``astype``, which converts
one element at a time. ``load`` and ``store`` do the same for one element, through a bit cast numba lacks
(``_float_from_bits``/``_bits_from_float``, an LLVM bitcast each), so that an elementwise loop reads the
bfloat16 operands and writes the result in one pass over half the bytes, where widening first makes two
float32 temporaries and three more passes.

Imported on the first bfloat16 kernel call, never with ember (importing numba takes a while);
``cache=True``: later processes load the machine code instead of compiling it.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic


@intrinsic
def _float_from_bits(typingctx, bits):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.uint32), codegen


@intrinsic
def _bits_from_float(typingctx, value):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.uint32(types.float32), codegen


@njit(inline="always")
def load(half):
    """The float32 value of bfloat16 bits ``half`` (exact)."""
    return _float_from_bits(np.uint32(half) << np.uint32(16))


@njit(inline="always")
def store(value):
    """float32 ``value`` rounded to the nearest bfloat16 (ties to even), as bits."""
    b = _bits_from_float(value)
    high = np.uint32(b >> np.uint32(16))
    rounded = np.uint16(np.uint32(b + np.uint32(0x7FFF) + (high & np.uint32(1))) >> np.uint32(16))
    quiet_nan = np.uint16((high & np.uint32(0x8000)) | np.uint32(0x7FC0))
    return quiet_nan if value != value else rounded


@njit(cache=True, error_model="numpy")
def round_to_bfloat16(values, out):
    """``out[i]``: float32 ``values[i]`` rounded to bfloat16 bits."""
    for i in range(values.size):
        out[i] = store(values[i])


# -- elementwise, over flat arrays of bits; numbers arrive as float32 ------------------------------------

@njit(cache=True, error_model="numpy")
def add(a, b, alpha, out):
    """``a + alpha * b`` (sub passes -alpha)."""
    for i in range(out.size):
        out[i] = store(load(a[i]) + load(b[i]) * alpha)


@njit(cache=True, error_model="numpy")
def add_number(a, number, out):
    for i in range(out.size):
        out[i] = store(load(a[i]) + number)


@njit(cache=True, error_model="numpy")
def mul(a, b, out):
    for i in range(out.size):
        out[i] = store(load(a[i]) * load(b[i]))


@njit(cache=True, error_model="numpy")
def mul_number(a, number, out):
    for i in range(out.size):
        out[i] = store(load(a[i]) * number)


@njit(cache=True, error_model="numpy")
def div(a, b, out):
    for i in range(out.size):
        out[i] = store(load(a[i]) / load(b[i]))


@njit(cache=True, error_model="numpy")
def div_number(a, number, out):
    for i in range(out.size):
        out[i] = store(load(a[i]) / number)


@njit(cache=True, error_model="numpy")
def relu(a, out):
    """``max(a, 0)``: NaN kept, -0.0 made 0.0 (as NumPy's maximum)."""
    for i in range(out.size):
        value = load(a[i])
        out[i] = store(np.float32(0.0) if value <= np.float32(0.0) else value)


@njit(cache=True, error_model="numpy")
def threshold_backward(grad, a, threshold, out):
    """``grad`` where ``a > threshold``, else 0 (times grad, as the float32 kernel: 0 * inf is NaN)."""
    for i in range(out.size):
        keep = np.float32(1.0) if load(a[i]) > threshold else np.float32(0.0)
        out[i] = store(keep * load(grad[i]))


# -- sums, into float32 ------------------------------------------------------------------------------

@njit(cache=True, error_model="numpy", fastmath={"reassoc"})
def sum_rows(x, out):
    """``out[c] = sum over r of x[r, c]``: row by row, as NumPy reduces a leading axis (linear's bias gradient)."""
    for c in range(out.size):
        out[c] = np.float32(0.0)
    for r in range(x.shape[0]):
        for c in range(x.shape[1]):
            out[c] += load(x[r, c])


@njit(cache=True, error_model="numpy", fastmath={"reassoc"})
def sum_around(x, out):
    """``out[c] = sum over a, b of x[a, c, b]`` (a convolution's bias gradient over (N, C, H * W))."""
    outer, kept, inner = x.shape
    for c in range(kept):
        total = 0.0  # float64 across the (a, c) runs, each summed in float32 lanes
        for a in range(outer):
            run = np.float32(0.0)
            for b in range(inner):
                run += load(x[a, c, b])
            total += run
        out[c] = total
