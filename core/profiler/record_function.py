"""``record_function``: a user-named span in the profile, as a context manager or a decorator."""
from __future__ import annotations

import functools
from typing import Any, Callable

from .recorder import active_recorders


class record_function:  # noqa: N801  (PyTorch's name)
    """Marks a block (or every call of a function) as one named row of the table and one span of the
    trace, the parent of the ops run inside it. With no profile recording it does nothing.

    ``args`` is an optional string shown with the span in the trace, as in PyTorch.
    """

    def __init__(self, name: str, args: str | None = None) -> None:
        if not isinstance(name, str):
            raise TypeError(f"record_function: name must be a str, got {type(name).__name__}")
        self.name = name
        self.args = args
        self._open: list[list] = []  # per entry (a decorated function may recurse): the spans it opened

    def __enter__(self) -> "record_function":
        spans = []
        for recorder in active_recorders():
            span = recorder.span(self.name)
            event = span.__enter__()
            event.annotation_args = self.args
            spans.append(span)
        self._open.append(spans)
        return self

    def __exit__(self, *exc) -> None:
        for span in reversed(self._open.pop()):
            span.__exit__(None, None, None)

    def __call__(self, function: Callable) -> Callable:
        @functools.wraps(function)
        def recorded(*args: Any, **kwargs: Any):
            with record_function(self.name, self.args):
                return function(*args, **kwargs)
        return recorded
