"""``Summary`` protocol buffers for scalars, histograms and text, laid out as PyTorch writes them."""
from __future__ import annotations

import functools

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

from ._convert import to_float, to_numpy


def scalar(tag: str, value, new_style: bool = False, double_precision: bool = False) -> Summary:
    """Old style: ``simple_value`` (a float32). New style: a tensor for the ``scalars`` plugin,
    float32 or, with ``double_precision``, float64."""
    number = to_float(value, "add_scalar")
    if not new_style:
        return Summary(value=[Summary.Value(tag=tag, simple_value=number)])
    tensor = (TensorProto(double_val=[number], dtype="DT_DOUBLE") if double_precision
              else TensorProto(float_val=[number], dtype="DT_FLOAT"))
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=tag, tensor=tensor, metadata=metadata)])


@functools.lru_cache(maxsize=1)
def tensorflow_bins() -> tuple[float, ...]:
    """TensorFlow's default bucket edges: ±1e-12 growing by 10% up to 1e20, and 0."""
    positive = []
    edge = 1e-12
    while edge < 1e20:
        positive.append(edge)
        edge *= 1.1
    return tuple([-e for e in reversed(positive)] + [0.0] + positive)


def _subsample(counts: np.ndarray, limits: np.ndarray, max_bins: int):
    """Merge runs of adjacent buckets so that at most about ``max_bins`` remain."""
    step = len(counts) // max_bins
    padded = np.pad(counts, (0, -len(counts) % step))
    merged = padded.reshape(-1, step).sum(axis=1)
    return merged, np.append(limits[:-1:step], limits[-1])


def histogram(tag: str, values, bins, max_bins: int | None = None) -> Summary:
    """Bucket ``values`` with ``np.histogram`` (``bins``: edges, a count, or a NumPy rule such as 'auto')
    and keep the buckets from the first to the last non-empty one."""
    array = to_numpy(values, "add_histogram").astype(np.float64).reshape(-1)
    if array.size == 0:
        raise ValueError(f"add_histogram: the values for {tag!r} are empty")
    if not np.isfinite(array).all():
        raise ValueError(f"add_histogram: the values for {tag!r} contain NaN or infinity")
    try:
        counts, limits = np.histogram(array, bins=bins)
    except (TypeError, ValueError) as error:
        raise ValueError(f"add_histogram: cannot bucket {tag!r} with bins={bins!r} (expected 'tensorflow', "
                         f"a NumPy rule such as 'auto' or 'fd', a count or increasing edges): {error}") from None
    if max_bins is not None and len(counts) > max_bins:
        counts, limits = _subsample(counts, limits, max_bins)
    filled = np.flatnonzero(counts)
    if filled.size == 0:
        raise ValueError(f"add_histogram: no value for {tag!r} lies inside the bins "
                         f"[{limits[0]}, {limits[-1]}]")
    first, last = int(filled[0]), int(filled[-1])
    # TensorBoard stores right edges only, so one empty bucket before the first keeps its left edge.
    counts = counts[first - 1:last + 1] if first > 0 else np.concatenate([[0], counts[:last + 1]])
    limits = limits[first:last + 2]
    histo = HistogramProto(min=array.min(), max=array.max(), num=array.size, sum=array.sum(),
                           sum_squares=array.dot(array), bucket_limit=limits.tolist(), bucket=counts.tolist())
    return Summary(value=[Summary.Value(tag=tag, histo=histo)])


def text(tag: str, text_string: str) -> Summary:
    """A one-element string tensor for the ``text`` plugin, under ``<tag>/text_summary``."""
    if not isinstance(text_string, str):
        raise TypeError(f"add_text: text_string must be a str, got {type(text_string).__name__}")
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    tensor = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf-8")],
                         tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=metadata, tensor=tensor)])
