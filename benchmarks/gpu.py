"""The CUDA part of the benchmark: issue-6 targets against PyTorch CUDA eager, GEMM sizes, and the GPU setup.

Issue 6 judges Ember's cuda backend by ratios to PyTorch CUDA eager in the same process: training steps
at most 1.3x PyTorch's time, and GEMM at least 90 % of PyTorch's throughput (a time ratio of at most
1 / 0.9). Both sides use cuBLAS without TF32 by default (PyTorch's allow_tf32 is off for matmul, CuPy
enables it only with CUPY_TF32=1); the header records the settings actually in force.
"""
from __future__ import annotations

from types import ModuleType

TARGETS = {"mlp": 1.3, "cnn": 1.3, "transformer": 1.3, "gemm4096": 1 / 0.9}
GEMM_SIZES = (1024, 2048, 4096)


def targets_for(device: str) -> dict[str, float]:
    """Case key -> the issue's bound on Ember's time over the reference's, for a device other than the CPU."""
    return TARGETS if device == "cuda" else {}


def describe(torch: ModuleType | None) -> str | None:
    """The GPU, CuPy and PyTorch CUDA settings, or None where Ember's cuda backend is unavailable."""
    import os

    import ember
    if not ember.cuda.is_available():
        return None
    import cupy
    index = ember.cuda.current_device()
    props = cupy.cuda.runtime.getDeviceProperties(index)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    runtime = cupy.cuda.runtime.runtimeGetVersion()
    parts = [f"GPU {index}: {name} ({props['totalGlobalMem'] / 2 ** 30:.0f} GiB)",
             f"CuPy {cupy.__version__} on CUDA runtime {runtime // 1000}.{runtime % 1000 // 10}",
             f"CUPY_TF32={os.environ.get('CUPY_TF32', '0')}"]
    if torch is not None and torch.cuda.is_available():
        parts.append(f"PyTorch CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}, "
                     f"matmul allow_tf32={torch.backends.cuda.matmul.allow_tf32}, "
                     f"cudnn allow_tf32={torch.backends.cudnn.allow_tf32}")
    return "; ".join(parts)
