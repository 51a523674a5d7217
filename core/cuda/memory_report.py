"""``memory_stats`` under PyTorch's key names, and ``memory_summary``'s table built from them.

The backend's ``memory_stats(index)`` reports ``allocated_bytes``, ``peak_bytes`` and ``reserved_bytes``;
PyTorch programs read ``"allocated_bytes.all.current"`` and friends. Only the keys Ember can fill are
present (PyTorch's per-pool, per-size and allocation-count keys are not).
"""
from __future__ import annotations

from . import _device

# PyTorch's key -> the backend's memory_stats key.
_TORCH_KEYS = {"allocated_bytes.all.current": "allocated_bytes", "allocated_bytes.all.peak": "peak_bytes",
               "reserved_bytes.all.current": "reserved_bytes"}
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def torch_memory_stats(raw: dict[str, int]) -> dict[str, int]:
    """PyTorch's names for the statistics in a backend's ``memory_stats`` dict, sorted as PyTorch's."""
    return {torch_key: int(raw[ours]) for torch_key, ours in sorted(_TORCH_KEYS.items()) if ours in raw}


def memory_stats(device=None) -> dict[str, int]:
    """The allocator's statistics for ``device`` under PyTorch's key names (``torch.cuda.memory_stats``)."""
    return torch_memory_stats(_device.backend().memory_stats(_device.index_of(device)))


def format_bytes(count: int) -> str:
    """A byte count with a binary unit: 512 B, 1.50 KiB, 3.00 GiB."""
    value, unit = float(count), _UNITS[0]
    for larger in _UNITS[1:]:
        if abs(value) < 1024:
            break
        value, unit = value / 1024, larger
    return f"{int(value)} {unit}" if unit == "B" else f"{value:.2f} {unit}"


def format_memory_summary(stats: dict[str, int], index: int, abbreviated: bool = False) -> str:
    """The table ``memory_summary`` prints, from a ``memory_stats`` dict. The full form adds the bytes the
    allocator holds but no tensor uses (what ``empty_cache`` would give back)."""
    def cell(key: str) -> str:
        return format_bytes(stats[key]) if key in stats else "-"

    rows = [("Allocated memory", cell("allocated_bytes.all.current"), cell("allocated_bytes.all.peak")),
            ("Reserved memory", cell("reserved_bytes.all.current"), "-")]
    if not abbreviated:
        cached = "-"
        if "reserved_bytes.all.current" in stats and "allocated_bytes.all.current" in stats:
            cached = format_bytes(stats["reserved_bytes.all.current"] - stats["allocated_bytes.all.current"])
        rows.append(("Cached, not allocated", cached, "-"))
    header = ("Metric", "Cur Usage", "Peak Usage")
    widths = [max(len(row[i]) for row in rows + [header]) + 2 for i in range(3)]
    inner = sum(widths) + len(widths) - 1

    def line(row: tuple[str, str, str]) -> str:
        first = f" {row[0]}".ljust(widths[0])
        return "|" + "|".join([first] + [row[i].center(widths[i]) for i in (1, 2)]) + "|"
    title = f"Ember CUDA memory summary, device ID {index}"
    return "\n".join(["|" + "=" * inner + "|", "|" + title.center(inner) + "|", "|" + "=" * inner + "|",
                      "|" + "|".join(h.center(w) for h, w in zip(header, widths)) + "|",
                      "|" + "-" * inner + "|", *(line(row) for row in rows), "|" + "=" * inner + "|"]) + "\n"


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """A readable table of ``memory_stats(device)`` (``torch.cuda.memory_summary``)."""
    index = _device.index_of(device)
    return format_memory_summary(memory_stats(index), index, abbreviated)
