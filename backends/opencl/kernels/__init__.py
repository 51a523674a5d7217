"""Every OpenCL kernel, by op name, in modules named after the op families of ``ember.dispatch.ops`` (indexing
holds sorting's kernels in ``sorting.py``; ``gemm_cpu.py`` is linalg's matrix product for CPU devices, and
``_source.py`` the pieces of OpenCL C the modules share). Each module contributes a ``KERNELS`` dict."""
from . import creation, elementwise, fft, indexing, linalg, nn, random, reductions, shapes, sorting, training

KERNELS: dict = {}
for _module in (elementwise, reductions, shapes, creation, random, linalg, indexing, sorting, nn, training, fft):
    overlap = KERNELS.keys() & _module.KERNELS.keys()
    assert not overlap, f"kernels defined twice: {overlap}"
    KERNELS.update(_module.KERNELS)
