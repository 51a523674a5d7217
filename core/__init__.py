"""Ember: a PyTorch-style deep-learning framework whose devices are backend plugins.

    import ember
    x = ember.randn(3, 4, device="cpu")
    y = (x @ x.T).relu() if hasattr(x, "relu") else x @ x.T
"""
from __future__ import annotations

import math as _math
from numbers import Number as _Number

from .dispatch.contract import registry as _registry
from .dispatch.schema.defaults import get_default_device, set_default_device
from .dispatch.schema.device import device
from .dispatch.schema.dtypes import (bfloat16, bool_ as bool, complex64, complex128, dtype, float16, float32, float64,
                                     get_default_dtype, int8, int16, int32, int64, set_default_dtype, uint8)
from .dispatch.schema.errors import BackendError, DeviceError, DtypeError, EmberError, ShapeError
from .dispatch.schema.errors import NumberOverflowError, OutOfMemoryError, OutOfRangeError
from .dispatch.schema.promotion import can_cast as _can_cast, promote_types as _promote_types
from .dispatch.schema.promotion import result_type_of as _result_type_of
from .tensor import Size, Tensor
from .creation import as_tensor, from_numpy, tensor
from .random import (Generator, default_generator, get_rng_state, initial_seed, manual_seed, seed,
                     set_rng_state)
from . import backends  # noqa: E402  (ember.backends.available(), the registry's public face)
from . import cuda  # noqa: E402  (ember.cuda: torch.cuda's functions, through the registry)
from . import autograd  # noqa: E402  (installs recording into the dispatcher)
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled  # noqa: E402
from . import utils  # noqa: E402
from .interop.dlpack import from_dlpack  # noqa: E402  (torch.from_dlpack)
from .serialization import load, save  # noqa: E402  (binds ember.serialization too)
from . import optim  # noqa: E402
from . import nn  # noqa: E402
from . import distributions  # noqa: E402
from . import linalg  # noqa: E402  (ember.linalg: torch.linalg)
from . import special  # noqa: E402  (ember.special: torch.special)
from . import profiler  # noqa: E402  (ember.profiler: torch.profiler on dispatch modes)
from . import amp, cpu  # noqa: E402  (ember.amp: autocast and GradScaler; ember.cpu: torch.cpu)
from .amp import autocast  # noqa: E402
from . import func  # noqa: E402  (ember.func: torch.func's transforms)
from .func import vmap  # noqa: E402  (torch.vmap is torch.func.vmap)
from . import compiler, _dynamo  # noqa: E402  (ember.compiler: torch.compiler; ember._dynamo: torch._dynamo)
from .compiler.api import compile  # noqa: E402,A001  (ember.compile: torch.compile)
from . import onnx  # noqa: E402  (ember.onnx: torch.onnx; the onnx package is needed only to export)
from . import export  # noqa: E402  (ember.export: torch.export, a program saved without its source)
from . import jit  # noqa: E402  (ember.jit: torch.jit on the export machinery and ember.compile)
from . import distributed  # noqa: E402  (ember.distributed: torch.distributed; MPI starts only on init)
from . import library  # noqa: E402  (ember.library: torch.library, custom ops)
from .library import ops  # noqa: E402  (ember.ops.<namespace>.<op>: torch.ops, the custom ops by namespace)
from .amp.state import *  # noqa: E402,F403  (is_autocast_enabled, get_autocast_dtype, ...: torch's names)

half, float, double = float16, float32, float64
cfloat, cdouble = complex64, complex128
short, int, long = int16, int32, int64

from .tensor import surface as _surface  # noqa: E402  (every Tensor attribute and torch-level name not an op's)
_surface.install(globals())
from . import sparse  # noqa: E402  (ember.sparse: torch.sparse; COO and CSR tensors)
sparse.install(globals())  # sparse_coo_tensor, ..., and sparse operands of ember.mm, ember.add, ember.sin, ...
from . import fft  # noqa: E402  (ember.fft: torch.fft)

# The names programs reach for: switches, accelerator, constants, testing, dtype facts, memory formats.
from .legacy_types import CPU_TYPES as _CPU_TYPES  # noqa: E402
from .dispatch.contract.flags import (are_deterministic_algorithms_enabled, get_float32_matmul_precision,  # noqa: E402
                                      is_deterministic_algorithms_warn_only_enabled, set_float32_matmul_precision,
                                      use_deterministic_algorithms)
from . import accelerator, testing  # noqa: E402
from .type_info import finfo, iinfo  # noqa: E402
from .memory_format import (channels_last, channels_last_3d, contiguous_format, layout,  # noqa: E402
                            legacy_contiguous_format, memory_format, preserve_format, sparse_coo, sparse_csr,
                            strided)
from .printing import get_printoptions, set_printoptions  # noqa: E402
from .threads import get_num_threads, set_num_threads  # noqa: E402
from . import return_types  # noqa: E402,F401  (torch.return_types)
from .autograd import is_anomaly_check_nan_enabled, is_anomaly_enabled, is_inference_mode_enabled  # noqa: E402
from .autograd import set_detect_anomaly as set_anomaly_enabled  # noqa: E402  (torch.set_anomaly_enabled)
globals().update(_CPU_TYPES)  # ember.FloatTensor, ember.LongTensor, ...

e: float = _math.e
pi: float = _math.pi
inf: float = _math.inf
nan: float = _math.nan
newaxis = None  # ``x[:, ember.newaxis]`` adds a dimension, as None does

from . import torch_version  # noqa: E402  (ember.torch_version: torch.torch_version)
from .amp import GradScaler  # noqa: E402  (torch.GradScaler is torch.amp.GradScaler)

__version__ = torch_version.TorchVersion("0.1.0")


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:
    return input.numel()


def result_type(*args, **kwargs) -> dtype:
    """The dtype ``a op b`` computes in, with PyTorch's tensor/zero-dim/scalar ranking. PyTorch's forms:
    ``(tensor, other)``, ``(scalar, tensor)`` and ``(scalar1, scalar2)``, positionally or by those names; a
    NumPy scalar is its Python number."""
    if "x2" in kwargs and "other" not in kwargs:  # NumPy's name, as PyTorch's parser takes it
        kwargs["other"] = kwargs.pop("x2")
    for names in (("tensor", "other"), ("scalar", "tensor"), ("scalar1", "scalar2")):
        if set(kwargs) <= set(names) and len(args) + len(kwargs) == 2 and not set(kwargs) & set(names[:len(args)]):
            operands = [*args, *(kwargs[n] for n in names[len(args):])]
            break
    else:
        raise TypeError(f"result_type() takes two operands (tensor, other), (scalar, tensor) or (scalar1, scalar2); "
                        f"got {len(args)} positional and keywords {sorted(kwargs)}")
    dims, zeros, scalars = [], [], []
    for x in operands:
        if isinstance(x, Tensor):
            (dims if x.ndim else zeros).append(x.dtype)
        elif isinstance(x, _Number):  # Python's numbers and NumPy's scalars
            scalars.append(x.item() if hasattr(x, "item") else x)
        else:
            raise TypeError(f"result_type(): expected a tensor or a number, got {type(x).__name__}")
    return _result_type_of(dims, zeros, scalars)


def _dtype_argument(function: str, name: str, position: int, value) -> dtype:
    if not isinstance(value, dtype):
        raise TypeError(f"{function}(): argument '{name}' (position {position}) must be ember.dtype, not "
                        f"{type(value).__name__}")
    return value


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """The smallest dtype both ``type1`` and ``type2`` cast to without losing their category."""
    return _promote_types(_dtype_argument("promote_types", "type1", 1, type1),
                          _dtype_argument("promote_types", "type2", 2, type2))


def can_cast(from_: dtype, to: dtype) -> bool:
    """PyTorch's same-kind rule for in-place and ``out=`` results: no float to int, no int to bool."""
    return _can_cast(_dtype_argument("can_cast", "from_", 1, from_), _dtype_argument("can_cast", "to", 2, to))


def synchronize(dev=None) -> None:
    """Wait for queued work on ``dev`` (default: every available backend)."""
    from .dispatch.execution.host_reads import synchronize as _synchronize  # also judges deferred value checks
    if dev is not None:
        d = _registry.resolve_device(dev)
        _synchronize(_registry.get_backend(d.type), d.index)
        return
    for backend in _registry.loaded().values():  # a backend not loaded yet has no queued work
        if _registry.unavailable_reason(backend.device_type) is None:
            _synchronize(backend, None)
