"""``FunctionEventAvg``: the events of one table row added up (``key_averages``)."""
from __future__ import annotations

from .events import FunctionEvent
from .units import TimeStrings


_SUMMED = ("cpu_time_total", "self_cpu_time_total", "device_time_total", "self_device_time_total",
           "cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage", "self_device_memory_usage", "flops")


class FunctionEventAvg(TimeStrings):
    """Sums over the events of one key, with PyTorch's ``FunctionEventAvg`` attributes."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.device_time_total = 0.0
        self.self_device_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_device_memory_usage = 0
        self.flops = 0
        self.input_shapes: list | str | None = None  # "" where the rows were not grouped by shape
        self.stack: list | None = None
        self.is_user_annotation = False
        self.use_device: str | None = None  # the device type whose time the device columns show
        self.cpu_parent: FunctionEvent | None = None

    def add(self, other: "FunctionEvent | FunctionEventAvg") -> "FunctionEventAvg":
        if self.key is None:
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.is_user_annotation = other.is_user_annotation
            self.cpu_parent = other.cpu_parent
        elif other.key != self.key:
            raise ValueError(f"FunctionEventAvg.add: cannot add an event of key {other.key!r} to {self.key!r}")
        self.accumulate(other)
        return self

    def accumulate(self, other: "FunctionEvent | FunctionEventAvg") -> None:
        """Add ``other``'s count, times, memory and flops, whatever its key."""
        self.count += other.count
        for name in _SUMMED:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        if self.use_device is None:
            self.use_device = other.use_device

    __iadd__ = add

    @property
    def cpu_time(self) -> float:
        """Average host time per call (children included)."""
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def device_time(self) -> float:
        return self.device_time_total / self.count if self.count else 0.0

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_total_str} self_device_time={self.self_device_time_total_str} "
                f"device_time={self.device_time_total_str} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage} device_memory_usage={self.device_memory_usage} "
                f"count={self.count}>")


def group_key(event: FunctionEvent, by_input_shape: bool, stack_n: int) -> tuple:
    """The row an event belongs to: its name, and optionally its input shapes and top stack frames."""
    key = [event.key]
    if by_input_shape:
        key.append(str(event.input_shapes))
    if stack_n > 0:
        key.extend(event.stack[:stack_n])
    return tuple(key)


def average(events, by_input_shape: bool = False, stack_n: int = 0) -> list[FunctionEventAvg]:
    """One ``FunctionEventAvg`` per key, in the order the keys first occur."""
    rows: dict[tuple, FunctionEventAvg] = {}
    for event in events:
        key = group_key(event, by_input_shape, stack_n)
        row = rows.get(key)
        if row is None:
            row = rows[key] = FunctionEventAvg()
        row.add(event)
    for row in rows.values():  # a row shows only what it was grouped by
        row.stack = row.stack[:stack_n]
        if not by_input_shape:
            row.input_shapes = ""
    return list(rows.values())
