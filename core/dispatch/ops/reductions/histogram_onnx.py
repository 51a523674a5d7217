"""ONNX lowerings of the counting ops (bincount, histc, histogram): their composites read sizes and ranges from
the input's values in Python, which a graph cannot; these compute the same in the graph (ReduceMax/ReduceMin
for the range, ScatterElements adding into the bins). Written against the exporter's graph builder ``g``."""
from __future__ import annotations

import numpy as np

from ...schema.dtypes import float64, int64


def _zeros(g, shape: str, dtype) -> str:
    return g.op("Expand", g.const(0, dtype), shape)


def _added_into_bins(g, bins: str, index: str, amount: str, dtype) -> str:
    """``bins`` zeros (a 1-D int64 shape) of ``dtype`` with ``amount[i]`` added at ``index[i]``."""
    return g.op("ScatterElements", _zeros(g, bins, dtype), index, amount, axis=0, reduction="add")


def bincount_onnx(g, input, weights=None, minlength=0):
    dtype = g.out_dtypes[0]
    values = g.cast(input, int64)
    largest = g.op("ReduceMax", values, keepdims=1)  # opset 18 and later: the lowest int64 for an empty input
    size = g.op("Max", g.op("Add", largest, g.const([1], int64)), g.const([minlength], int64))
    amount = g.op("Expand", g.const(1, dtype), g.op("Shape", values)) if weights is None else g.cast(weights, dtype)
    return _added_into_bins(g, size, values, amount, dtype)


def _data_range(g, x: str, low, high, widen: float):
    """(low, high) as float64 scalars: the given ones, else the data's, widened by ``widen`` when equal."""
    if low is not None:
        return g.const(float(low), float64), g.const(float(high), float64)
    low, high = g.op("ReduceMin", x, keepdims=0), g.op("ReduceMax", x, keepdims=0)
    same = g.op("Equal", low, high)
    return (g.op("Where", same, g.op("Sub", low, g.const(widen, float64)), low),
            g.op("Where", same, g.op("Add", high, g.const(widen, float64)), high))


def _within(g, x: str, low: str, high: str) -> str:
    return g.op("And", g.op("GreaterOrEqual", x, low), g.op("LessOrEqual", x, high))


def histc_onnx(g, input, bins=100, min=0, max=0):
    dtype = g.out_dtypes[0]
    x = g.cast(g.op("Reshape", input, g.ints([-1])), float64)
    low, high = _data_range(g, x, *((None, None) if min == max else (min, max)), widen=1.0)
    scale = g.op("Div", g.const(float(bins), float64), g.op("Sub", high, low))
    index = g.cast(g.op("Floor", g.op("Mul", g.op("Sub", x, low), scale)), int64)
    index = g.op("Min", g.op("Max", index, g.const(0, int64)), g.const(bins - 1, int64))
    return _added_into_bins(g, g.ints([bins]), index, g.cast(_within(g, x, low, high), dtype), dtype)


def histogram_onnx(g, input, bins, range=None, weight=None, density=False):  # noqa: A002 (PyTorch's name)
    """Equal bins over the range (the data's when none is given): edges as linspace, each value's bin by
    counting the edges at or below it, the right edge in the last bin."""
    if not isinstance(bins, int):
        g.fail("bin edges given as a tensor are not exported; give the number of bins")
    dtype = g.out_dtypes[0]
    x = g.cast(g.op("Reshape", input, g.ints([-1])), float64)
    low, high = _data_range(g, x, *(range or (None, None)), widen=0.5)
    steps = g.const(np.arange(bins + 1, dtype=np.float64) / bins)
    edges = g.op("Add", low, g.op("Mul", g.op("Sub", high, low), steps))
    below = g.op("LessOrEqual", g.unsqueeze(edges, [0]), g.unsqueeze(x, [1]))
    index = g.op("Sub", g.op("ReduceSum", g.cast(below, int64), g.ints([1]), keepdims=0), g.const(1, int64))
    index = g.op("Min", g.op("Max", index, g.const(0, int64)), g.const(bins - 1, int64))
    inside = g.cast(_within(g, x, low, high), float64)
    amount = inside if weight is None else g.op("Mul", inside, g.cast(g.op("Reshape", weight, g.ints([-1])), float64))
    hist = _added_into_bins(g, g.ints([bins]), index, amount, float64)
    if density:
        widths = g.op("Sub", g.op("Slice", edges, g.ints([1]), g.ints([bins + 1])),
                      g.op("Slice", edges, g.ints([0]), g.ints([bins])))
        hist = g.op("Div", hist, g.op("Mul", g.op("ReduceSum", hist, keepdims=1), widths))
    return g.cast(hist, dtype), g.cast(edges, dtype)
