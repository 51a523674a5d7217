"""The two interfaces the dispatch layer calls upward, each registered once at import.

Dispatch sits below the Tensor class and autograd, so it cannot import them. ``ember.tensor``
registers how native arrays become tensors (``TensorLink``); ``ember.autograd`` registers the
``Recorder``, the one interface through which dispatch asks for graph recording. Until autograd is
imported, ``NO_RECORDING`` stands in and nothing is recorded.
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Protocol


@dataclass(frozen=True)
class TensorLink:
    """How dispatch makes tensors: ``wrap(native, dtype, device)`` for a fresh result,
    ``wrap_view(native, dtype, device, base)`` for one sharing ``base``'s storage and version."""
    type: type
    wrap: Callable[..., Any]
    wrap_view: Callable[..., Any]


class GradState(Protocol):
    enabled: bool  # whether op calls record the graph (read on every call, so an attribute, not a method)
    inference: bool  # whether tensors made now are inference tensors (ember.inference_mode)


class Recorder(Protocol):
    """What dispatch needs from autograd."""

    state: GradState

    def record(self, plan: Any, values: list, outputs: Any) -> None:
        """Attach a graph node for one op call (``plan``: its CallPlan) whose inputs may need gradients."""

    def record_transfer(self, source: Any, copy: Any) -> None:
        """Connect ``copy`` (on another device) to ``source`` in the graph."""

    def check_mutation(self, op: Any, values: list) -> None:
        """Refuse an in-place write the graph could not represent, before it happens."""

    def no_grad(self) -> ContextManager:
        """A context in which nothing records."""


class _NoRecording:
    """The recorder before ``ember.autograd`` registers its own: grad mode off, nothing recorded."""

    class state:  # noqa: N801  (read as ``recorder.state.enabled``)
        enabled = False
        inference = False

    def record(self, plan, values, outputs) -> None:
        return None

    def record_transfer(self, source, copy) -> None:
        return None

    def check_mutation(self, op, values) -> None:
        return None

    def no_grad(self) -> ContextManager:
        return nullcontext()


NO_RECORDING = _NoRecording()

tensor: TensorLink | None = None
recorder: Recorder = NO_RECORDING


def register_tensor(link: TensorLink) -> None:
    global tensor
    if tensor is not None and tensor != link:
        raise RuntimeError("ember.dispatch: a tensor type is already registered")
    tensor = link


def _as_is(t):
    return t


#: The tensor holding every value ``t`` stands for: ``t`` itself, or under ``ember.func.vmap`` the whole batch of
#: a batched tensor (which shows one element). A value check (``value_checks.check_extremes``) judges all of it.
whole: Callable = _as_is


def register_whole(function: Callable) -> None:
    global whole
    whole = function


def register_recorder(new: Recorder) -> None:
    global recorder
    if recorder is not NO_RECORDING and recorder is not new:
        raise RuntimeError("ember.dispatch: an autograd recorder is already registered")
    recorder = new


__all__ = ["TensorLink", "Recorder", "GradState", "NO_RECORDING", "register_tensor", "register_recorder",
           "register_whole", "whole"]
