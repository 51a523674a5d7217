"""Optimizer updates as elementwise programs: the one description of each multi-tensor step.

Each update (SGD, Adam/AdamW, RMSprop, Adagrad) is, per element of one parameter, a chain of schema ops over
that element of the parameter, its gradient and its state, and a few scalars. Written once here as an
``ElementwiseProgram``, it is what every implementation runs: the composites of ``multi_tensor.py`` evaluate
it with Ember ops (so the conformance suite checks it against the NumPy references on every backend), and the
backends render it (``ember.backends.codegen``) into numba, OpenCL C and CUDA C. The scalars a step needs are
computed by ``*_scalars`` below from Python numbers, or from 0-d step tensors where the step count lives on
the device (``capturable``): the same arithmetic on Ember tensors or NumPy arrays.

The programs are shaped ``(2,)``: kernels run them over flat tensors of any size (any size but 1 gives the
same rendered source, so one kernel serves every parameter of a dtype).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ...fusion import ElementwiseProgram, Step, value_dtype
from ...schema.dtypes import dtype as DType
from ...schema.opdef import OPS

#: the flat shape the programs are written for (see the module docstring)
SHAPE = (2,)


@dataclass(frozen=True)
class Update:
    """One optimizer's elementwise update and how an op's tensor lists feed it.

    ``tensors``: the op's list parameters read per element, in the program's input order; ``scalars``: the
    names of the scalar inputs after them; ``per_param``: those among them that differ between parameters
    (they depend on each parameter's step); ``writes``: the list each program output is written into."""

    program: ElementwiseProgram
    tensors: tuple[str, ...]
    scalars: tuple[str, ...]
    per_param: tuple[str, ...]
    writes: tuple[str, ...]


class _Builder:
    """Collects the steps of one program: ``b("mul", x, y)`` appends a step and returns its operand."""

    def __init__(self, dt: DType, tensors: tuple[str, ...], scalars: tuple[str, ...]) -> None:
        self.dt, self.tensors, self.scalars = dt, tensors, scalars
        self.steps: list[Step] = []
        self.inputs = {name: ("input", k) for k, name in enumerate(tensors + scalars)}

    def __getitem__(self, name: str) -> tuple:
        return self.inputs[name]

    def __call__(self, op: str, *operands: tuple) -> tuple:
        defaults = tuple(OPS[op].params[i].default for i in OPS[op].attr_positions)  # alpha=1, rounding_mode=None
        self.steps.append(Step(op, operands, defaults, self.dt, self.dt))
        return ("step", len(self.steps) - 1)

    def output(self, value: tuple) -> tuple:
        """``value`` as a step (a program's outputs are steps): an input passes through ``mul`` by 1."""
        return value if value[0] == "step" else self("mul", value, ("number", 1.0))

    def build(self, writes: dict[str, tuple], per_param: tuple[str, ...] = ()) -> Update:
        outputs = tuple(self.output(v)[1] for v in writes.values())
        inputs = ((SHAPE, self.dt),) * len(self.tensors) + (((), value_dtype(self.dt)),) * len(self.scalars)
        program = ElementwiseProgram(inputs, tuple(self.steps), outputs, SHAPE)
        return Update(program, self.tensors, self.scalars, per_param, tuple(writes))


def _descent(b: _Builder, maximize: bool, weight_decay: bool) -> tuple:
    """The gradient an update descends along: negated to maximize, plus ``weight_decay * param`` (L2)."""
    grad = b("neg", b["grad"]) if maximize else b["grad"]
    return b("add", grad, b("mul", b["self"], b["weight_decay"])) if weight_decay else grad


# -- SGD ---------------------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def sgd(dt: DType, *, momentum: bool, first: bool, nesterov: bool, dampening: bool, weight_decay: bool,
        maximize: bool) -> Update:
    """SGD as PyTorch defines it: ``d = grad (+ wd * param)``; with momentum the buffer starts as ``d`` on the
    first step and is ``buf * momentum + d * (1 - dampening)`` after; Nesterov descends along
    ``d + momentum * buf``; ``param - lr * d``."""
    tensors = ("self", "grads") if not momentum else ("self", "grads", "momentum_buffer_list")
    scalars = ("lr",) + (("weight_decay",) if weight_decay else ()) + (("momentum",) if momentum else ()) \
        + (("one_minus_dampening",) if momentum and dampening and not first else ())
    b = _Builder(dt, tensors, scalars)
    b.inputs.update(grad=b["grads"])
    d = _descent(b, maximize, weight_decay)
    writes = {}
    if momentum:
        if first:
            buf = b.output(d)
        else:
            scaled = b("mul", d, b["one_minus_dampening"]) if dampening else d
            buf = b("add", b("mul", b["momentum_buffer_list"], b["momentum"]), scaled)
        d = b("add", d, b("mul", buf, b["momentum"])) if nesterov else buf
        writes["momentum_buffer_list"] = buf
    writes = {"self": b("sub", b["self"], b("mul", d, b["lr"])), **writes}
    return b.build(writes)


def sgd_scalars(*, lr: float, weight_decay: float, momentum: float, dampening: float) -> dict[str, float]:
    return {"lr": lr, "weight_decay": weight_decay, "momentum": momentum, "one_minus_dampening": 1.0 - dampening}


# -- Adam and AdamW ----------------------------------------------------------------------------------------

#: Adam's weight decay: none, L2 (added to the gradient, Adam's) or decoupled (AdamW's)
ADAM_MODES = (None, "l2", "decoupled")


def adam_mode(weight_decay: float, decoupled_weight_decay: bool) -> str | None:
    return None if weight_decay == 0 else "decoupled" if decoupled_weight_decay else "l2"


@lru_cache(maxsize=None)
def adam(dt: DType, *, amsgrad: bool, maximize: bool, mode: str | None) -> Update:
    """Adam's step with the bias corrections folded into ``step_size`` and ``eps_hat`` (``adam_scalars``):
    ``m = beta1 m + (1 - beta1) g``, ``v = beta2 v + (1 - beta2) g^2`` (AMSGrad: ``vmax = max(vmax, v)``
    takes v's place below), ``param - m / (sqrt(v) + eps_hat) * step_size``; L2 decay adds ``decay * param``
    to g, decoupled decay scales the parameter by ``decay = 1 - lr * weight_decay`` first.
    The same operations in the same order as ``adam_step``'s kernels."""
    tensors = ("self", "grads", "exp_avgs", "exp_avg_sqs") + (("max_exp_avg_sqs",) if amsgrad else ())
    scalars = ("beta1", "one_minus_beta1", "beta2", "one_minus_beta2", "eps_hat", "step_size") \
        + (("decay",) if mode is not None else ())
    b = _Builder(dt, tensors, scalars)
    grad = b("neg", b["grads"]) if maximize else b["grads"]
    if mode == "l2":
        grad = b("add", grad, b("mul", b["self"], b["decay"]))
    m = b("add", b("mul", b["exp_avgs"], b["beta1"]), b("mul", grad, b["one_minus_beta1"]))
    v = b("add", b("mul", b["exp_avg_sqs"], b["beta2"]), b("mul", b("mul", grad, grad), b["one_minus_beta2"]))
    second = b("maximum", b["max_exp_avg_sqs"], v) if amsgrad else v
    update = b("mul", b("div", m, b("add", b("sqrt", second), b["eps_hat"])), b["step_size"])
    param = b("mul", b["self"], b["decay"]) if mode == "decoupled" else b["self"]
    writes = {"self": b("sub", param, update), "exp_avgs": m, "exp_avg_sqs": v}
    if amsgrad:
        writes["max_exp_avg_sqs"] = second
    return b.build(writes, per_param=("eps_hat", "step_size"))


def adam_scalars(step: Any, lr: float, beta1: float, beta2: float, eps: float) -> tuple[Any, Any]:
    """Adam's bias corrections folded into two scalars: ``lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)`` is
    ``m * step_size / (sqrt(v) + eps_hat)``. ``step``: a Python number, or a 0-d tensor (an Ember tensor or a
    NumPy array, on which the same arithmetic runs)."""
    if isinstance(step, (int, float)):
        bias_correction2_sqrt = math.sqrt(1.0 - beta2 ** step)
    else:
        bias_correction2_sqrt = (1.0 - beta2 ** step) ** 0.5
    return lr * bias_correction2_sqrt / (1.0 - beta1 ** step), eps * bias_correction2_sqrt


def adam_shared_scalars(*, lr: float, beta1: float, beta2: float, weight_decay: float, mode: str | None) -> dict:
    return {"beta1": beta1, "one_minus_beta1": 1.0 - beta1, "beta2": beta2, "one_minus_beta2": 1.0 - beta2,
            "decay": weight_decay if mode == "l2" else 1.0 - lr * weight_decay}


# -- RMSprop -----------------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def rmsprop(dt: DType, *, centered: bool, momentum: bool, weight_decay: bool, maximize: bool) -> Update:
    """RMSprop: ``sq = alpha sq + (1 - alpha) g^2``; centered: ``ga = alpha ga + (1 - alpha) g`` and
    ``avg = sqrt(sq - ga^2) + eps``, else ``sqrt(sq) + eps``; with momentum ``buf = momentum buf + g / avg``
    and ``param - lr buf``, else ``param - lr g / avg``."""
    tensors = ("self", "grads", "square_avgs") + (("grad_avgs",) if centered else ()) \
        + (("momentum_buffer_list",) if momentum else ())
    scalars = ("lr", "alpha", "one_minus_alpha", "eps") + (("weight_decay",) if weight_decay else ()) \
        + (("momentum",) if momentum else ())
    b = _Builder(dt, tensors, scalars)
    b.inputs.update(grad=b["grads"])
    g = _descent(b, maximize, weight_decay)
    sq = b("add", b("mul", b["square_avgs"], b["alpha"]), b("mul", b("mul", g, g), b["one_minus_alpha"]))
    writes = {"square_avgs": sq}
    if centered:
        ga = b("add", b("mul", b["grad_avgs"], b["alpha"]), b("mul", g, b["one_minus_alpha"]))
        avg = b("add", b("sqrt", b("sub", sq, b("mul", ga, ga))), b["eps"])
        writes["grad_avgs"] = ga
    else:
        avg = b("add", b("sqrt", sq), b["eps"])
    if momentum:
        buf = b("add", b("mul", b["momentum_buffer_list"], b["momentum"]), b("div", g, avg))
        writes["momentum_buffer_list"] = buf
        param = b("sub", b["self"], b("mul", buf, b["lr"]))
    else:
        param = b("sub", b["self"], b("mul", b("div", g, avg), b["lr"]))
    return b.build({"self": param, **writes})


def rmsprop_scalars(*, lr: float, alpha: float, eps: float, weight_decay: float, momentum: float) -> dict:
    return {"lr": lr, "alpha": alpha, "one_minus_alpha": 1.0 - alpha, "eps": eps, "weight_decay": weight_decay,
            "momentum": momentum}


# -- Adagrad -----------------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def adagrad(dt: DType, *, weight_decay: bool, maximize: bool) -> Update:
    """Adagrad: ``sum += g^2``, ``param - clr g / (sqrt(sum) + eps)`` with ``clr = lr / (1 + (step - 1)
    lr_decay)`` (``adagrad_clr``)."""
    scalars = ("clr", "eps") + (("weight_decay",) if weight_decay else ())
    b = _Builder(dt, ("self", "grads", "state_sums"), scalars)
    b.inputs.update(grad=b["grads"])
    g = _descent(b, maximize, weight_decay)
    total = b("add", b["state_sums"], b("mul", g, g))
    param = b("sub", b["self"], b("mul", b("div", g, b("add", b("sqrt", total), b["eps"])), b["clr"]))
    return b.build({"self": param, "state_sums": total}, per_param=("clr",))


def adagrad_clr(step: Any, lr: float, lr_decay: float) -> Any:
    """Adagrad's learning rate at ``step`` (a number or a 0-d tensor, counted from 1)."""
    return lr / (1 + (step - 1) * lr_decay)


__all__ = ["ADAM_MODES", "SHAPE", "Update", "adagrad", "adagrad_clr", "adam", "adam_mode", "adam_scalars",
           "adam_shared_scalars", "rmsprop", "rmsprop_scalars", "sgd", "sgd_scalars"]
