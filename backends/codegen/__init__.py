"""Kernel source generation shared by the bundled backends: a helper, not a plugin (like ``arraykernels``).

Every elementwise kernel comes from one place: the op's ``scalar=`` formula, lowered once by
``ember.dispatch`` (``lower``: casts, wrapping and half types decided there) and spelled here:

- ``c``: the C renderer with its dialects, OpenCL C (which PoCL runs in CI) and CUDA C++, so the logic CI
  runs on PoCL is the logic a GPU runs; ``complex_c``: its complex values (float2/double2 pairs) and their
  helper functions, which hand-written complex kernels call too;
- ``python``: the Python renderer numba compiles (the CPU's fusion and formula kernels);
- ``eager``: one op call as a one-step program, so an eager kernel is its formula rendered, as a fused one is;
- ``handwritten``: the one list of formula ops whose bundled kernels are still written by hand, each with
  its reason (``tests/test_formula_kernels.py`` fails on any other).

Third-party backends may use it too: it imports only ``ember.dispatch``'s backend API.
"""
from __future__ import annotations

from . import complex_c
from .c import CUDA, OPENCL, CDialect, render_c
from .eager import answers_truth, c_value_function, compute_dtype, one_step_program
from .python import render_python

__all__ = ["CDialect", "CUDA", "OPENCL", "answers_truth", "c_value_function", "complex_c", "compute_dtype",
           "one_step_program", "render_c", "render_python"]
