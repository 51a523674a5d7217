"""Stochastic weight averaging and EMA of a model's weights (``torch.optim.swa_utils``).

``AveragedModel`` keeps a copy of a model whose parameters are a running average (equal-weight SWA by
default, or any ``avg_fn`` such as an exponential moving average); ``SWALR`` anneals each group's lr to
its ``swa_lr``; ``update_bn`` recomputes BatchNorm statistics for the averaged weights.
"""
from __future__ import annotations

import copy
import itertools
import math
from typing import Any, Callable, Iterable

from ..autograd import no_grad
from ..dispatch.schema.dtypes import int64
from ..dispatch.ops import F
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from ..tensor import Tensor
from .lr_scheduler import LRScheduler
from .lr_scheduler.base import _per_group
from .optimizer import Optimizer

__all__ = ["AveragedModel", "SWALR", "get_ema_avg_fn", "get_ema_multi_avg_fn", "get_swa_avg_fn",
           "get_swa_multi_avg_fn", "update_bn"]


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """``avg_fn`` of an exponential moving average: ``decay * ema + (1 - decay) * current``."""
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged) -> Tensor:
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn() -> Callable:
    """``avg_fn`` of the equal-weight average: ``avg + (current - avg) / (n + 1)``."""
    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged) -> Tensor:
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """``multi_avg_fn``: the EMA written in place into each tensor of ``ema_param_list``."""
    def ema_update(ema_param_list: list, current_param_list: list, _num_averaged) -> None:
        for ema, current in zip(ema_param_list, current_param_list):
            ema.copy_(ema.lerp(current, 1 - decay))
    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """``multi_avg_fn``: the equal-weight average written in place into each tensor of the first list."""
    average = get_swa_avg_fn()

    def swa_update(averaged_param_list: list, current_param_list: list, num_averaged) -> None:
        for averaged, current in zip(averaged_param_list, current_param_list):
            averaged.copy_(average(averaged, current, num_averaged))
    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` (as ``self.module``) whose weights ``update_parameters(model)`` averages.

    The first update copies the weights; later ones apply ``multi_avg_fn`` (to lists of tensors) or
    ``avg_fn`` (one tensor at a time), the equal-weight SWA average when neither is given. With
    ``use_buffers`` the buffers are averaged too, otherwise they are copied from ``model``.
    ``n_averaged`` (a buffer, so it is saved) counts the updates.
    """

    def __init__(self, model: Module, device=None, avg_fn: Callable | None = None,
                 multi_avg_fn: Callable | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise ValueError("AveragedModel: only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", F.zeros((), dtype=int64, device=device))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _tensors(self, model: Module) -> Iterable[Tensor]:
        return itertools.chain(model.parameters(), model.buffers()) if self.use_buffers else model.parameters()

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current weights into the average."""
        with no_grad():
            averaged = [p.detach() for p in self._tensors(self.module)]
            current = [p.detach().to(a.device) for p, a in zip(self._tensors(model), averaged)]
            count = int(self.n_averaged.item())
            if count == 0:
                for a, c in zip(averaged, current):
                    a.copy_(c)
            elif self.avg_fn is not None:
                for a, c in zip(averaged, current):
                    a.copy_(self.avg_fn(a, c, self.n_averaged.to(a.device)))
            else:
                (self.multi_avg_fn or get_swa_multi_avg_fn())(averaged, current, self.n_averaged)
            if not self.use_buffers:  # keep the buffers in sync with the source model
                for mine, theirs in zip(self.module.buffers(), model.buffers()):
                    mine.detach().copy_(theirs.detach().to(mine.device))
            self.n_averaged.copy_(self.n_averaged + 1)


def update_bn(loader: Iterable[Any], model: Module, device=None) -> None:
    """One pass over ``loader`` in training mode to recompute every BatchNorm's running statistics as a
    cumulative average (momentum None); a batch that is a list or tuple feeds its first element."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """``SWALR(optimizer, swa_lr, anneal_epochs=10, anneal_strategy='cos', last_epoch=-1)``: move each group's
    lr to its ``swa_lr`` over ``anneal_epochs`` steps (cosine or linear), then hold it there.

    Like PyTorch's, the schedule is recursive: each step recovers the lr the annealing started from out of
    the current one, so it composes with other schedulers acting on the same optimizer.
    """

    def __init__(self, optimizer: Optimizer, swa_lr: float, anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        for value, group in zip(_per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = value
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        if not isinstance(anneal_epochs, int) or isinstance(anneal_epochs, bool) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_strategy, self.anneal_epochs = anneal_strategy, anneal_epochs
        super().__init__(optimizer, last_epoch)

    def anneal_func(self, t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2 if self.anneal_strategy == "cos" else t

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        return swa_lr if alpha == 1 else (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float]:
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        span = max(1, self.anneal_epochs)
        prev_alpha = self.anneal_func(max(0.0, min(1.0, (step - 1) / span)))
        alpha = self.anneal_func(max(0.0, min(1.0, step / span)))
        return [group["swa_lr"] * alpha + self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha) * (1 - alpha)
                for group in self.optimizer.param_groups]
