"""Fused optimizer steps: the CPU overrides of the ``adam_step`` composite and of the multi-tensor steps.

The composite costs about twelve NumPy calls per parameter, each allocating its result. Where numba is
installed, the step is Adam's elementwise program (``ember.backends.codegen.optim``) compiled by the CPU fusion
hook: m, v and the parameter in one pass per tensor, the step's scalars passed as 0-d inputs so that
one compiled loop serves every step and every parameter of a dtype. Without numba, the NumPy kernel
computes the moments into their two new arrays and every other intermediate through one scratch array
that ends up as the new parameter: three allocations per parameter and step, and no dispatch in
between. Both do the same float32 operations in the same order, so they agree bit for bit.
Half-precision parameters compute in float32 and are rounded once at the end, as PyTorch's fused
optimizers do. Self-contained: the backend adds ``KERNELS`` to its table.
"""
from __future__ import annotations

import numpy as np

from ember.backends.codegen.multi_tensor import numba_source, written_inputs
from ember.backends.codegen.optim import adam_mode, adam_program, adam_scalar_inputs
from ember.dispatch import adam_scalars, multi_tensor_step

from . import fusion
from .dtypes import EMBER_DTYPE, LOW_PRECISION


def numpy_adam_step(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay,
               decoupled_weight_decay, maximize):
    low = param.dtype if param.dtype in LOW_PRECISION else None
    if low is not None:
        param, grad, exp_avg, exp_avg_sq = (a.astype(np.float32) for a in (param, grad, exp_avg, exp_avg_sq))
    if maximize:
        grad = np.negative(grad)
    if weight_decay != 0 and not decoupled_weight_decay:
        grad = grad + param * np.asarray(weight_decay, param.dtype)
    shape, dtype = param.shape, param.dtype  # out= keeps 0-d results arrays (ufuncs return scalars)
    scratch = np.multiply(grad, 1.0 - beta1, out=np.empty(shape, dtype))
    m = np.multiply(exp_avg, beta1, out=np.empty(shape, dtype))
    m += scratch
    v = np.multiply(exp_avg_sq, beta2, out=np.empty(shape, dtype))
    np.multiply(grad, grad, out=scratch)
    scratch *= 1.0 - beta2
    v += scratch
    step_size, eps_hat = adam_scalars(step, lr, beta1, beta2, eps)
    np.sqrt(v, out=scratch)
    scratch += eps_hat
    np.divide(m, scratch, out=scratch)
    scratch *= step_size
    if weight_decay != 0 and decoupled_weight_decay:
        np.subtract(param * (1.0 - lr * weight_decay), scratch, out=scratch)
    else:
        np.subtract(param, scratch, out=scratch)
    if low is not None:
        return scratch.astype(low), m.astype(low), v.astype(low)
    return scratch, m, v


def fused_adam_step(parallel: bool | None = None):
    """The ``adam_step`` kernel as one compiled pass per parameter, or None without numba."""
    if not fusion.numba_available():
        return None
    runners: dict = {}

    def adam_step(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay,
                  decoupled_weight_decay, maximize):
        mode = adam_mode(weight_decay, decoupled_weight_decay)
        key = (param.shape, param.dtype, maximize, mode)
        run = runners.get(key)
        if run is None:
            run = runners[key] = fusion.fuse_elementwise(
                adam_program(EMBER_DTYPE[param.dtype], maximize, mode, param.shape), parallel=parallel)
        scalar = np.float32 if param.dtype in LOW_PRECISION else param.dtype.type
        scalars = adam_scalar_inputs(step, lr, beta1, beta2, eps, weight_decay, mode)
        return run(param, grad, exp_avg, exp_avg_sq, *(np.array(value, scalar) for value in scalars))
    return adam_step


KERNELS = {"adam_step": fused_adam_step() or numpy_adam_step}


# -- multi-tensor steps: _fused_sgd_, _fused_adam_, _fused_adamw_, _fused_adagrad_, _fused_rmsprop_ ----------

#: the NumPy function of each schema op the update programs use
_NUMPY_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "neg": np.negative,
              "sqrt": np.sqrt, "maximum": np.maximum}


def numpy_update(program, arrays: list, scalars: list, outs: list) -> None:
    """Evaluate ``program`` with NumPy over one parameter's ``arrays`` (half types in float32) and write its
    outputs into ``outs``: every output is computed before any is written."""
    low = arrays[0].dtype in LOW_PRECISION
    wide = np.dtype(np.float32) if low else arrays[0].dtype
    values = [a.astype(wide) if low else a for a in arrays] + [wide.type(s) for s in scalars]
    done: list = []
    with np.errstate(all="ignore"):
        for step in program.steps:
            operands = [values[v] if kind == "input" else done[v] if kind == "step" else wide.type(v)
                        for kind, v in step.operands]
            done.append(_NUMPY_OPS[step.op](*operands))
    results = [done[j] for j in program.outputs]
    for out, result in zip(outs, results):
        np.copyto(out, result, casting="unsafe")


_numba_loops: dict = {}
_written: dict = {}


def _numba_loop(update, dtype):
    """The compiled loop of ``update`` on flat arrays of ``dtype`` (float32 for half types)."""
    key = (id(update), dtype)  # updates are cached, so one object per program
    loop = _numba_loops.get(key)
    if loop is None:
        loop = _numba_loops[key] = fusion.load_source(numba_source(update, EMBER_DTYPE[dtype])).kernel
    return loop


def _written_inputs(update) -> list:
    """``written_inputs(update)``, worked out once per update (read for every parameter of every step)."""
    into = _written.get(id(update))
    if into is None:
        into = _written[id(update)] = written_inputs(update)
    return into


def numba_update(program_update, arrays: list, scalars: list, outs: list) -> None:
    """``numpy_update``'s work as one compiled pass: in place on contiguous float32/float64 arrays; half types
    and non-contiguous arrays go through contiguous float copies, written back once."""
    direct = arrays[0].dtype not in LOW_PRECISION and all(a.flags.c_contiguous for a in arrays)
    into = _written_inputs(program_update)
    if direct:
        flat = [a.reshape(-1) for a in arrays]
        separate = [o.reshape(-1) for o, at in zip(outs, into) if at is None]
        _numba_loop(program_update, arrays[0].dtype)(*flat, *scalars, *separate)
        return
    wide = np.dtype(np.float32) if arrays[0].dtype in LOW_PRECISION else arrays[0].dtype
    flat = [np.ascontiguousarray(a, dtype=wide).reshape(-1) for a in arrays]
    separate = [np.empty(o.size, wide) for o, at in zip(outs, into) if at is None]
    _numba_loop(program_update, wide)(*flat, *scalars, *separate)
    written = iter(separate)
    for out, at in zip(outs, into):
        np.copyto(out, (flat[at] if at is not None else next(written)).reshape(out.shape), casting="unsafe")


def multi_tensor_kernel(op_name: str, use_numba: bool | None = None):
    """The CPU kernel of a multi-tensor optimizer step: one loop over the parameters, each updated in place by
    the compiled program (numba) or by NumPy. Step counters in 0-d arrays are read here: host memory."""
    run = numba_update if (fusion.numba_available() if use_numba is None else use_numba) else None

    def kernel(*values):
        params = values[0]
        work = multi_tensor_step(op_name, EMBER_DTYPE[params[0].dtype], list(values))
        if work.steps is not None:
            work.steps = [s if isinstance(s, (int, float)) else float(s) for s in work.steps]
        update = work.update
        lists = [work.lists[name] for name in update.tensors]
        writes = [work.lists[name] for name in update.writes]
        for i in range(len(params)):
            arrays = [column[i] for column in lists]
            outs = [column[i] for column in writes]
            if run is None or arrays[0].size == 0:
                numpy_update(update.program, arrays, work.scalars(i), outs)
            else:
                run(update, arrays, work.scalars(i), outs)
    kernel.__name__ = op_name
    return kernel


MULTI_TENSOR_OPS = ("_fused_sgd_", "_fused_adam_", "_fused_adamw_", "_fused_adagrad_", "_fused_rmsprop_")
KERNELS.update({name: multi_tensor_kernel(name) for name in MULTI_TENSOR_OPS})
