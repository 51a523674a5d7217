"""Learning-rate schedulers: each ``step()`` rewrites ``group["lr"]`` in its optimizer's param groups.

The formulas are PyTorch's, including its recursive (chainable) forms: most schedulers
compute the next lr from the group's current lr, so that two schedulers can act on one
optimizer. ``step(epoch)`` (deprecated in PyTorch) jumps to ``epoch`` with the closed form
where one exists.
"""
from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from typing import Any, Callable, Iterable, Sequence

from .optimizer import Optimizer

__all__ = ["LRScheduler", "LambdaLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR",
           "CosineAnnealingLR", "SequentialLR", "OneCycleLR", "ReduceLROnPlateau"]

_EPOCH_DEPRECATION = ("The epoch parameter in `scheduler.step()` is deprecated, as in PyTorch: call "
                      "`scheduler.step()` without it. With an epoch the closed form is used where available.")


def _per_group(name: str, optimizer: Optimizer, value) -> list:
    """One value per param group: a list of them checked for length, or a single value repeated."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} has "
                             f"{len(value)} values, param_groups has {len(optimizer.param_groups)}.")
        return list(value)
    return [value] * len(optimizer.param_groups)


class LRScheduler:
    """Base class: holds ``base_lrs`` (each group's ``initial_lr``) and ``last_epoch``.

    Subclasses implement ``get_lr()``, the lrs for ``last_epoch`` (which ``step`` has
    already advanced), and may add ``_closed_form_lr()``. Building a scheduler takes its
    first step (``last_epoch`` -1 -> 0), as in PyTorch.
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming a "
                                   f"scheduler with last_epoch >= 0; load the optimizer's state first")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The lrs the last ``step()`` set, one per param group."""
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or jump to ``epoch``, deprecated) and write the new lrs into the optimizer."""
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. Call them in the "
                          "opposite order, or the first value of the learning rate schedule is skipped.",
                          UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(_EPOCH_DEPRECATION, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            closed_form = getattr(self, "_closed_form_lr", None)
            values = closed_form() if closed_form is not None else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _current_lrs(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer (whose state is saved on its own)."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)


class LambdaLR(LRScheduler):
    """``lr = initial_lr * lr_lambda(epoch)``, with one function or one per param group."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | Sequence[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base_lr * fn(self.last_epoch) for fn, base_lr in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self) -> dict[str, Any]:
        """Functions and lambdas are not saved; callable objects save their ``__dict__``, as in PyTorch."""
        state = {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        lambdas = state.pop("lr_lambdas")
        self.__dict__.update(state)
        for fn, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                fn.__dict__.update(saved)


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` epochs."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the lr by ``gamma`` at each milestone epoch (by ``gamma ** n`` for one listed n times)."""

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch not in self.milestones:
            return self._current_lrs()
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [lr * factor for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch) for base_lr in self.base_lrs]


class ConstantLR(LRScheduler):
    """Scale the lr by ``factor`` for the first ``total_iters`` epochs, then restore it."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._current_lrs()]
        if self.last_epoch != self.total_iters:
            return self._current_lrs()
        return [lr * (1.0 / self.factor) for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        scale = self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)
        return [base_lr * scale for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale the lr by a factor going linearly from ``start_factor`` to ``end_factor`` over ``total_iters``."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._current_lrs()]
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        delta = self.end_factor - self.start_factor
        ratio = 1.0 + delta / (self.total_iters * self.start_factor + (self.last_epoch - 1) * delta)
        return [lr * ratio for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        delta = self.end_factor - self.start_factor
        scale = self.start_factor + delta * min(self.total_iters, self.last_epoch) / self.total_iters
        return [base_lr * scale for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the lr by ``gamma`` every epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial lr to ``eta_min`` over ``T_max`` epochs (and back, periodically).

    PyTorch's recursive form: each step scales the distance of the current lr from
    ``eta_min`` by the ratio of consecutive cosine values, so that it composes with other
    schedulers; at the trough it adds the increment that starts the next half period.
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return self._current_lrs()
        epoch, T_max, eta_min = self.last_epoch, self.T_max, self.eta_min
        if self._step_count == 1 and epoch > 0:  # resumed with last_epoch >= 0: start from the closed form
            return self._closed_form_lr()
        if (epoch - 1 - T_max) % (2 * T_max) == 0:
            return [lr + (base_lr - eta_min) * (1 - math.cos(math.pi / T_max)) / 2
                    for base_lr, lr in zip(self.base_lrs, self._current_lrs())]
        ratio = (1 + math.cos(math.pi * epoch / T_max)) / (1 + math.cos(math.pi * (epoch - 1) / T_max))
        return [ratio * (lr - eta_min) + eta_min for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


class SequentialLR(LRScheduler):
    """Run ``schedulers`` one after another, switching at each of the ``milestones`` epochs.

    At a milestone the next scheduler restarts from its epoch 0 (closed form), as in PyTorch.
    """

    def __init__(self, optimizer: Optimizer, schedulers: Sequence[LRScheduler], milestones: Sequence[int],
                 last_epoch: int = -1) -> None:
        if len(schedulers) < 1:
            raise ValueError("SequentialLR expects at least one scheduler, but got no scheduler.")
        for i, scheduler in enumerate(schedulers):
            if not hasattr(scheduler, "optimizer"):
                raise TypeError(f"SequentialLR at index {i} should have `optimizer` as its attribute.")
            if isinstance(scheduler, ReduceLROnPlateau):
                raise ValueError(f"SequentialLR does not support `ReduceLROnPlateau` scheduler as it requires "
                                 f"additional kwargs to be specified when calling `step`, but got one at index "
                                 f"{i} in the given schedulers sequence.")
            if scheduler.optimizer is not optimizer:
                raise ValueError(f"SequentialLR expects all schedulers to belong to the same optimizer, but got "
                                 f"scheduler {type(scheduler).__name__} at index {i} with another optimizer.")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"Sequential Schedulers expects number of schedulers provided to be one more than "
                             f"the number of milestone points, but got number of schedulers {len(schedulers)} "
                             f"and the number of milestones to be equal to {len(milestones)}")
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # Each scheduler took its initial step when it was built; undo those, then let the first one start.
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        self._undo_initial_steps(self)
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    @staticmethod
    def _undo_initial_steps(scheduler) -> None:
        if hasattr(scheduler, "_schedulers"):
            for inner in scheduler._schedulers:
                SequentialLR._undo_initial_steps(inner)
        elif hasattr(scheduler, "last_epoch"):
            scheduler.last_epoch -= 1

    def step(self) -> None:  # type: ignore[override]
        self.last_epoch += 1
        index = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict[str, Any]:
        state = {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        inner = state.pop("_schedulers")
        self.__dict__.update(state)
        for scheduler, saved in zip(self._schedulers, inner):
            scheduler.load_state_dict(saved)


class OneCycleLR(LRScheduler):
    """The 1cycle policy: lr warms up from ``max_lr / div_factor`` to ``max_lr``, then anneals to
    ``initial_lr / final_div_factor``; momentum (SGD's ``momentum`` or Adam's beta1) cycles the other way.

    ``three_phase`` comes back down to the initial lr symmetrically before the final anneal.
    The lr is a function of the step number only (not chainable), as in PyTorch.
    """

    def __init__(self, optimizer: Optimizer, max_lr: float | Sequence[float], total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: float | Sequence[float] = 0.85, max_momentum: float | Sequence[float] = 0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self.anneal_strategy = anneal_strategy

        # (end step, start lr key, end lr key, start momentum key, end momentum key) per phase.
        up_end = float(pct_start * self.total_steps) - 1
        if three_phase:
            self._phases = [(up_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                            (float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr",
                             "base_momentum", "max_momentum"),
                            (self.total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
        else:
            self._phases = [(up_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                            (self.total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]

        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for group, group_max_lr in zip(optimizer.param_groups, max_lrs):
                group["initial_lr"] = group_max_lr / div_factor
                group["max_lr"] = group_max_lr
                group["min_lr"] = group["initial_lr"] / final_div_factor

        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            max_momentums = _per_group("max_momentum", optimizer, max_momentum)
            base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for group, high, low in zip(optimizer.param_groups, max_momentums, base_momentums):
                    self._set_momentum(group, high)
                    group["max_momentum"] = high
                    group["base_momentum"] = low
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group: dict[str, Any], value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is {self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, (end_step, lr_from, lr_to, momentum_from, momentum_to) in enumerate(self._phases):
                if step <= end_step or i == len(self._phases) - 1:
                    pct = (step - start_step) / (end_step - start_step)
                    lrs.append(self._anneal(group[lr_from], group[lr_to], pct))
                    if self.cycle_momentum:
                        self._set_momentum(group, self._anneal(group[momentum_from], group[momentum_to], pct))
                    break
                start_step = end_step
        return lrs


class ReduceLROnPlateau(LRScheduler):
    """Multiply the lr by ``factor`` once a metric has stopped improving for ``patience`` epochs.

    ``step(metric)`` takes the metric. ``mode`` "min"/"max" says which way is better;
    an improvement must beat the best so far by ``threshold`` (relative, or absolute with
    ``threshold_mode="abs"``). After a reduction, ``cooldown`` epochs pass before bad
    epochs count again; lrs never go below ``min_lr`` and changes smaller than ``eps``
    are ignored.
    """

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr: float | Sequence[float] = 0, eps: float = 1e-8) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown!")
        self.optimizer = optimizer
        self.factor = factor
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.mode = mode
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.threshold = threshold
        self.threshold_mode = threshold_mode
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = self._current_lrs()
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min":
            return a < best * (1.0 - self.threshold) if self.threshold_mode == "rel" else a < best - self.threshold
        return a > best * (self.threshold + 1.0) if self.threshold_mode == "rel" else a > best + self.threshold

    def step(self, metrics, epoch: int | None = None) -> None:  # type: ignore[override]
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(_EPOCH_DEPRECATION, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._current_lrs()

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(f"The number of param groups in the optimizer ({len(groups)}) differs from when "
                                   f"ReduceLROnPlateau was initialized ({len(self.min_lrs)}), usually because a "
                                   f"param group was added; set the `min_lrs` field to match.")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, min_lr)
            if old_lr - new_lr > self.eps:
                group["lr"] = new_lr
