"""The ranks taking part in one save or load, and how they agree on failures.

Every step that can fail on one rank runs on every rank and is followed by an exchange of outcomes, so a
failure on one rank raises on all of them instead of leaving the others waiting in the next collective.
"""
from __future__ import annotations

from typing import Callable, TypeVar

from ..errors import DistError
from ..objects import all_gather_object, broadcast_object_list
from ..state import is_initialized, resolve

T = TypeVar("T")


class CheckpointException(DistError):
    """Some other rank failed a step of a save or load; ``failures`` maps its rank to its error."""

    def __init__(self, msg: str, failures: dict[int, str]) -> None:
        self.failures = failures
        listed = "; ".join(f"rank {rank}: {message}" for rank, message in sorted(failures.items()))
        super().__init__(f"{msg} failed on {len(failures)} rank(s): {listed}")


class Ranks:
    """A process group's ranks, or this process alone (no initialized group, or ``no_dist=True``)."""

    def __init__(self, process_group, no_dist: bool, op_name: str) -> None:
        self.op_name = op_name
        self.pg = None
        if no_dist or not is_initialized():
            return
        self.pg = resolve(process_group, op_name)
        if self.pg is None:
            raise ValueError(f"{op_name}: this rank is not a member of the given process_group")

    @property
    def rank(self) -> int:
        return 0 if self.pg is None else self.pg.rank()

    @property
    def size(self) -> int:
        return 1 if self.pg is None else self.pg.size()

    def all_gather(self, step: Callable[[], T]) -> list[T]:
        """Every rank's result of ``step``, in rank order; if it raised anywhere, it raises everywhere."""
        if self.pg is None:
            return [step()]
        own = None
        try:
            outcome = ("ok", step())
        except Exception as exc:  # reported to the other ranks, then re-raised here
            own, outcome = exc, ("error", f"{type(exc).__name__}: {exc}")
        outcomes: list = [None] * self.size
        all_gather_object(outcomes, outcome, group=self.pg)
        if own is not None:
            raise own
        self._raise_failures(outcomes)
        return [value for _, value in outcomes]

    def on_coordinator(self, step: Callable[[], None]) -> None:
        """Run ``step`` on group rank 0 only; every rank raises if it failed."""
        if self.pg is None:
            step()
            return
        own, outcome = None, ("ok", None)
        if self.rank == 0:
            try:
                step()
            except Exception as exc:
                own, outcome = exc, ("error", f"{type(exc).__name__}: {exc}")
        shared = [outcome]
        broadcast_object_list(shared, group=self.pg, group_src=0)
        if own is not None:
            raise own
        self._raise_failures([*shared, *[("ok", None)] * (self.size - 1)])

    def _raise_failures(self, outcomes: list) -> None:
        failures = {rank: message for rank, (status, message) in enumerate(outcomes) if status == "error"}
        if failures:
            raise CheckpointException(self.op_name, failures)
