"""Known families of PyTorch names, to group a namespace's missing names by why they matter less.

A reason explains a missing name; it never removes it from the count. The table is small on
purpose: a family is listed only when many names share one cause, recognized from the name
itself (a regular expression) or, for TorchScript, from the object (C++ classes PyTorch binds
with pybind11 are its IR and runtime types: ``Graph``, ``Node``, ``ScriptModule``). The first
matching row wins; names matching none stay ungrouped.
"""
from __future__ import annotations

import re
from typing import Any

REASONS: tuple[tuple[str, str], ...] = (
    ("quantization", r"quantiz|^(q|Q)u?[iI]nt|^q_|qscheme|^per_(channel|tensor)|int_repr|fake_quant|fbgemm"
                     r"|^(intrinsic|qat)$"),
    ("sparse tensors", r"sparse|_(coo|csr|csc|bsr|bsc)$|^(to_dense|coalesce|is_coalesced|indices|values"
                       r"|crow_indices|ccol_indices|row_indices|col_indices|dense_dim|smm|hspmm|sspaddmm)$"),
    ("complex numbers", r"complex|^(conj|conj_physical|resolve_conj|is_conj|real|imag|angle|polar"
                        r"|view_as_real|view_as_complex|cfloat|cdouble|chalf|complex32)$"),
    ("device-specific (CUDA, cuDNN, MKL-DNN, MPS, XPU, ...)",
     r"cuda|cudnn|cufft|nccl|miopen|mkldnn|^mkl|mps|xpu|mtia|^hip|^hpu|^ipu|vulkan|^xla"),
    ("TorchScript, fx and compiler", r"^(jit|fx|compiler|export|package|library|ops|classes|cpp|compile|script"
                                     r"|is_compiling|fork|wait|cond|while_loop)$|^[sS]ym[A-Z_]"),
    ("legacy typed tensor and storage classes", r"^(?!Tensor$)\w*(Tensor|Storage)$|storage"),
)
_COMPILED = tuple((reason, re.compile(pattern)) for reason, pattern in REASONS)
_TORCHSCRIPT = "TorchScript, fx and compiler"


def reason_for(name: str, torch_object: Any = None) -> str | None:
    """The known family ``name`` belongs to, or None."""
    if isinstance(torch_object, type) and type(torch_object).__name__ == "pybind11_type":
        return _TORCHSCRIPT
    for reason, pattern in _COMPILED:
        if pattern.search(name):
            return reason
    return None
