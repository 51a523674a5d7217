"""Fused optimizer steps: ``adam_step`` (Adam and AdamW) as one kernel per parameter, and the multi-tensor
steps (``_fused_sgd_``, ``_fused_adam_``, ``_fused_adamw_``, ``_fused_adagrad_``, ``_fused_rmsprop_``) as one
launch per ``SLOTS`` parameters.

Core's composites take about a dozen element-wise kernels per parameter and step, each a launch and a pass
over memory; here each update's program (``ember.backends.codegen``, the one the CPU and CUDA kernels render
too) runs fused: each work-item reads its element of the parameter, gradient and state once and writes the
new values. ``adam_step`` returns new arrays; the multi-tensor kernels write into the buffers they were given.
OpenCL C takes no arrays of pointers, so a multi-tensor launch takes ``SLOTS`` parameters' buffers, offsets
and sizes as arguments (unused slots have size 0), like one chunk of PyTorch's multi_tensor_apply; one
compiled kernel per update variant and dtype serves every group size. The step's scalars are kernel
arguments, so a new learning rate or step compiles nothing. Step counters held in device tensors
(``capturable``) are read to the host here (OpenCL has no graphs to replay).
"""
from __future__ import annotations

import numpy as np

from ember.backends.codegen.multi_tensor import opencl_scalar_names, opencl_source
from ember.backends.codegen.optim import adam_mode, adam_program, adam_scalar_count, adam_scalar_inputs
from ember.dispatch import multi_tensor_step, value_dtype

from ..cltypes import EMBER_DTYPE, NUMPY_DTYPE, STORAGE_CTYPE, arg_dtype
from ..fusion import fuse_elementwise
from .shapes import _copy_, clone

#: parameters per launch: enough that a model's few dozen take a few launches, few enough that PoCL compiles
#: one kernel quickly (the kernel's body is repeated per slot)
SLOTS = 8
#: work-items per launch at most (each strides over its slots' elements), and per work-group
_ITEMS, _GROUP = 1 << 16, 64
_LONG = np.dtype(np.int64)


def _adam_step(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay,
               decoupled_weight_decay, maximize):
    mode = adam_mode(weight_decay, decoupled_weight_decay)
    program = adam_program(EMBER_DTYPE[param.dtype], maximize, mode, param.shape)
    kernel = fuse_elementwise(program, param.runtime.index, numbers=adam_scalar_count(mode))
    scalars = adam_scalar_inputs(step, lr, beta1, beta2, eps, weight_decay, mode)
    return kernel(param, grad, exp_avg, exp_avg_sq, *scalars)


def _compiled(runtime, update, dt, np_dtype):
    source = opencl_source(update, dt, STORAGE_CTYPE[np_dtype], SLOTS)
    scalar = arg_dtype(NUMPY_DTYPE[value_dtype(dt)])
    per_slot = [None, _LONG] * len(update.tensors) + [_LONG]
    scalar_dtypes = per_slot * SLOTS + [scalar] * len(opencl_scalar_names(update, SLOTS))
    return runtime.programs.kernel(source, "ember_multi", scalar_dtypes), scalar


def _multi_tensor(op_name: str):
    def kernel(*values):
        params = values[0]
        runtime = params[0].runtime
        dt = EMBER_DTYPE[params[0].dtype]
        work = multi_tensor_step(op_name, dt, list(values))
        if work.steps is not None:  # device counters (capturable) are read here: one read per parameter
            work.steps = [s if isinstance(s, (int, float)) else runtime.read_scalar(s) for s in work.steps]
        update = work.update
        launch, scalar = _compiled(runtime, update, dt, params[0].dtype)
        names = opencl_scalar_names(update, SLOTS)
        columns = [work.lists[name] for name in update.tensors]
        for start in range(0, len(params), SLOTS):
            chosen = range(start, min(start + SLOTS, len(params)))
            args, write_back, largest = [], [], 0
            per_param = {}
            for j in range(SLOTS):
                if j >= len(chosen):
                    args += [params[0].buffer, 0] * len(update.tensors) + [0]
                    continue
                i = chosen[j]
                arrays = [column[i] for column in columns]
                if not all(a.is_contiguous() for a in arrays):  # work on contiguous copies, written back after
                    copies = [clone(a) for a in arrays]
                    write_back += [(arrays[k], copies[k]) for k in range(len(arrays))
                                   if update.tensors[k] in update.writes]
                    arrays = copies
                for a in arrays:
                    args += [a.buffer, a.offset]
                args.append(arrays[0].size)
                largest = max(largest, arrays[0].size)
                per_param[j] = dict(zip(update.scalars, work.scalars(i)))
            shared = dict(zip(update.scalars, work.scalars(chosen[0])))
            args += [scalar.type(per_param[j][name] if j is not None and j in per_param else
                                 0 if j is not None else shared[name]) for name, j in names]
            if largest:
                items = min(-(-largest // _GROUP) * _GROUP, _ITEMS)
                runtime.launch(launch, items, *args, local=_GROUP)
            for original, copy in write_back:
                _copy_(original, copy)
    kernel.__name__ = op_name
    return kernel


KERNELS = {"adam_step": _adam_step,
           **{name: _multi_tensor(name) for name in ("_fused_sgd_", "_fused_adam_", "_fused_adamw_",
                                                     "_fused_adagrad_", "_fused_rmsprop_")}}
