"""Every OpenCL kernel, by op name. Each module contributes a ``KERNELS`` dict."""
from . import creation, elementwise, indexing, layers, linalg, optim, random, reduction, sort, views

KERNELS: dict = {}
for _module in (elementwise, reduction, views, creation, random, linalg, indexing, sort, layers, optim):
    overlap = KERNELS.keys() & _module.KERNELS.keys()
    assert not overlap, f"kernels defined twice: {overlap}"
    KERNELS.update(_module.KERNELS)
