"""``Recorder``: the dispatch mode that turns op calls, backward nodes and ``record_function`` scopes
into a tree of ``FunctionEvent``s, with device time from the backends' timers."""
from __future__ import annotations

import os
import threading
import time
import traceback
import weakref
from contextlib import contextmanager
from dataclasses import dataclass

from ..dispatch.execution import modes
from ..dispatch.contract import registry
from ..dispatch.execution.modes import DispatchMode
from .activity import ProfilerActivity, activity_of
from .events import BACKWARD, OP, USER_ANNOTATION, FunctionEvent
from .inputs import allocated_bytes, call_device, flops, input_shapes_and_dtypes, outputs_of


@dataclass(frozen=True)
class Options:
    """What a profile records besides names and host times."""

    activities: frozenset = frozenset({ProfilerActivity.CPU})
    record_shapes: bool = False
    profile_memory: bool = False
    with_stack: bool = False
    with_flops: bool = False


class Clock:
    """The profile's time line: microseconds since it was made, and the wall time of that start."""

    def __init__(self) -> None:
        self.start_ns = time.perf_counter_ns()
        self.wall_start_ns = time.time_ns()

    def now_us(self) -> float:
        return (time.perf_counter_ns() - self.start_ns) / 1000.0


class _DeviceClock:
    """One device's timer, and a reference marker placed when the device was idle, at a known host time."""

    def __init__(self, timer, backend, index, clock: Clock) -> None:
        backend.synchronize(index)
        self.timer = timer
        self.reference = timer.mark()
        self.reference_us = clock.now_us()


_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # frames in here are left out of stacks


def _user_stack() -> list[str]:
    """The caller's Python frames outside Ember, innermost first, as ``file(line): function``."""
    frames = traceback.extract_stack()
    return [f"{f.filename}({f.lineno}): {f.name}" for f in reversed(frames)
            if not f.filename.startswith(_EMBER_DIR)]


class Recorder(DispatchMode):
    """Records while entered; ``observes_nested`` so composites' inner ops become child events."""

    observes_nested = True

    def __init__(self, options: Options, clock: Clock) -> None:
        self.options = options
        self.clock = clock
        self.events: list[FunctionEvent] = []
        self._open = threading.local()  # per thread, the spans now running (the parents of new ones)
        self._forward_of: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # graph node -> its op event
        self._device_clocks: dict = {}  # device -> _DeviceClock, or None where it is not timed
        self._counted: dict[int, weakref.ref] = {}  # id -> output tensor whose bytes an event counted
        self._marks: list = []  # (event, device clock, start marker, end marker)
        self._timed = {a for a in options.activities if a is not ProfilerActivity.CPU}

    # -- spans -----------------------------------------------------------------------------------
    def _stack(self) -> list:
        stack = getattr(self._open, "stack", None)
        if stack is None:
            stack = self._open.stack = []
        return stack

    def _begin(self, name: str, kind: str, device: str = "cpu", shapes=None, dtypes=None) -> FunctionEvent:
        stack = self._stack()
        event = FunctionEvent(len(self.events), name, kind, threading.get_native_id(), 0.0, device, shapes, dtypes,
                              _user_stack() if self.options.with_stack else None,
                              stack[-1] if stack else None)
        self.events.append(event)
        stack.append(event)
        event.start_us = event.end_us = self.clock.now_us()
        return event

    def _end(self, event: FunctionEvent) -> None:
        event.end_us = self.clock.now_us()
        stack = self._stack()
        if stack and stack[-1] is event:
            stack.pop()
        elif event in stack:  # a scope closed out of order (a generator's record_function): close what it holds
            del stack[stack.index(event):]

    @contextmanager
    def span(self, name: str, kind: str = USER_ANNOTATION):
        """A named span around a block (``record_function``, ``ProfilerStep#N``)."""
        event = self._begin(name, kind)
        try:
            yield event
        finally:
            self._end(event)

    # -- op calls --------------------------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        options = self.options
        shapes, dtypes = input_shapes_and_dtypes(args, kwargs) if options.record_shapes else (None, None)
        name = func.__name__  # Ember's ops as ember::<op>; a custom op by its own qualified name (mylib::op)
        event = self._begin(name if "::" in name else "ember::" + name, OP, "cpu", shapes, dtypes)
        device = call_device(args, kwargs)  # (inside the op's time: finding the default device may load backends)
        event.device = str(device)
        clock = self._device_clock(device) if self._timed else None
        start = clock.timer.mark() if clock is not None else None
        try:
            result = func(*args, **(kwargs or {}))
        finally:
            if start is not None:
                self._marks.append((event, clock, start, clock.timer.mark()))
            self._end(event)
        outputs = outputs_of(result)
        if options.profile_memory:  # outputs that an inner op made were counted there
            fresh = [t for t in outputs if not self._counted_before(t)]
            event.allocated_bytes = allocated_bytes(func.op, args, kwargs, fresh)
        if options.with_flops and not any(child.flops for child in event.cpu_children):
            event.flops = flops(func.__name__, args, outputs)  # else a decomposition's inner ops counted them
        for t in outputs:
            node = t.grad_fn
            if node is not None and node not in self._forward_of:  # the innermost op that recorded the node
                self._forward_of[node] = event
        return result

    def _counted_before(self, t) -> bool:
        """Whether an event counted ``t``'s bytes already; from now on, one has. (Tensors compare by value,
        so they are kept by identity here.)"""
        key = id(t)
        ref = self._counted.get(key)
        if ref is not None and ref() is t:
            return True
        self._counted[key] = weakref.ref(t, lambda _, key=key: self._counted.pop(key, None))
        return False

    def _device_clock(self, device) -> "_DeviceClock | None":
        clock = self._device_clocks.get(device, False)
        if clock is False:
            clock = None
            if activity_of(device.type) in self._timed:
                backend = registry.get_backend(device.type)
                timer = backend.device_timer(device.index)
                if timer is not None:
                    clock = _DeviceClock(timer, backend, device.index, self.clock)
            self._device_clocks[device] = clock
        return clock

    # -- backward --------------------------------------------------------------------------------
    @contextmanager
    def backward_node(self, node):
        """The span of one graph node's backward, linked to the forward op that recorded the node."""
        with self.span(node.name(), BACKWARD) as event:
            event.forward = self._forward_of.get(node)
            yield

    # -- results ---------------------------------------------------------------------------------
    def finish(self) -> list[FunctionEvent]:
        """Read the device timers (waiting for the devices) and return the events, in start order."""
        for event, clock, start, end in self._marks:
            event.device_time_total = clock.timer.elapsed_ms(start, end) * 1000.0
            event.device_start_us = clock.reference_us + clock.timer.elapsed_ms(clock.reference, start) * 1000.0
        self._marks.clear()
        return self.events


def active_recorders() -> list[Recorder]:
    """The recorders now entered (``record_function`` opens its span in each)."""
    return [mode for mode in modes.active if isinstance(mode, Recorder)]
