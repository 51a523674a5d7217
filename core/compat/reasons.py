"""Known families of PyTorch names that Ember leaves out by design, to say why a name is missing.

A reason explains a missing name; it never removes it from the headline count (the report's "in scope"
column is the coverage over the names no reason excludes). The table is small on purpose: a family is
listed only when it is out of scope as a whole, recognized from the name itself (a regular expression),
from the namespace (all of ``torch.fft``), or, for TorchScript, from the object (C++ classes PyTorch binds
with pybind11 are its IR and runtime types: ``Graph``, ``Node``, ``ScriptModule``). The first matching row
wins; names matching none are real gaps and stay under "other".
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Reason:
    """One family: its label, a pattern over the bare name, and the namespaces it applies to (None: all)."""

    label: str
    pattern: str
    namespaces: tuple[str, ...] | None = None

    def matches(self, name: str, namespace: str | None) -> bool:
        if self.namespaces is not None and namespace not in self.namespaces:
            return False
        return re.search(self.pattern, name) is not None


_TORCHSCRIPT = "TorchScript, fx and compiler"

REASONS: tuple[Reason, ...] = (
    Reason("quantization", r"quantiz|^(q|Q)u?[iI]nt|^q_|qscheme|^per_(channel|tensor)|int_repr|fake_quant|fbgemm"
                           r"|^(intrinsic|qat)$|^choose_qparams"),
    Reason("column-compressed, block and semi-structured sparse layouts (CSC, BSR, BSC, 2:4; ember.sparse has COO "
           "and CSR)", r"_(csc|bsr|bsc)(_tensor)?$|^sparse_compressed_tensor$|^(ccol_indices|row_indices)(_copy)?$"
                       r"|[sS]emi[sS]tructured|semi_structured"),
    Reason("dtypes Ember does not have (sub-byte, float8/float4, unsigned 16-64 bit, bits, complex32)",
           r"^u?int[1-7]$|^uint(16|32|64)$|^bits\w*$|^bit$|^float[48]_\w+$|^hash_tensor$"  # a uint64 result
           r"|^(complex32|chalf)$"),
    Reason("nested and jagged tensors", r"nested|jagged|^to_padded_tensor$"),
    Reason("named tensors", r"^(names|rename_?|refine_names|align_to|align_as)$"),
    Reason("TorchData DataPipes (deprecated in PyTorch)",
           r"[dD]ata[pP]ipe|^DataChunk$|^(graph|graph_settings|argument_validation|runtime_validation\w*"
           r"|non_deterministic|guaranteed_datapipes_determinism|datapipes)$", ("torch.utils.data",)),
    Reason("device-specific (CUDA, cuDNN, MKL-DNN, MPS, XPU, ...)",
           r"cuda|cudnn|cufft|nccl|miopen|mkldnn|^mkl|mps|xpu|mtia|vulkan|(^|_)(hip|hpu|ipu|xla|maia)(_|$)"),
    Reason(_TORCHSCRIPT, r"^(fx|compiler|package|ops|classes|cpp|compile|script"
                         r"|is_compiling|fork|wait|cond|while_loop|overrides|types|JITException"
                         r"|DisableTorchFunction(Subclass)?)$|^[sS]ym[A-Z_]"
                         r"|^(parse_ir|parse_schema|parse_type_comment|import_ir_module\w*"
                         r"|merge_type_from_type_comment|unify_type_list)$"
                         r"|^(AVG|SUM)$"),  # torch.AVG/SUM: the AggregationType of TorchScript's ThroughputBenchmark
    Reason("ATen internals that PyTorch exposes at top level (native_*, fused cells, norm statistics, "
           "grid_sampler_*, *_backward)",
           r"^native_|^batch_norm_(backward|elemt|gather|stats|update)|_cell$|^(rnn_tanh|rnn_relu|lstm|gru)$"
           r"|^grid_sampler(_[23]d)?$|^affine_grid_generator$|_backward|^conv_tbc$|^convolution$"
           r"|^embedding_renorm_$|^constant_pad_nd$|^segment_reduce$|^(unsafe_chunk|unsafe_split"
           r"|unsafe_split_with_sizes)$|^feature_dropout_?$|^_", ("torch",)),
    Reason("process and ecosystem modules (hub, multiprocessing, futures, monitor, shared memory)",
           r"^(hub|multiprocessing|futures|monitor|share_memory_|is_shared)$"),
    Reason("native build and runtime switches Ember has no counterpart of (C++ ABI, build flags, inter-op "
           "thread pool, denormal flushing)",
           r"^(compiled_with_cxx11_abi|has_\w+|(get|set)_num_interop_threads|init_num_threads"
           r"|set_flush_denormal)$", ("torch",)),
    Reason("legacy typed tensor and storage classes",
           r"^(?!Tensor$)\w*(Tensor|Storage)$|storage|^set_default_tensor_type$"),
    Reason("masked tensors (torch.masked's MaskedTensor, a prototype tensor subclass)", r"^masked$", ("torch",)),
    Reason("first-class dimensions (functorch.dim binds tensor dims to Dim objects)", r"^index$",
           ("torch.Tensor",)),
    Reason("functionalization internals (the inverse of a slice view, for view replay)", r"^slice_inverse$"),
    Reason("low-precision GPU GEMMs (float8 scaled and grouped matrix products)",
           r"^(scaled_mm|grouped_mm|scaled_grouped_mm)$", ("torch.nn.functional",)),
    Reason("autograd engine internals (legacy profiler modules, gradient stride-layout contract)",
           r"^(profiler_legacy|profiler_util|enforce_grad_layout_policy)$", ("torch.autograd",)),
    Reason("PyTorch's legacy pickle states (Ember tensors pickle through ember.serialization's reducer)",
           r"^__setstate__$", ("torch.Tensor",)),
    Reason("legacy Variable-era autograd API", r"^(Variable|variable|volatile|reinforce|NestedIOFunction)$"),
    Reason("removed from PyTorch (the methods only raise there, pointing to torch.linalg)",
           r"^(eig|lstsq|solve|symeig)$", ("torch.Tensor",)),
    Reason("private names (a leading underscore)", r"^_", ("torch.utils.data",)),
)
LABELS: tuple[str, ...] = tuple(dict.fromkeys(reason.label for reason in REASONS))


def reason_for(name: str, torch_object: Any = None, namespace: str | None = None) -> str | None:
    """The out-of-scope family ``name`` of ``namespace`` (e.g. ``"torch.fft"``) belongs to, or None."""
    if isinstance(torch_object, type) and type(torch_object).__name__ == "pybind11_type":
        return _TORCHSCRIPT
    for reason in REASONS:
        if reason.matches(name, namespace):
            return reason.label
    return None
