"""``FunctionEvent``: one span the profiler recorded (an op call, a backward node, a ``record_function``).

Times are microseconds from the start of the profile. Totals include the children (the spans that ran
inside this one on the same thread); "self" figures leave them out.
"""
from __future__ import annotations

from typing import NamedTuple

from .units import TimeStrings

#: Event kinds, also the trace categories of the spans.
OP, BACKWARD, USER_ANNOTATION = "cpu_op", "backward", "user_annotation"


class Interval(NamedTuple):
    start: float
    end: float

    def elapsed_us(self) -> float:
        return self.end - self.start


class FunctionEvent(TimeStrings):
    """One recorded span, with PyTorch's ``FunctionEvent`` attributes."""

    count = 1

    def __init__(self, id: int, name: str, kind: str, thread: int, start_us: float, device: str = "cpu",
                 input_shapes: list | None = None, input_dtypes: list | None = None,
                 stack: list | None = None, cpu_parent: "FunctionEvent | None" = None) -> None:
        self.id = id
        self.name = name
        self.kind = kind
        self.thread = thread
        self.start_us = start_us
        self.end_us = start_us
        self.device = device  # where the op ran ("cpu", "opencl:0"); host work for other kinds
        self.input_shapes = input_shapes or []
        self.input_dtypes = input_dtypes or []
        self.stack = stack or []
        self.cpu_parent = cpu_parent
        self.cpu_children: list[FunctionEvent] = []
        self.allocated_bytes = 0  # by this op's own outputs (leaf ops only: a composite's come from its children)
        self.device_time_total = 0.0  # measured by the device, children included
        self.device_start_us: float | None = None  # when the device reached this op, on the profile's clock
        self.flops = 0
        self.forward: FunctionEvent | None = None  # for a backward node: the forward op that recorded it
        self.annotation_args: str | None = None  # ``record_function(name, args)``'s string
        if cpu_parent is not None:
            cpu_parent.cpu_children.append(self)

    # -- identity --------------------------------------------------------------------------------
    @property
    def key(self) -> str:
        return self.name

    @property
    def is_user_annotation(self) -> bool:
        return self.kind == USER_ANNOTATION

    @property
    def time_range(self) -> Interval:
        return Interval(self.start_us, self.end_us)

    @property
    def device_type(self) -> str:
        return self.device.split(":")[0]

    @property
    def use_device(self) -> str | None:
        """The device type whose own timer measured this event, if one did."""
        return self.device_type if self.device_start_us is not None else None

    # -- host time -------------------------------------------------------------------------------
    @property
    def cpu_time_total(self) -> float:
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(child.cpu_time_total for child in self.cpu_children)

    cpu_time = cpu_time_total

    # -- device time -----------------------------------------------------------------------------
    @property
    def self_device_time_total(self) -> float:
        inner = sum(child.device_time_total for child in self.cpu_children)
        return max(self.device_time_total - inner, 0.0)

    @property
    def device_time(self) -> float:
        return self.device_time_total

    # -- memory ----------------------------------------------------------------------------------
    @property
    def self_cpu_memory_usage(self) -> int:
        return self.allocated_bytes if self.device == "cpu" else 0

    @property
    def self_device_memory_usage(self) -> int:
        return self.allocated_bytes if self.device != "cpu" else 0

    @property
    def cpu_memory_usage(self) -> int:
        return self.self_cpu_memory_usage + sum(child.cpu_memory_usage for child in self.cpu_children)

    @property
    def device_memory_usage(self) -> int:
        return self.self_device_memory_usage + sum(child.device_memory_usage for child in self.cpu_children)

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} device={self.device} "
                f"cpu_time_total={self.cpu_time_total_str} self_cpu_time_total={self.self_cpu_time_total_str} "
                f"device_time_total={self.device_time_total_str} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage} device_memory_usage={self.device_memory_usage}>")
