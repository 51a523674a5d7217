"""``ember.library``: custom ops, with ``torch.library``'s API (docs/custom_ops.md).

A custom op is an op of the schema made at run time: an ``OpDef`` in ``ember.dispatch.OPS`` under its qualified
name (``"mylib::bias_gelu"``), called through the one dispatcher path. So it dispatches by device, records one
autograd node, and is one op to the profiler, autocast, ``ember.compile`` (no graph break), ``ember.export``,
``ember.onnx`` (given a lowering), vmap and forward AD.

    @ember.library.custom_op("mylib::bias_gelu", mutates_args=())
    def bias_gelu(x: ember.Tensor, bias: ember.Tensor) -> ember.Tensor: ...      # the kernel, on tensors

    @bias_gelu.register_fake
    def _(x, bias): return ember.empty_like(x)                                  # shapes and dtypes, no values

    bias_gelu.register_autograd(backward, setup_context=setup_context)
    ember.library.opcheck(bias_gelu, (x, b))

Modules: ``schema`` (PyTorch's schema language; ``infer_schema``), ``definition`` (one custom op: its OpDef and its
registrations), ``custom_op`` (``custom_op``, ``CustomOpDef``), ``registration`` (the ``register_*`` functions),
``library`` (``Library``, ``define``, ``impl``), ``fake`` (fake tensors and the mode that runs fake functions),
``autograd`` (the derivative from backward and setup_context), ``vmap`` (the batching rule from a vmap function),
``namespace`` (``ember.ops``), ``opcheck``. The kernel of a plan that runs a function on tensors is the
dispatcher's (``ember.dispatch.execution.user_kernels``).
"""
from .custom_op import CustomOpDef, custom_op
from .fake import FakeValueError
from .library import Library, define, fallthrough_kernel, impl
from .namespace import ops
from .opcheck import OpCheckError, opcheck
from .registration import (impl_abstract, register_autocast, register_autograd, register_fake, register_kernel,
                           register_onnx, register_torch_dispatch, register_vmap)
from .schema import SchemaError, infer_schema
from .vmap import VmapInfo

__all__ = ["custom_op", "CustomOpDef", "infer_schema", "register_kernel", "register_fake", "register_autograd",
           "register_autocast", "register_vmap", "register_torch_dispatch", "register_onnx", "opcheck",
           "OpCheckError", "Library", "define", "impl", "impl_abstract", "fallthrough_kernel", "ops", "SchemaError",
           "FakeValueError", "VmapInfo"]
