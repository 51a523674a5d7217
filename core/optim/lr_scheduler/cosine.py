"""Cosine annealing, once or with warm restarts."""
from __future__ import annotations

import math

from ..optimizer import Optimizer
from .base import LRScheduler


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


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from the initial lr to ``eta_min`` over ``T_0`` epochs, then restarting; each
    period is ``T_mult`` times the previous one (SGDR).

    ``step(epoch)`` accepts fractional epochs (e.g. ``epoch + batch / batches``) to anneal within an epoch.
    """

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base_lr in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """Advance one epoch, or go to ``epoch`` (which may be fractional) within its period."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur -= self.T_i
                self.T_i *= self.T_mult
        elif epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        elif epoch >= self.T_0:
            if self.T_mult == 1:
                self.T_cur = epoch % self.T_0
            else:  # which period holds ``epoch``: the periods' lengths are a geometric series
                n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                self.T_i = self.T_0 * self.T_mult ** n
        else:
            self.T_i = self.T_0
            self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = self._current_lrs()
