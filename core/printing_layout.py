"""The values part of ``repr(tensor)``, laid out as PyTorch lays it out (``torch/_tensor_str.py``'s algorithm).

One width per tensor (per part, for complex tensors: real and imaginary parts have a formatter each), chosen
from the values shown: integer mode (``1.``) when every finite value is whole, scientific notation when the
largest and smallest nonzero magnitudes are over 1000 apart, or beyond 1e8 / below 1e-4. Works on a host NumPy
array, so printing runs no op of any backend.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np


class ValueFormatter:
    """Formats the elements of one real array (or one part of a complex one) to a common width."""

    def __init__(self, values: np.ndarray, floating: bool, precision: int, sci_mode: bool | None) -> None:
        self.floating, self.precision = floating, precision
        self.int_mode, self.sci_mode, self.width = True, False, 1
        if not floating:
            self.width = max((len(str(v)) for v in values.reshape(-1).tolist()), default=1)
            return
        shown = values[np.isfinite(values) & (values != 0)]
        if shown.size == 0:
            return
        magnitudes = np.abs(shown)
        smallest, largest = magnitudes.min(), magnitudes.max()
        self.int_mode = bool(np.all(shown == np.ceil(shown)))
        self.sci_mode = (largest / smallest > 1000.0 or largest > 1.0e8 or smallest < 1.0e-4) \
            if sci_mode is None else sci_mode
        if self.sci_mode:
            texts = (f"{v:.{precision}e}" for v in shown.tolist())
        elif self.int_mode:  # room for the point that marks a whole float
            texts = (f"{v:.0f}." for v in shown.tolist())
        else:
            texts = (f"{v:.{precision}f}" for v in shown.tolist())
        self.width = max(len(text) for text in texts)

    def format(self, value) -> str:
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:{self.width}.{self.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}" + ("" if math.isinf(value) or math.isnan(value) else ".")
        else:
            text = f"{value:.{self.precision}f}"
        return text.rjust(self.width)


def summarized(values: np.ndarray, edgeitems: int) -> np.ndarray:
    """The elements a summarized print shows (``edgeitems`` at each end of every dim): what sets the widths."""
    if values.ndim == 0:
        return values
    if not edgeitems:
        return values[(slice(0, 0),) * values.ndim]
    index = tuple(np.r_[:edgeitems, size - edgeitems:size] if size > 2 * edgeitems else slice(None)
                  for size in values.shape)
    return values[np.ix_(*(np.arange(s)[i] for s, i in zip(values.shape, index)))]


def _element_text(formatters: tuple) -> Callable:
    """One element's text: a real value, or a complex one as real part, sign, imaginary part and ``j``."""
    if len(formatters) == 1:
        return formatters[0].format
    real_part, imag_part = formatters

    def complex_text(value) -> str:
        imag = (imag_part.format(value.imag) + "j").lstrip()
        return real_part.format(value.real) + (imag if imag[0] in "+-" else "+" + imag)
    return complex_text


def values_text(values: np.ndarray, indent: int, options) -> str:
    """The bracketed values of ``values`` (float64, complex128 or as stored for the others), starting at column
    ``indent``; ``options`` are ``ember.printing``'s."""
    if values.size == 0:
        return "[]"
    summarize = values.size > options.threshold
    shown = summarized(values, options.edgeitems) if summarize else values
    floating = values.dtype.kind in "fc"
    parts = (shown.real, shown.imag) if values.dtype.kind == "c" else (shown,)
    formatters = tuple(ValueFormatter(part, floating, options.precision, options.sci_mode) for part in parts)
    element_width = sum(f.width for f in formatters) + 2 + (len(formatters) - 1)  # ", " and a complex's "j"
    text = _element_text(formatters)
    edge = options.edgeitems if summarize else None
    return _nested(values, indent, edge, text, element_width, options.linewidth)


def _nested(values: np.ndarray, indent: int, edge: int | None, text: Callable, element_width: int,
            linewidth: int) -> str:
    if values.ndim == 0:
        return text(values.item())
    if values.ndim == 1:
        if edge == 0:
            items = ["..."]
        elif edge is not None and values.shape[0] > 2 * edge:
            items = [text(v) for v in values[:edge].tolist()] + [" ..."] + [text(v) for v in values[-edge:].tolist()]
        else:
            items = [text(v) for v in values.tolist()]
        per_line = max(1, (linewidth - indent) // element_width)
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = range(values.shape[0])
    if edge is not None and values.shape[0] > 2 * edge:
        rows = [*range(edge), None, *range(values.shape[0] - edge, values.shape[0])]
    slices = ["..." if i is None else _nested(values[i], indent + 1, edge, text, element_width, linewidth)
              for i in rows]
    return "[" + ("," + "\n" * (values.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def with_suffixes(text: str, suffixes: list[str], indent: int, linewidth: int) -> str:
    """``text`` followed by ``, suffix`` for each suffix, each on a new line where it would pass the line width."""
    pieces = [text]
    last_line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > linewidth:
            pieces.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            pieces.append(", " + suffix)
            last_line += len(suffix) + 2
    return "".join(pieces) + ")"
