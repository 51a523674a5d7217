"""Optimizer updates as elementwise programs: one formula of each update, which every backend renders.

``adam_step`` (Adam and AdamW) is, per element of a parameter, the chain of schema ops below; the CPU compiles
it with numba, OpenCL and CUDA render it in their C dialects, so the three fused kernels compute the same
operations in the same order (and agree with the CPU's NumPy kernel, which follows the same order). The
step's scalars are the program's last inputs, 0-d, so that one compiled kernel serves every step (a new
learning rate compiles nothing): the CPU passes them as 0-d arrays, OpenCL and CUDA as kernel arguments.
"""
from __future__ import annotations

from ember.dispatch import OPS, ElementwiseProgram, Step, adam_scalars, dtype as DType, value_dtype

#: ``adam_step``'s weight decay: none, L2 (Adam's, added to the gradient) or decoupled (AdamW's)
ADAM_MODES = (None, "l2", "decoupled")


def adam_mode(weight_decay: float, decoupled_weight_decay: bool) -> str | None:
    return None if weight_decay == 0 else "decoupled" if decoupled_weight_decay else "l2"


def adam_scalar_count(mode: str | None) -> int:
    """How many scalar inputs ``adam_program`` takes (after its four tensors)."""
    return 6 + (mode is not None)


def adam_program(dtype: DType, maximize: bool, mode: str | None, shape: tuple = ()) -> ElementwiseProgram:
    """Adam's update over (param, grad, exp_avg, exp_avg_sq) of ``dtype`` and ``shape``, then the 0-d scalars
    of ``adam_scalar_inputs``. Outputs: the new parameter, exp_avg and exp_avg_sq. Half types compute in
    float32 and round once, at the end."""
    steps: list[Step] = []

    def step(op: str, *operands) -> tuple:
        defaults = tuple(OPS[op].params[i].default for i in OPS[op].attr_positions)  # alpha=1, rounding_mode=None
        steps.append(Step(op, operands, defaults, dtype, dtype))
        return ("step", len(steps) - 1)

    param, grad, exp_avg, exp_avg_sq, beta1, one_minus_beta1, beta2, one_minus_beta2, eps_hat, step_size, decay = (
        ("input", k) for k in range(11))
    if maximize:
        grad = step("neg", grad)
    if mode == "l2":
        grad = step("add", grad, step("mul", param, decay))
    m = step("add", step("mul", exp_avg, beta1), step("mul", grad, one_minus_beta1))
    v = step("add", step("mul", exp_avg_sq, beta2), step("mul", step("mul", grad, grad), one_minus_beta2))
    update = step("mul", step("div", m, step("add", step("sqrt", v), eps_hat)), step_size)
    if mode == "decoupled":
        param = step("mul", param, decay)
    new_param = step("sub", param, update)
    inputs = ((shape, dtype),) * 4 + (((), value_dtype(dtype)),) * adam_scalar_count(mode)
    return ElementwiseProgram(inputs, tuple(steps), (new_param[1], m[1], v[1]), shape)


def adam_scalar_inputs(step: int, lr: float, beta1: float, beta2: float, eps: float, weight_decay: float,
                       mode: str | None) -> list[float]:
    """The values of ``adam_program``'s scalar inputs for this step, in order."""
    step_size, eps_hat = adam_scalars(step, lr, beta1, beta2, eps)
    scalars = [beta1, 1.0 - beta1, beta2, 1.0 - beta2, eps_hat, step_size]
    if mode is not None:
        scalars.append(weight_decay if mode == "l2" else 1.0 - lr * weight_decay)
    return scalars


__all__ = ["ADAM_MODES", "adam_mode", "adam_program", "adam_scalar_count", "adam_scalar_inputs"]
