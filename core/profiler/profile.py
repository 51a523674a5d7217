"""``profile``: PyTorch's profiler context manager, stepping through a schedule of idle, warm-up and
recorded steps, with the recorded events as a table, a list and a Chrome trace."""
from __future__ import annotations

import os
import socket
import time
import warnings
from typing import Any, Callable, Iterable

from .activity import ProfilerActivity, supported_activities
from .event_list import EventList
from .record_function import record_function
from .recorder import Clock, Options, Recorder
from .schedule import ProfilerAction, record_always

_NONE, _WARMUP, _RECORD, _SAVE = (ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
                                  ProfilerAction.RECORD_AND_SAVE)


_PREPARE, _START, _STOP, _READY = "_prepare_trace", "_start_trace", "_stop_trace", "_trace_ready"
#: (this step's action, the next one's, None at stop()) -> what to do, in order (as PyTorch's profiler does).
_TRANSITIONS: dict[tuple, tuple[str, ...]] = {
    (_NONE, _WARMUP): (_PREPARE,),
    (_NONE, _RECORD): (_PREPARE, _START),
    (_NONE, _SAVE): (_PREPARE, _START),
    (_WARMUP, _NONE): ("Incorrect schedule: WARMUP followed by NONE", _START, _STOP),
    (_WARMUP, _RECORD): (_START,),
    (_WARMUP, _SAVE): (_START,),
    (_RECORD, _NONE): ("Incorrect schedule: RECORD followed by NONE", _STOP),
    (_RECORD, _WARMUP): ("Incorrect schedule: RECORD followed by WARMUP", _STOP),
    (_SAVE, _NONE): (_STOP, _READY),
    (_SAVE, _WARMUP): (_STOP, _READY, _PREPARE),
    (_SAVE, _RECORD): (_STOP, _READY, _PREPARE, _START),
    (_SAVE, _SAVE): (_STOP, _READY, _PREPARE, _START),
    (_WARMUP, None): (_START, _STOP),
    (_RECORD, None): (_STOP, _READY),
    (_SAVE, None): (_STOP, _READY),
}


class profile:  # noqa: N801  (PyTorch's name)
    """Records the ops, backward nodes and ``record_function`` spans run while it is active.

    ``activities``: ``ProfilerActivity.CPU`` for host time; a device activity (``CUDA``, or
    ``PrivateUse1`` for OpenCL and other plugins) adds the time each op took on its device, where the
    backend can time itself. Default: ``supported_activities()``. ``schedule`` and ``step()`` select the
    recorded steps; ``on_trace_ready(prof)`` runs after each recorded cycle (and at ``stop()`` without a
    schedule). ``record_shapes``, ``profile_memory`` (bytes of each op's new outputs), ``with_stack``
    (the caller's Python frames) and ``with_flops`` (matrix products, convolutions, add and mul) add
    columns. ``acc_events`` keeps the events of every cycle instead of the latest one's.
    ``with_modules`` and ``experimental_config`` are accepted for compatibility and have no effect:
    PyTorch uses them only for TorchScript modules and Kineto's own options.
    """

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[["profile"], Any] | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None,
                 execution_trace_observer: Any = None, acc_events: bool = False,
                 use_cuda: bool | None = None) -> None:
        chosen = set(supported_activities() if activities is None else activities)
        for activity in chosen:
            if not isinstance(activity, ProfilerActivity):
                raise TypeError(f"ember.profiler.profile: activities must be ProfilerActivity values, got {activity!r}")
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead", FutureWarning, stacklevel=2)
            if use_cuda:
                chosen.add(ProfilerActivity.CUDA)
            else:
                chosen.discard(ProfilerActivity.CUDA)
        if execution_trace_observer is not None:
            raise TypeError("ember.profiler.profile: execution_trace_observer is not supported "
                            "(Ember records no execution graph); leave it None")
        self.activities = chosen
        self.options = Options(frozenset(chosen), record_shapes, profile_memory, with_stack, with_flops)
        self.record_shapes, self.profile_memory = record_shapes, profile_memory
        self.with_stack, self.with_flops, self.with_modules = with_stack, with_flops, with_modules
        self.experimental_config = experimental_config
        self.acc_events = acc_events
        self.schedule = schedule or record_always
        self.record_steps = schedule is not None  # a "ProfilerStep#N" span per step
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(0)
        self._clock: Clock | None = None
        self._recorder: Recorder | None = None
        self._events: list | None = None
        self._step_span: record_function | None = None

    # -- the schedule ----------------------------------------------------------------------------
    def __enter__(self) -> "profile":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        self._transit(_NONE, self.current_action)
        self._open_step()

    def stop(self) -> None:
        self._close_step()
        self._transit(self.current_action, None)

    def step(self) -> None:
        """The next step of the loop starts: move along the schedule."""
        self._close_step()
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(previous, self.current_action)
        self._open_step()

    def _open_step(self) -> None:
        if self.record_steps:
            self._step_span = record_function(f"ProfilerStep#{self.step_num}")
            self._step_span.__enter__()

    def _close_step(self) -> None:
        if self._step_span is not None:
            self._step_span.__exit__(None, None, None)
            self._step_span = None

    def _transit(self, before: ProfilerAction | None, after: ProfilerAction | None) -> None:
        """Run what moving from one step's action to the next calls for (``_TRANSITIONS``)."""
        for what in _TRANSITIONS.get((before, after), ()):
            if what.startswith("Incorrect"):
                warnings.warn(what, stacklevel=3)
            else:
                getattr(self, what)()

    def _prepare_trace(self) -> None:
        if self._clock is None:
            self._clock = Clock()
        self._recorder = Recorder(self.options, self._clock)

    def _start_trace(self) -> None:
        self._recorder.__enter__()

    def _stop_trace(self) -> None:
        self._recorder.__exit__(None, None, None)
        events = self._recorder.finish()
        self._events = (self._events or []) + events if self.acc_events else events

    def _trace_ready(self) -> None:
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # -- results ---------------------------------------------------------------------------------
    def events(self) -> EventList:
        """The recorded ``FunctionEvent``s, in the order they started."""
        if self._events is None:
            raise RuntimeError("ember.profiler.profile: nothing recorded yet; results are ready once a recorded "
                               "step ends (leave the with block, or call stop())")
        return EventList(self._events, self.profile_memory, self.with_flops, self._clock.wall_start_ns)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        """One row per op name (and per input shapes, or per top stack frames, when asked)."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        """Write the latest recorded events as a Chrome trace (gzip-compressed when ``path`` ends in .gz)."""
        self.events().export_chrome_trace(path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write the ``with_stack`` frames as collapsed stacks (flame graph input): one line per event,
        its frames outermost first, then its name and ``metric`` in whole microseconds."""
        if metric not in ("self_cpu_time_total", "self_cuda_time_total", "self_device_time_total"):
            raise ValueError(f"export_stacks: metric must be 'self_cpu_time_total' or 'self_device_time_total', "
                             f"got {metric!r}")
        attribute = "self_cpu_time_total" if metric == "self_cpu_time_total" else "self_device_time_total"
        with open(path, "w", encoding="utf-8") as f:
            for event in self.events():
                value = int(getattr(event, attribute))
                if event.stack and value > 0:
                    frames = [frame.replace(";", ",") for frame in reversed(event.stack)]
                    f.write(";".join([*frames, event.name]) + f" {value}\n")

    @property
    def self_cpu_time_total(self) -> float:
        return self.events().self_cpu_time_total


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False) -> Callable[[profile], None]:
    """An ``on_trace_ready`` that writes each cycle's trace to ``dir_name`` as
    ``{worker_name}.{time_ns}.pt.trace.json[.gz]``, where TensorBoard's profiler plugin finds it."""
    name = worker_name or f"{socket.gethostname()}_{os.getpid()}"

    def handler(prof: profile) -> None:
        os.makedirs(dir_name, exist_ok=True)
        file_name = f"{name}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, file_name))
    return handler
