"""``ember.autograd.profiler``: PyTorch's older profiler interface, on ``ember.profiler``'s recorder.

``profile(enabled=True, use_device="opencl", ...)`` records like ``ember.profiler.profile`` and keeps the
events in ``function_events``; ``record_function`` is the same object as ``ember.profiler``'s.
"""
from __future__ import annotations

from typing import Any

from ..profiler import EventList, FunctionEventAvg, ProfilerActivity, profile as _profile, record_function
from ..profiler.activity import activity_of


class profile:  # noqa: N801  (PyTorch's name)
    """``with ember.autograd.profiler.profile() as prof:`` then ``prof.key_averages().table()``.
    ``use_cuda``/``use_device`` add that device's own time; host spans are always recorded
    (``use_cpu=False`` keeps them, as they carry the device times)."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: str | None = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config: Any = None, acc_events: bool = False) -> None:
        activities = {ProfilerActivity.CPU}
        if use_cuda:
            activities.add(ProfilerActivity.CUDA)
        if use_device is not None:
            activities.add(activity_of(use_device))
        self.enabled = enabled
        self.function_events: EventList | None = None
        self._profile = _profile(activities=activities, record_shapes=record_shapes, profile_memory=profile_memory,
                                 with_stack=with_stack, with_flops=with_flops, with_modules=with_modules,
                                 experimental_config=experimental_config, acc_events=acc_events)

    def __enter__(self) -> "profile":
        if self.enabled:
            self._profile.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self._profile.stop()
            self.function_events = self._profile.events()

    def _events(self) -> EventList:
        if self.function_events is None:
            raise RuntimeError("ember.autograd.profiler.profile: no results (the profiler was disabled, "
                               "or is still running)")
        return self.function_events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        return self._events().key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, sort_by: str | None = None, row_limit: int = 100, **options) -> str:
        return self._events().table(sort_by=sort_by, row_limit=row_limit, **options)

    def export_chrome_trace(self, path: str) -> None:
        self._events().export_chrome_trace(path)

    def total_average(self) -> FunctionEventAvg:
        return self._events().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        return self._events().self_cpu_time_total

    def __str__(self) -> str:
        return self.table()


__all__ = ["profile", "record_function"]
