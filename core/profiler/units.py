"""How the profiler writes times (microseconds in) and byte counts, as PyTorch's tables do."""
from __future__ import annotations

_TIME_UNITS = {"s": 1e6, "ms": 1e3, "us": 1.0}


def format_time(us: float, unit: str | None = None) -> str:
    """``12.345ms``; ``unit`` ("s", "ms", "us") forces one unit, else the largest that fits."""
    if unit is None:
        unit = "s" if us >= 1e6 else "ms" if us >= 1e3 else "us"
    if unit not in _TIME_UNITS:
        raise ValueError(f"ember.profiler: time_unit must be one of 's', 'ms', 'us', got {unit!r}")
    return f"{us / _TIME_UNITS[unit]:.3f}{unit}"


class TimeStrings:
    """The ``*_str`` views of an event's or a row's times, as PyTorch's events have them."""

    @property
    def cpu_time_total_str(self) -> str:
        return format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self) -> str:
        return format_time(self.self_cpu_time_total)

    @property
    def device_time_total_str(self) -> str:
        return format_time(self.device_time_total)

    @property
    def self_device_time_total_str(self) -> str:
        return format_time(self.self_device_time_total)


def format_memory(nbytes: int) -> str:
    """``1.06 KB``, ``400 B``; negative counts keep their sign."""
    for unit, size in (("GB", 1024 ** 3), ("MB", 1024 ** 2), ("KB", 1024)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


def format_percent(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.2f}%" if whole else "0.00%"
