"""The multi-tensor optimizer steps (``_fused_sgd_``, ``_fused_adam_``, ``_fused_adamw_``, ``_fused_adagrad_``,
``_fused_rmsprop_``) as one launch for all parameters of a call.

The kernel (``ember.backends.codegen.multi_tensor.cuda_source``) is the update's program rendered in the CUDA
dialect, wrapped in a loop over a chunk table in device memory: one block per chunk of up to ``CHUNK``
elements of one parameter, with that parameter's pointers, its step counter (capturable optimizers: the
kernel computes the bias corrections from it, so a replayed graph advances with the counter) or its
precomputed scalars. The table is built on the host (``cuda_table``, tested on the CPU) and uploaded with the
shared scalars: two host-to-device copies and one launch per call. Half precision computes in float and
rounds once. Non-contiguous tensors go through contiguous copies, written back after the launch.
"""
from __future__ import annotations

import numpy as np

from ember.backends.codegen.multi_tensor import THREADS, cuda_source, cuda_table
from ember.dispatch import float16, float32, float64, multi_tensor_step, update_programs as updates, value_dtype

from ..kernel_sources import ModuleSource

_DTYPES = {dt.name: dt for dt in (float16, float32, float64)}
_OPTIONS = ("--std=c++17",)
OPS = ("_fused_sgd_", "_fused_adam_", "_fused_adamw_", "_fused_adagrad_", "_fused_rmsprop_")


def _name(update, dt) -> str:
    return f"ember_multi_{update.program.digest()[:16]}_{dt.name}"


def module_source(update, dt) -> ModuleSource:
    name = _name(update, dt)
    return ModuleSource(name, cuda_source(update, dt, name), _OPTIONS)


def _variants(dt) -> list:
    """Updates whose kernels the NVRTC test compiles: every option of each update at least once."""
    sgd = [dict(momentum=False, first=False, nesterov=False, dampening=False, weight_decay=True, maximize=True),
           dict(momentum=True, first=True, nesterov=True, dampening=False, weight_decay=False, maximize=False),
           dict(momentum=True, first=False, nesterov=False, dampening=True, weight_decay=True, maximize=False)]
    adam = [dict(amsgrad=False, maximize=False, mode=None), dict(amsgrad=True, maximize=True, mode="l2"),
            dict(amsgrad=False, maximize=False, mode="decoupled")]
    rms = [dict(centered=False, momentum=False, weight_decay=False, maximize=False),
           dict(centered=True, momentum=True, weight_decay=True, maximize=True)]
    ada = [dict(weight_decay=True, maximize=True)]
    return ([updates.sgd(dt, **o) for o in sgd] + [updates.adam(dt, **o) for o in adam]
            + [updates.rmsprop(dt, **o) for o in rms] + [updates.adagrad(dt, **o) for o in ada])


SOURCES = tuple(module_source(update, dt) for dt in (float32,) for update in _variants(dt)) + tuple(
    module_source(update, dt) for dt in (float16, float64) for update in _variants(dt)[3:5])


def build(cupy, lib) -> dict:
    functions: dict = {}

    def function(update, dt):
        key = (id(update), dt)
        fn = functions.get(key)
        if fn is None:
            source = module_source(update, dt)
            fn = functions[key] = source.build(cupy).get_function(source.name)
        return fn

    def multi(op_name: str):
        def kernel(*values):
            params = values[0]
            dt = _DTYPES[params[0].dtype.name]
            work = multi_tensor_step(op_name, dt, list(values))
            update = work.update
            value = np.dtype(value_dtype(dt).name)
            device_steps = work.steps is not None and not isinstance(work.steps[0], (int, float))
            columns = [work.lists[name] for name in update.tensors]
            rows, write_back, scalars = [], [], []
            for i in range(len(params)):
                arrays = [column[i] for column in columns]
                if not all(a.flags.c_contiguous for a in arrays):
                    copies = [cupy.ascontiguousarray(a) for a in arrays]
                    write_back += [(a, c) for a, c, name in zip(arrays, copies, update.tensors)
                                   if name in update.writes]
                    arrays = copies
                rows.append(([a.data.ptr for a in arrays], arrays[0].size, arrays[0].itemsize))
                if update.per_param and not device_steps:
                    per = work.per_param(work.steps[i])
                    scalars.append([per[name] for name in update.per_param])
            steps = [s.data.ptr for s in work.steps] if device_steps else None
            table = cuda_table(update, value, rows, steps, scalars)
            if len(table):
                shared_names = [s for s in update.scalars if s not in update.per_param]
                shared = np.array([work.shared[s] for s in shared_names] + list(work.step_constants) + [0], value)
                device_table = cupy.asarray(table.view(np.uint8))
                device_shared = cupy.asarray(shared)
                function(update, dt)((len(table),), (THREADS,),
                                     (device_table, np.int32(len(table)), device_shared))
            for original, copy in write_back:
                original[...] = copy
        kernel.__name__ = op_name
        return kernel

    return {name: multi(name) for name in OPS}
