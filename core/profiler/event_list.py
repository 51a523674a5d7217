"""``EventList``: recorded events (or their averages) with PyTorch's ``EventList`` methods."""
from __future__ import annotations

from .averages import FunctionEventAvg, average
from .chrome_trace import write_chrome_trace
from .table import build_table


class EventList(list):
    """A list of ``FunctionEvent`` (``prof.events()``) or ``FunctionEventAvg`` (``key_averages()``)."""

    def __init__(self, items=(), profile_memory: bool = False, with_flops: bool = False,
                 wall_start_ns: int = 0) -> None:
        super().__init__(items)
        self._profile_memory = profile_memory
        self._with_flops = with_flops
        self._wall_start_ns = wall_start_ns

    def _like(self, items) -> "EventList":
        return EventList(items, self._profile_memory, self._with_flops, self._wall_start_ns)

    def key_averages(self, group_by_input_shapes: bool = False, group_by_stack_n: int = 0) -> "EventList":
        """One ``FunctionEventAvg`` per event name (and per input shapes, and top stack frames, if asked)."""
        return self._like(average(self, group_by_input_shapes, group_by_stack_n))

    def total_average(self) -> FunctionEventAvg:
        """Every event added into one ``FunctionEventAvg`` (key ``"Total"``)."""
        total = FunctionEventAvg()
        total.key = "Total"
        for event in self:
            total.accumulate(event)
        return total

    @property
    def self_cpu_time_total(self) -> float:
        """Host time of all events, each counted once (microseconds)."""
        return sum(event.self_cpu_time_total for event in self)

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """PyTorch's table: one line per event or row, sorted by ``sort_by`` (largest first)."""
        return build_table(self, sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
                           max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width, header=header,
                           top_level_events_only=top_level_events_only, time_unit=time_unit,
                           profile_memory=self._profile_memory, with_flops=self._with_flops)

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace (``FunctionEvent`` lists only)."""
        if any(isinstance(item, FunctionEventAvg) for item in self):
            raise TypeError("export_chrome_trace: averaged rows have no times to draw; export prof.events() instead")
        write_chrome_trace(path, self, self._wall_start_ns)

    def __str__(self) -> str:
        return self.table()
