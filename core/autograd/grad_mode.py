"""Grad modes: whether ops record the graph. Thread-local, usable as context managers and decorators."""
from __future__ import annotations

import functools
import threading


class _State(threading.local):
    enabled = True
    inference = False
    anomaly = False


state = _State()


def is_grad_enabled() -> bool:
    return state.enabled


def is_inference_mode_enabled() -> bool:
    return state.inference


class _Mode:
    """Base of the grad-mode context managers; subclasses say what to set on entry."""

    def _enter(self):
        raise NotImplementedError

    def __enter__(self):
        self._saved = (state.enabled, state.inference)
        self._enter()
        return self

    def __exit__(self, *exc) -> None:
        state.enabled, state.inference = self._saved

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args):
                return fn(*args, **kwargs)
        return wrapper

    _args: tuple = ()


class no_grad(_Mode):
    """Ops run without recording: for evaluation and parameter updates."""

    def _enter(self):
        state.enabled = False


class enable_grad(_Mode):
    """Recording on again, inside a no_grad region."""

    def _enter(self):
        state.enabled = True


class set_grad_enabled(_Mode):
    """``with set_grad_enabled(is_training):``; calling it outside ``with`` also sets the mode."""

    def __init__(self, mode: bool) -> None:
        self._args = (bool(mode),)
        self._before = (state.enabled, state.inference)
        state.enabled = bool(mode)

    def __enter__(self):
        self._saved = self._before  # the mode was already set by the constructor
        return self

    def _enter(self):
        state.enabled = self._args[0]


class inference_mode(_Mode):
    """Like no_grad, and tensors made inside are marked as inference tensors (never recorded later)."""

    def __init__(self, mode: bool = True) -> None:
        self._args = (mode,)

    def _enter(self):
        if self._args[0]:
            state.enabled = False
            state.inference = True
