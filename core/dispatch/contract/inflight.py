"""Host objects kept alive until device work queued before an event has finished.

A device reads memory after the host call that queued the work has returned. A pinned staging buffer, the
source of a copy to another stream, or a tensor that ``record_stream`` lent to a side stream must not go back
to its pool (and be handed out again) before then. ``InFlight`` holds such objects beside an event recorded
after the work, and lets them go once the event reports done. Release is lazy, at the next ``keep`` or an
explicit ``release_done``, so no host thread ever waits for the device here.
"""
from __future__ import annotations

import threading
from typing import Any, Protocol


class CompletionEvent(Protocol):
    """What ``keep`` needs of an event: whether the device has reached it (``cupy.cuda.Event.done``)."""

    @property
    def done(self) -> bool: ...


class InFlight:
    """Objects waiting for their events. Events may complete in any order (they can sit on different
    streams), so every check looks at all of them rather than only the oldest."""

    def __init__(self) -> None:
        self._waiting: list[tuple[CompletionEvent, tuple[Any, ...]]] = []
        self._lock = threading.Lock()  # autograd's threads and the caller's may record at the same time

    def keep(self, event: CompletionEvent, *objects: Any) -> None:
        """Hold ``objects`` until ``event`` is done; first let go of those whose events already are."""
        with self._lock:
            self._drop_done()
            self._waiting.append((event, objects))

    def release_done(self) -> int:
        """Let go of every object whose event is done; returns how many entries are still waiting."""
        with self._lock:
            self._drop_done()
            return len(self._waiting)

    def __len__(self) -> int:
        return len(self._waiting)

    def _drop_done(self) -> None:
        self._waiting = [entry for entry in self._waiting if not entry[0].done]
