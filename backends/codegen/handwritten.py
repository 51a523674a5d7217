"""The one list of formula ops whose bundled kernels are not their formula rendered, each with its reason.

An op that declares ``scalar=`` gets its kernel from that formula (``eager``), or no kernel at all (its
composite is then the formula computed over ``F``: ``ember.dispatch.formula_composite``).
``tests/test_formula_kernels.py`` fails on a kernel of a formula op that is neither rendered (a kernel
rendered from its formula carries ``kernel.formula``, and ``kernel.by_hand``: the hand-written kernel
of the calls the formula does not cover, if any) nor listed here, and on an entry here that no longer
applies.
"""
from __future__ import annotations

ARRAY_UFUNC = ("the array library's own ufunc for the formula's one function or operator (NumPy on the CPU, CuPy "
               "on CUDA): it is the formula's loop already, vectorized, with nothing to compile; a rendered numba or "
               "CUDA kernel would compile per dtype and run the same loop")
ARRAY_PASSES = ("a few NumPy/CuPy passes (max, exp, log1p, ...) in the formula's order; the CPU's numba formula "
                "kernels (cpu/formula_kernels.py) replace these where one compiled pass was measured faster "
                "(gelu, gelu_backward, threshold_backward); CUDA's rendered replacements wait for a GPU to verify "
                "them (issue 33's launch counts)")
ARRAY_CHECKED = ("an array-library call plus the check PyTorch makes (integer division by zero, integers to "
                 "negative powers), which the formula language has no way to raise")
BAKED_ATTRIBUTE = ("rendered, except calls whose formula names an attribute (add/sub with alpha != 1): the "
                   "formula would compile the value into the kernel, so each new alpha (a learning rate) would "
                   "compile a kernel; the hand-written kernel takes alpha as an argument")
NO_FORMULA_FOR_CALL = ("rendered, except what the formula does not cover: division's floor and trunc rounding modes "
                       "(no formula: integer division by zero raises, which needs a read back) and integer powers "
                       "(negative exponents raise)")

COMPLEX_FORM = ("rendered, except complex calls: the op's complex composite is not its formula (atanh's 2z / (1 - z) "
                "overflows and loses the sign of a zero imaginary part at the branch cuts; isinf's x - x != 0 misses "
                "inf + nan i), so complex calls take a kernel that follows the composite (complex_c's atanh)")

_ARRAY = {
    **dict.fromkeys(("neg", "abs", "sign", "exp", "expm1", "log", "log1p", "sqrt", "sin", "cos", "tan", "tanh",
                     "erf", "floor", "ceil", "logical_not", "isnan", "log2", "reciprocal", "sigmoid", "isinf",
                     "isfinite", "mul", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
                     "logical_or", "logical_xor", "where", "add", "sub", "atanh", "log10", "trunc", "copysign"),
                    ARRAY_UFUNC),
    **dict.fromkeys(("div", "pow"), ARRAY_CHECKED),
    **dict.fromkeys(("relu", "leaky_relu", "elu", "silu", "mish", "softplus", "logsigmoid"), ARRAY_PASSES),
}

#: backend -> op -> why its kernel is (partly) hand-written. The CPU and CUDA backends share ``arraykernels``;
#: the CPU's entries are checked here (CI has no GPU), and CUDA's table is built from the same code.
HANDWRITTEN: dict[str, dict[str, str]] = {
    "cpu": _ARRAY,
    "cuda": {**_ARRAY, "gelu_backward": ARRAY_PASSES, "threshold_backward": ARRAY_PASSES},  # gelu: rendered
    "opencl": {"add": BAKED_ATTRIBUTE, "sub": BAKED_ATTRIBUTE, "div": NO_FORMULA_FOR_CALL, "pow": NO_FORMULA_FOR_CALL,
               "atanh": COMPLEX_FORM, "isinf": COMPLEX_FORM},
}

__all__ = ["HANDWRITTEN"]
