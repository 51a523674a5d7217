"""The scheduler base class: each ``step()`` rewrites ``group["lr"]`` in its optimizer's param groups.

The formulas of the schedulers are PyTorch's, including its recursive (chainable) forms: most
schedulers compute the next lr from the group's current lr, so that two schedulers can act on one
optimizer. ``step(epoch)`` (deprecated in PyTorch) jumps to ``epoch`` with the closed form where one
exists. As in PyTorch 2.13 there is no ``verbose`` argument and no ``print_lr``.
"""
from __future__ import annotations

import warnings
from typing import Any

from ...compiler.state import runs_eagerly
from ..optimizer import Optimizer

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

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every ``step`` runs as itself inside code ``ember.compile`` captured: it changes Python state."""
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = runs_eagerly(cls.__dict__["step"])

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

    @runs_eagerly
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


class _LRScheduler(LRScheduler):
    """The old name of ``LRScheduler``, kept by PyTorch for subclasses written against it."""
