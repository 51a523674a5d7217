"""The fused optimizer step: ``adam_step`` (Adam and AdamW) as one kernel per parameter.

Core's composite takes about a dozen element-wise kernels per parameter and step, each a launch
and a pass over memory; here each work-item reads its element of the parameter, gradient and both
moments once and writes the three new values.
"""
from __future__ import annotations

import numpy as np

from ember.dispatch import adam_scalars

from ..array import CLArray, empty
from ..cltypes import arg_dtype, compute_ctype, load, sqrt_function, store
from ._codegen import Params, cached
from .views import clone

_INPUTS = ("param", "grad", "m0", "v0")
_OUTPUTS = ("p1", "m1", "v1")
_SCALARS = ("sign", "decay", "shrink", "beta1", "beta2", "step_size", "eps_hat")


def _adam_kernel(runtime, dtype: np.dtype):
    def build():
        c = compute_ctype(dtype)
        sqrt = sqrt_function(c, runtime.is_cpu)
        p = Params()
        for name in _INPUTS:
            p.buffer(name, dtype).longs(f"{name}_o")
        for name in _OUTPUTS:
            p.buffer(name, dtype, const=False)
        p.longs("total")
        for name in _SCALARS:
            p.decls.append(f"const {c} {name}")
            p.dtypes.append(arg_dtype(dtype))
        source = f"""
__kernel void ember_adam({p.text()})
{{
    const long g = get_global_id(0);
    EMBER_GUARD(g, total)
    const {c} x = {load(dtype, "param", "param_o + g")};
    const {c} d = sign * {load(dtype, "grad", "grad_o + g")} + decay * x;
    const {c} m = beta1 * {load(dtype, "m0", "m0_o + g")} + (1 - beta1) * d;
    const {c} v = beta2 * {load(dtype, "v0", "v0_o + g")} + (1 - beta2) * d * d;
    {store(dtype, "m1", "g", "m")}
    {store(dtype, "v1", "g", "v")}
    {store(dtype, "p1", "g", f"shrink * x - step_size * m / ({sqrt}(v) + eps_hat)")}
}}
"""
        return source, "ember_adam", p.dtypes
    return cached(runtime, ("adam", dtype), build)


def _adam_step(param: CLArray, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay,
               decoupled_weight_decay, maximize):
    runtime = param.runtime
    inputs = [a if a.is_contiguous() else clone(a) for a in (param, grad, exp_avg, exp_avg_sq)]
    outputs = [empty(runtime, param.shape, param.dtype) for _ in _OUTPUTS]
    step_size, eps_hat = adam_scalars(step, lr, beta1, beta2, eps)
    decoupled = weight_decay != 0 and decoupled_weight_decay
    scalars = (-1.0 if maximize else 1.0, 0.0 if decoupled else weight_decay,
               1.0 - lr * weight_decay if decoupled else 1.0, beta1, beta2, step_size, eps_hat)
    args = [value for a in inputs for value in (a.buffer, a.offset)] + [a.buffer for a in outputs] + [param.size]
    kind = arg_dtype(param.dtype)
    runtime.launch(_adam_kernel(runtime, param.dtype), param.size, *args, *(kind.type(s) for s in scalars))
    return tuple(outputs)


KERNELS = {"adam_step": _adam_step}
