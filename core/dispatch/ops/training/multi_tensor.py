"""Multi-tensor optimizer steps: one call updates every parameter of a group, in place (PyTorch's ``_fused_*_``).

``_fused_sgd_``, ``_fused_adam_``, ``_fused_adamw_`` and ``_fused_adagrad_`` take PyTorch's names and
signatures (without ``grad_scale``/``found_inf``); ``_fused_rmsprop_`` is Ember's own. Each writes the new
parameters and state into the tensors of its lists and returns None. One call per (device, dtype) group and
step replaces a dispatch, a kernel and fresh allocations per parameter: backends override the composite with
one kernel loop (cpu), a launch per few parameters (opencl) or one launch (cuda).

The update itself is written once, as an elementwise program (``updates.py``): the composite evaluates it with
Ember ops per parameter, kernels render it. Step counts: ``state_steps`` holds each parameter's count after
this step's increment as a 0-d tensor (``capturable`` optimizers keep it on the device, so a replayed graph
advances it); Ember's host-side counts are passed instead as Python ints in ``steps`` with ``state_steps``
empty. Neither op increments the counts, as in PyTorch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ...fusion import value_dtype
from ...schema import Sample, defop
from ...schema.opdef import OPS
from ...schema.errors import DtypeError, describe
from ...schema.meta import require, shape
from ..namespace import F
from . import updates
from .updates import Update, adagrad_clr, adam_mode, adam_scalars

#: op name -> the list parameters it writes into, in the order of its flattened results (see ``outputs``)
WRITES = {
    "_fused_sgd_": ("self", "momentum_buffer_list"),
    "_fused_adam_": ("self", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs"),
    "_fused_adamw_": ("self", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs"),
    "_fused_adagrad_": ("self", "state_sums"),
    "_fused_rmsprop_": ("self", "square_avgs", "grad_avgs", "momentum_buffer_list"),
}


@dataclass
class MultiTensorStep:
    """One call's work, as every implementation sees it: the program (``update``), the call's list arguments
    by name, the scalars shared by all parameters, and each parameter's step (a Python int, or a 0-d array or
    tensor) from which ``per_param(step)`` makes its own scalars. ``steps`` is None where nothing depends on
    the step (SGD, RMSprop)."""

    update: Update
    lists: dict[str, list]
    shared: dict[str, Any]
    steps: list | None
    per_param: Callable[[Any], dict] | None
    #: what ``per_param`` reads besides the step (Adam: lr, beta1, beta2, eps; Adagrad: lr, lr_decay), for
    #: kernels that compute the per-parameter scalars on the device from step counters there
    step_constants: tuple = ()
    #: scalars already made, by step count (a Python number): the parameters of a group mostly share one
    _made: dict = field(default_factory=dict, repr=False)

    def scalars(self, i: int) -> list:
        """Parameter ``i``'s scalar inputs, in the program's order."""
        step = None if self.per_param is None else self.steps[i]
        counted = step is None or step.__class__ in (int, float)
        made = self._made.get(step) if counted else None
        if made is None:
            values = self.shared if step is None else {**self.shared, **self.per_param(step)}
            made = [values[name] for name in self.update.scalars]
            if counted:
                self._made[step] = made
        return made


def multi_tensor_step(op_name: str, dt, values: list) -> MultiTensorStep:
    """What a call of ``op_name`` with bound ``values`` (tensors or native arrays, in the op's parameter order)
    computes, for parameters of dtype ``dt``: shared by the composites and every backend's kernel."""
    return _PREPARE[op_name](dt, *values)


def _steps(state_steps, steps) -> list:
    return list(state_steps) if len(state_steps) else list(steps)


def _prepare_sgd(dt, params, grads, bufs, weight_decay, momentum, lr, dampening, nesterov, maximize, is_first_step):
    has_momentum = momentum != 0
    update = updates.sgd(dt, momentum=has_momentum, first=bool(is_first_step) and has_momentum,
                         nesterov=bool(nesterov) and has_momentum, dampening=dampening != 0,
                         weight_decay=weight_decay != 0, maximize=bool(maximize))
    shared = updates.sgd_scalars(lr=lr, weight_decay=weight_decay, momentum=momentum, dampening=dampening)
    return MultiTensorStep(update, {"self": params, "grads": grads, "momentum_buffer_list": bufs}, shared, None, None)


def _adam_preparer(decoupled: bool):
    def prepare(dt, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1, beta2,
                weight_decay, eps, amsgrad, maximize, steps=()):
        mode = adam_mode(weight_decay, decoupled)
        update = updates.adam(dt, amsgrad=bool(amsgrad), maximize=bool(maximize), mode=mode)
        shared = updates.adam_shared_scalars(lr=lr, beta1=beta1, beta2=beta2, weight_decay=weight_decay, mode=mode)

        def per_param(step) -> dict:
            step_size, eps_hat = adam_scalars(step, lr, beta1, beta2, eps)
            return {"step_size": step_size, "eps_hat": eps_hat}
        lists = {"self": params, "grads": grads, "exp_avgs": exp_avgs, "exp_avg_sqs": exp_avg_sqs,
                 "max_exp_avg_sqs": max_exp_avg_sqs}
        return MultiTensorStep(update, lists, shared, _steps(state_steps, steps), per_param, (lr, beta1, beta2, eps))
    return prepare


def _prepare_adagrad(dt, params, grads, state_sums, state_steps, lr, lr_decay, weight_decay, eps, maximize, steps=()):
    update = updates.adagrad(dt, weight_decay=weight_decay != 0, maximize=bool(maximize))
    lists = {"self": params, "grads": grads, "state_sums": state_sums}
    return MultiTensorStep(update, lists, {"eps": eps, "weight_decay": weight_decay}, _steps(state_steps, steps),
                           lambda step: {"clr": adagrad_clr(step, lr, lr_decay)}, (lr, lr_decay))


def _prepare_rmsprop(dt, params, grads, square_avgs, grad_avgs, bufs, lr, alpha, eps, weight_decay, momentum,
                     centered, maximize):
    update = updates.rmsprop(dt, centered=bool(centered), momentum=momentum > 0, weight_decay=weight_decay != 0,
                             maximize=bool(maximize))
    shared = updates.rmsprop_scalars(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum)
    lists = {"self": params, "grads": grads, "square_avgs": square_avgs, "grad_avgs": grad_avgs,
             "momentum_buffer_list": bufs}
    return MultiTensorStep(update, lists, shared, None, None)


#: the update programs' builders (``updates``), as the backend API exports them
update_programs = updates

_PREPARE = {"_fused_sgd_": _prepare_sgd, "_fused_adam_": _adam_preparer(False), "_fused_adamw_": _adam_preparer(True),
            "_fused_adagrad_": _prepare_adagrad, "_fused_rmsprop_": _prepare_rmsprop}


# -- the composites: the program evaluated with Ember ops, parameter by parameter -----------------------

def evaluate(program, values: list) -> list:
    """``program``'s outputs for one parameter: each step an Ember op call on tensors and numbers."""
    done: list = []
    for step in program.steps:
        operands = [values[v] if kind == "input" else done[v] if kind == "step" else v for kind, v in step.operands]
        done.append(getattr(F, step.op)(*operands))
    return [done[j] for j in program.outputs]


def _composite(op_name: str):
    def composite(*values):
        values = list(values)
        params = values[0]
        at = OPS[op_name].param_index.get("state_steps")
        if at is not None:  # the scalars made from device steps are computed in the parameters' value dtype
            scalar = value_dtype(params[0].dtype)
            values[at] = [s if s.dtype is scalar else F.to_dtype(s, scalar) for s in values[at]]
        work = multi_tensor_step(op_name, params[0].dtype, values)
        update = work.update
        for i in range(len(params)):
            inputs = [work.lists[name][i] for name in update.tensors] + work.scalars(i)
            for name, new in zip(update.writes, evaluate(update.program, inputs)):
                work.lists[name][i].copy_(new)
    composite.__name__ = op_name
    return composite


# -- promotion and meta: one dtype per call, state like its parameter -------------------------------------

def _tensor_lists(op, args) -> dict:
    return {op.params[i].name: (args[op.params[i].name] if isinstance(args[op.params[i].name], (list, tuple))
                                else [args[op.params[i].name]]) for i in op.tensor_positions}


def _promotion(rt, op, args):
    """No compute dtype (kernels get every tensor as it is, to write into it); the parameters' dtype names the
    results. Every list but the step counts holds floating tensors of the first parameter's dtype."""
    lists = _tensor_lists(op, args)
    first = lists["self"][0]
    for name, tensors in lists.items():
        if name == "state_steps":
            continue
        for t in tensors:
            if not hasattr(t, "_dtype"):
                raise TypeError(f"{op.name}(): {name} must hold Tensors, not {type(t).__name__}")
            if not t._dtype.is_floating_point:
                raise DtypeError(f"{op.name}: {name} must be floating point, got {describe(t)}")
            if t._dtype is not first._dtype:
                raise DtypeError(f"{op.name}: expected every tensor of one dtype (group the parameters by device "
                                 f"and dtype, as ember.optim does), got {describe(first)} and {name}: {describe(t)}")
    for t in lists.get("state_steps", ()):
        if not t._dtype.is_floating_point:
            raise DtypeError(f"{op.name}: state_steps must hold floating tensors, got {describe(t)}")
    return None, first._dtype


def _meta_for(op_name: str, required: dict[str, Callable[[dict], bool]]):
    """The meta: every list in ``required`` (name -> whether the call's attributes need it) holds one tensor of
    each parameter's shape, the others none; the results are the written tensors' shapes."""
    def meta(*values):
        op = OPS[op_name]
        named = {p.name: v for p, v in zip(op.params, values)}
        params = named["self"]
        n = len(params)
        for name, needed in required.items():
            tensors = named[name]
            expected = n if needed(named) else 0
            require(len(tensors) == expected, op_name, f"{name} must hold {expected} tensors (one per parameter "
                    f"where the options use it, else none), got {len(tensors)}", *tensors[:3])
            for p, t in zip(params, tensors):
                require(shape(t) == shape(p), op_name, f"{name} must have each parameter's shape {shape(p)}", p, t)
        if "state_steps" in named:
            for t in named["state_steps"]:
                require(shape(t) in ((), (1,)), op_name, "state_steps must hold one-element tensors", t)
            counts = len(named["state_steps"]) or len(named["steps"])
            require(counts == n, op_name, f"needs each parameter's step, in state_steps (tensors) or steps "
                    f"(ints): {n} parameters, {len(named['state_steps'])} state_steps, {len(named['steps'])} steps")
        return tuple(shape(t) for name in WRITES[op_name] for t in named[name])
    return meta


def _always(named: dict) -> bool:
    return True


def _momentum(named: dict) -> bool:
    return named["momentum"] != 0


# -- the NumPy references: PyTorch's algorithms as its documentation writes them ----------------------------

def _descent(p, g, maximize, weight_decay):
    g = -g if maximize else g
    return g + weight_decay * p if weight_decay else g


def _sgd_reference(params, grads, bufs, *, weight_decay, momentum, lr, dampening, nesterov, maximize,
                   is_first_step):
    new_params, new_bufs = [], []
    for i, (p, g) in enumerate(zip(params, grads)):
        d = _descent(p, g, maximize, weight_decay)
        if momentum != 0:
            b = d.copy() if is_first_step else momentum * bufs[i] + (1 - dampening) * d
            new_bufs.append(b)
            d = d + momentum * b if nesterov else b
        new_params.append(p - lr * d)
    return (*new_params, *new_bufs)


def _adam_reference(decoupled: bool):
    def reference(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, lr, beta1, beta2,
                  weight_decay, eps, amsgrad, maximize, steps=()):
        counts = [float(s) for s in state_steps] if len(state_steps) else list(steps)
        out: dict = {"p": [], "m": [], "v": [], "vmax": []}
        for i, (p, g) in enumerate(zip(params, grads)):
            g = -g if maximize else g
            if weight_decay and decoupled:
                p = p * (1 - lr * weight_decay)
            elif weight_decay:
                g = g + weight_decay * p
            m = beta1 * exp_avgs[i] + (1 - beta1) * g
            v = beta2 * exp_avg_sqs[i] + (1 - beta2) * g * g
            second = v
            if amsgrad:
                second = np.maximum(max_exp_avg_sqs[i], v)
                out["vmax"].append(second)
            step = counts[i]
            denom = np.sqrt(second) / np.sqrt(1 - beta2 ** step) + eps
            out["p"].append(p - lr / (1 - beta1 ** step) * m / denom)
            out["m"].append(m)
            out["v"].append(v)
        return (*out["p"], *out["m"], *out["v"], *out["vmax"])
    return reference


def _adagrad_reference(params, grads, state_sums, state_steps, *, lr, lr_decay, weight_decay, eps, maximize,
                       steps=()):
    counts = [float(s) for s in state_steps] if len(state_steps) else list(steps)
    new_params, new_sums = [], []
    for p, g, s, step in zip(params, grads, state_sums, counts):
        g = _descent(p, g, maximize, weight_decay)
        clr = lr / (1 + (step - 1) * lr_decay)
        s = s + g * g
        new_params.append(p - clr * g / (np.sqrt(s) + eps))
        new_sums.append(s)
    return (*new_params, *new_sums)


def _rmsprop_reference(params, grads, square_avgs, grad_avgs, bufs, *, lr, alpha, eps, weight_decay, momentum,
                       centered, maximize):
    out: dict = {"p": [], "sq": [], "ga": [], "buf": []}
    for i, (p, g) in enumerate(zip(params, grads)):
        g = _descent(p, g, maximize, weight_decay)
        sq = alpha * square_avgs[i] + (1 - alpha) * g * g
        out["sq"].append(sq)
        if centered:
            ga = alpha * grad_avgs[i] + (1 - alpha) * g
            out["ga"].append(ga)
            avg = np.sqrt(sq - ga * ga) + eps
        else:
            avg = np.sqrt(sq) + eps
        if momentum > 0:
            b = momentum * bufs[i] + g / avg
            out["buf"].append(b)
            out["p"].append(p - lr * b)
        else:
            out["p"].append(p - lr * g / avg)
    return (*out["p"], *out["sq"], *out["ga"], *out["buf"])


# -- samples ------------------------------------------------------------------------------------------------

_SHAPES = ((3, 4), (5,), ())


def _lists(make, count: int, shapes=_SHAPES, low=None, noncontiguous=False) -> list:
    kwargs = {} if low is None else {"low": low}
    return [make(shapes[i % len(shapes)], noncontiguous=noncontiguous, **kwargs) for i in range(count)]


def _state(make, shapes=_SHAPES, noncontiguous=False):
    """Parameters, gradients and two state lists (the second non-negative) of the given shapes."""
    n = len(shapes)
    return (_lists(make, n, shapes, noncontiguous=noncontiguous), _lists(make, n, shapes, noncontiguous=noncontiguous),
            _lists(make, n, shapes, noncontiguous=noncontiguous),
            _lists(make, n, shapes, low=0.0, noncontiguous=noncontiguous))


def _step_tensors(make, counts) -> list:
    return [make((), dtype="float32", low=float(c), high=float(c)) for c in counts]


def _sgd_samples(make, dtype):
    p, g, b, _ = _state(make)
    options = dict(weight_decay=0.0, momentum=0.9, lr=0.1, dampening=0.0, nesterov=False, maximize=False,
                   is_first_step=False)
    yield Sample((p, g, b), options, note="momentum")
    p, g, b, _ = _state(make)
    yield Sample((p, g, b), {**options, "is_first_step": True, "weight_decay": 0.01}, note="first step, L2 decay")
    p, g, b, _ = _state(make)
    yield Sample((p, g, b), {**options, "nesterov": True, "maximize": True}, note="nesterov, maximize")
    p, g, b, _ = _state(make, noncontiguous=True, shapes=((2, 3, 2), (4, 2)))
    yield Sample((p, g, b), {**options, "dampening": 0.3}, note="dampening, non-contiguous")
    p, g, _, _ = _state(make)
    yield Sample((p, g, []), {**options, "momentum": 0.0, "weight_decay": 0.1}, note="no momentum buffers")


def _adam_samples(make, dtype):
    options = dict(lr=1e-2, beta1=0.9, beta2=0.999, weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
    p, g, m, v = _state(make)
    yield Sample((p, g, m, v, [], []), {**options, "steps": [1, 3, 7]}, note="host steps, per parameter")
    p, g, m, v = _state(make)
    yield Sample((p, g, m, v, [], _step_tensors(make, (2, 5, 1))), {**options, "weight_decay": 0.1},
                 note="device steps, weight decay")
    p, g, m, v = _state(make)
    vmax = _lists(make, 3, low=0.0)
    yield Sample((p, g, m, v, vmax, []), {**options, "amsgrad": True, "maximize": True, "steps": [4, 4, 4]},
                 note="amsgrad, maximize")
    p, g, m, v = _state(make, noncontiguous=True, shapes=((2, 3, 2), (3, 2)))
    yield Sample((p, g, m, v, [], []), {**options, "lr": 0.1, "beta1": 0.5, "beta2": 0.5, "steps": [2, 9]},
                 note="non-contiguous")


def _adagrad_samples(make, dtype):
    options = dict(lr=0.1, lr_decay=0.0, weight_decay=0.0, eps=1e-10, maximize=False)
    p, g, _, s = _state(make)
    yield Sample((p, g, s, []), {**options, "steps": [1, 2, 3]}, note="host steps")
    p, g, _, s = _state(make)
    yield Sample((p, g, s, _step_tensors(make, (3, 1, 4))), {**options, "lr_decay": 0.1, "weight_decay": 0.05,
                                                             "maximize": True}, note="device steps, decays, maximize")


def _rmsprop_samples(make, dtype):
    options = dict(lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False, maximize=False)
    p, g, _, sq = _state(make)
    yield Sample((p, g, sq, [], []), options, note="plain")
    p, g, ga, sq = _state(make)
    # a grad_avg well below the square average keeps sq - ga^2 positive
    ga = [F.mul(t, 0.01) for t in ga]
    buf = _lists(make, 3)
    yield Sample((p, g, [F.add(t, 1.0) for t in sq], ga, buf),
                 {**options, "centered": True, "momentum": 0.9, "weight_decay": 0.1, "maximize": True},
                 note="centered, momentum, decay, maximize")


# -- declarations -------------------------------------------------------------------------------------------

_COMMON = dict(kind="composite", promotion=_promotion, dtypes="float", method=False, differentiable=False,
               outputs=("*",), tolerances={"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2)})
#: attributes that change between steps (learning-rate schedules, step counts): no plan keys on them
_UNKEYED_LR = ("lr",)

defop("_fused_sgd_(Tensor[] self, Tensor[] grads, Tensor[] momentum_buffer_list, *, float weight_decay, "
      "float momentum, float lr, float dampening, bool nesterov, bool maximize, bool is_first_step)", "nn",
      meta=_meta_for("_fused_sgd_", {"grads": _always, "momentum_buffer_list": _momentum}),
      composite=_composite("_fused_sgd_"), reference=_sgd_reference, samples=_sgd_samples,
      mutates=WRITES["_fused_sgd_"], unkeyed=_UNKEYED_LR, **_COMMON,
      doc="one SGD step of every parameter in place (momentum buffers too; with is_first_step they are set to "
          "the first descent direction), as torch.optim.SGD; momentum_buffer_list is empty without momentum")

_ADAM_SIGNATURE = ("(Tensor[] self, Tensor[] grads, Tensor[] exp_avgs, Tensor[] exp_avg_sqs, Tensor[] max_exp_avg_sqs, "
                   "Tensor[] state_steps, *, float lr, float beta1, float beta2, float weight_decay, float eps, "
                   "bool amsgrad, bool maximize, int[] steps=())")


def _adam_declaration(name: str, decoupled: bool) -> dict:
    """What ``_fused_adam_`` and ``_fused_adamw_`` declare besides their names: they differ in the decay only."""
    return dict(meta=_meta_for(name, {"grads": _always, "exp_avgs": _always, "exp_avg_sqs": _always,
                                      "max_exp_avg_sqs": lambda named: bool(named["amsgrad"])}),
                composite=_composite(name), reference=_adam_reference(decoupled), samples=_adam_samples,
                mutates=WRITES[name], unkeyed=("lr", "steps"), domain={"exp_avg_sqs": {"low": 0.0}}, **_COMMON,
                doc=f"one {'AdamW' if decoupled else 'Adam'} step of every parameter in place (exp_avgs, exp_avg_sqs "
                    f"and, with amsgrad, max_exp_avg_sqs too); each parameter's step count, after this step's "
                    f"increment, is in state_steps (0-d tensors) or steps (ints)")


defop("_fused_adam_" + _ADAM_SIGNATURE, "nn", **_adam_declaration("_fused_adam_", False))
defop("_fused_adamw_" + _ADAM_SIGNATURE, "nn", **_adam_declaration("_fused_adamw_", True))

defop("_fused_adagrad_(Tensor[] self, Tensor[] grads, Tensor[] state_sums, Tensor[] state_steps, *, float lr, "
      "float lr_decay, float weight_decay, float eps, bool maximize, int[] steps=())", "nn",
      meta=_meta_for("_fused_adagrad_", {"grads": _always, "state_sums": _always}),
      composite=_composite("_fused_adagrad_"), reference=_adagrad_reference, samples=_adagrad_samples,
      mutates=WRITES["_fused_adagrad_"], unkeyed=("lr", "steps"), domain={"state_sums": {"low": 0.0}}, **_COMMON,
      doc="one Adagrad step of every parameter in place (state_sums too); step counts as for _fused_adam_")

defop("_fused_rmsprop_(Tensor[] self, Tensor[] grads, Tensor[] square_avgs, Tensor[] grad_avgs, "
      "Tensor[] momentum_buffer_list, *, float lr, float alpha, float eps, float weight_decay, float momentum, "
      "bool centered, bool maximize)", "nn",
      meta=_meta_for("_fused_rmsprop_", {"grads": _always, "square_avgs": _always,
                                         "grad_avgs": lambda named: bool(named["centered"]),
                                         "momentum_buffer_list": lambda named: named["momentum"] > 0}),
      composite=_composite("_fused_rmsprop_"), reference=_rmsprop_reference, samples=_rmsprop_samples,
      mutates=WRITES["_fused_rmsprop_"], unkeyed=_UNKEYED_LR, domain={"square_avgs": {"low": 0.0}}, **_COMMON,
      doc="one RMSprop step of every parameter in place (square_avgs, and grad_avgs when centered, "
          "momentum_buffer_list with momentum); Ember's own op, in the form of PyTorch's _fused_* steps")

__all__ = ["MultiTensorStep", "WRITES", "evaluate", "multi_tensor_step", "update_programs"]
