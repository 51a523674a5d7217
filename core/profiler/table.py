"""The text table of ``key_averages().table()``: PyTorch's columns, widths and footer."""
from __future__ import annotations

from .units import format_memory, format_percent, format_time

_WIDTH = 12  # every numeric column
_SORT_ALIASES = {"cuda_time": "device_time", "cuda_time_total": "device_time_total",
                 "self_cuda_time_total": "self_device_time_total", "cuda_memory_usage": "device_memory_usage",
                 "self_cuda_memory_usage": "self_device_memory_usage"}
_FLOP_UNITS = (("PFLOPs", 1e15), ("TFLOPs", 1e12), ("GFLOPs", 1e9), ("MFLOPs", 1e6), ("KFLOPs", 1e3))


def sort_rows(rows: list, sort_by: str | None) -> list:
    """``rows`` by ``sort_by`` (any numeric attribute, largest first; PyTorch's ``cuda_*`` names too)."""
    if sort_by is None:
        return list(rows)
    attribute = _SORT_ALIASES.get(sort_by, sort_by)
    if rows and not isinstance(getattr(rows[0], attribute, None), (int, float)):
        raise ValueError(f"table: cannot sort by {sort_by!r}; use an event attribute such as "
                         f"'self_cpu_time_total', 'cpu_time_total', 'cpu_time', 'self_device_time_total', "
                         f"'device_time_total', 'cpu_memory_usage', 'self_cpu_memory_usage' or 'count'")
    return sorted(rows, key=lambda row: getattr(row, attribute), reverse=True)


def _flops_unit(largest: float) -> tuple[str, float]:
    for name, size in _FLOP_UNITS:
        if largest >= size:
            return name, size
    return "FLOPs", 1.0


def _clip(text: str, width: int | None) -> str:
    if width is not None and len(text) > width - 3:
        return text[:max(width - 6, 0)] + "..."
    return text


def build_table(rows: list, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
                max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: str | None = None,
                top_level_events_only: bool = False, time_unit: str | None = None, profile_memory: bool = True,
                with_flops: bool = False) -> str:
    """The table of ``rows`` (events or averages). Device columns appear when a row has device time,
    memory columns when ``profile_memory`` and a row allocated, shapes when any were recorded."""
    if not rows:
        return ""
    self_cpu_total = sum(row.self_cpu_time_total for row in rows)
    self_device_total = sum(row.self_device_time_total for row in rows)
    device_types = {row.use_device for row in rows if row.use_device}
    device = device_types.pop().upper() if len(device_types) == 1 else "DEVICE"
    has_device_time = self_device_total > 0
    has_cpu_mem = profile_memory and any(row.cpu_memory_usage for row in rows)
    has_device_mem = profile_memory and any(row.device_memory_usage for row in rows)
    has_shapes = any(row.input_shapes for row in rows)
    has_stack = any(row.stack for row in rows)
    has_flops = with_flops and any(row.flops for row in rows)

    shown = sort_rows(rows, sort_by)
    if top_level_events_only:
        shown = [row for row in shown if row.cpu_parent is None]
    if row_limit is not None and row_limit > 0:
        shown = shown[:row_limit]

    name_width = max(len(row.key) for row in rows) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    columns: list[tuple[str, int, object]] = [("Name", name_width, lambda r: _clip(r.key, name_width))]

    def time(value: float) -> str:
        return format_time(value, time_unit)

    columns += [("Self CPU %", _WIDTH, lambda r: format_percent(r.self_cpu_time_total, self_cpu_total)),
                ("Self CPU", _WIDTH, lambda r: time(r.self_cpu_time_total)),
                ("CPU total %", _WIDTH, lambda r: format_percent(r.cpu_time_total, self_cpu_total)),
                ("CPU total", _WIDTH, lambda r: time(r.cpu_time_total)),
                ("CPU time avg", _WIDTH, lambda r: time(r.cpu_time_total / r.count))]
    if has_device_time:
        columns += [(f"Self {device}", _WIDTH, lambda r: time(r.self_device_time_total)),
                    (f"Self {device} %", _WIDTH, lambda r: format_percent(r.self_device_time_total,
                                                                          self_device_total)),
                    (f"{device} total", _WIDTH, lambda r: time(r.device_time_total)),
                    (f"{device} time avg", _WIDTH, lambda r: time(r.device_time_total / r.count))]
    if has_cpu_mem:
        columns += [("CPU Mem", _WIDTH, lambda r: format_memory(r.cpu_memory_usage)),
                    ("Self CPU Mem", _WIDTH, lambda r: format_memory(r.self_cpu_memory_usage))]
    if has_device_mem:
        columns += [(f"{device} Mem", _WIDTH, lambda r: format_memory(r.device_memory_usage)),
                    (f"Self {device} Mem", _WIDTH, lambda r: format_memory(r.self_device_memory_usage))]
    columns.append(("# of Calls", _WIDTH, lambda r: str(r.count)))
    if has_shapes:
        shapes_width = min(max(len(str(row.input_shapes)) for row in rows) + 4, max_shapes_column_width)
        columns.append(("Input Shapes", shapes_width, lambda r: _clip(str(r.input_shapes), shapes_width)))
    if has_stack:
        src_width = min(max(len(frame) for row in rows for frame in row.stack or [""]) + 4, max_src_column_width)
        src_at = len(columns)
        columns.append(("Source Location", src_width, lambda r: _clip(r.stack[0] if r.stack else "", src_width)))
    if has_flops:
        unit, size = _flops_unit(max(row.flops for row in rows))
        columns.append((f"Total {unit}", _WIDTH, lambda r: f"{r.flops / size:.3f}" if r.flops else "--"))

    def line(cells: list[str]) -> str:
        return "  ".join(cell.rjust(width) for cell, (_, width, _) in zip(cells, columns)) + "  "

    rule = "  ".join("-" * width for _, width, _ in columns) + "  "
    out = [header] if header else []
    out += [rule, line([title for title, _, _ in columns]), rule]
    for row in shown:
        out.append(line([cell(row) for _, _, cell in columns]))
        if has_stack:  # further frames of the stack, one per line under the row
            for frame in (row.stack or [])[1:]:
                cells = [""] * len(columns)
                cells[src_at] = _clip(frame, src_width)
                out.append(line(cells))
    out.append(rule)
    out.append(f"Self CPU time total: {time(self_cpu_total)}")
    if has_device_time:
        out.append(f"Self {device} time total: {time(self_device_total)}")
    return "\n".join(out) + "\n"
