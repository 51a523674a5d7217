"""Schedulers made of schedulers: one after another (SequentialLR) or all at every step (ChainedScheduler)."""
from __future__ import annotations

from bisect import bisect_right
from typing import Any, Sequence

from ..optimizer import Optimizer
from .base import LRScheduler
from .plateau import ReduceLROnPlateau


def _check_members(owner: str, optimizer: Optimizer, schedulers: Sequence[LRScheduler], empty: str) -> None:
    """The schedulers of a SequentialLR or ChainedScheduler: at least one, none ReduceLROnPlateau, one optimizer."""
    if len(schedulers) < 1:
        raise ValueError(f"{owner} expects at least one scheduler{empty}, but got no scheduler.")
    for i, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, "optimizer"):
            raise TypeError(f"{owner} at index {i} should have `optimizer` as its attribute.")
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(f"{owner} does not support `ReduceLROnPlateau` scheduler as it requires "
                             f"additional kwargs to be specified when calling `step`, but got one at index "
                             f"{i} in the given schedulers sequence.")
        if scheduler.optimizer is not optimizer:
            raise ValueError(f"{owner} expects all schedulers to belong to the same optimizer, but got "
                             f"scheduler {type(scheduler).__name__} at index {i} with another optimizer.")


class _Composite(LRScheduler):
    """Saves its schedulers' states inside its own ``state_dict``."""

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


class SequentialLR(_Composite):
    """Run ``schedulers`` one after another, switching at each of the ``milestones`` epochs.

    At a milestone the next scheduler restarts from its epoch 0 (closed form), as in PyTorch.
    """

    def __init__(self, optimizer: Optimizer, schedulers: Sequence[LRScheduler], milestones: Sequence[int],
                 last_epoch: int = -1) -> None:
        _check_members("SequentialLR", optimizer, schedulers, "")
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


class ChainedScheduler(_Composite):
    """Step every scheduler of ``schedulers`` at each ``step()``, so that their (chainable) changes compose."""

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None) -> None:
        if optimizer is None and schedulers:
            optimizer = schedulers[0].optimizer
        _check_members(type(self).__name__, optimizer, schedulers, " to be chained")
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = self._current_lrs()

    def step(self) -> None:  # type: ignore[override]
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = self._current_lrs()
