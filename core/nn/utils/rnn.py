"""Variable-length batches for the recurrent layers: ``PackedSequence`` and the functions that pack and pad.

A packed batch stores its sequences time step by time step, longest first: ``data`` holds, for each step
``t``, the ``batch_sizes[t]`` sequences still running, so a recurrent layer fed with it stops each sequence
at its own length. ``sorted_indices`` says which sequence of the caller's batch is the k-th longest
(None when the caller sorted them already), ``unsorted_indices`` undoes that order.
"""
from __future__ import annotations

from collections import namedtuple
from typing import Iterable, Sequence

from ...dispatch.schema.dtypes import float16, float32, float64, int64
from ...dispatch.schema.errors import ShapeError
from ...dispatch.ops import F
from ...creation import tensor
from ...tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """``(data, batch_sizes, sorted_indices, unsorted_indices)``; build it with ``pack_padded_sequence`` or
    ``pack_sequence``, not by hand. ``batch_sizes`` is an int64 tensor on the CPU, as in PyTorch."""

    __slots__ = ()

    def __new__(cls, data: Tensor, batch_sizes: Tensor | None = None, sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> "PackedSequence":
        if batch_sizes is None:
            raise ValueError("PackedSequence: batch_sizes is required; build one with pack_padded_sequence or "
                             "pack_sequence")
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> "PackedSequence":
        """``data`` (and the indices, to its device) converted as ``Tensor.to``; ``batch_sizes`` stays put."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = (lambda t: None if t is None else t.to(data.device))
        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def cpu(self) -> "PackedSequence":
        return self.to("cpu")

    def double(self) -> "PackedSequence":
        return self.to(dtype=float64)

    def float(self) -> "PackedSequence":
        return self.to(dtype=float32)

    def half(self) -> "PackedSequence":
        return self.to(dtype=float16)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return False


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation that undoes ``permutation`` (None stays None)."""
    if permutation is None:
        return None
    positions = F.arange(permutation.numel(), dtype=permutation.dtype, device=permutation.device)
    return F.scatter(F.empty_like(permutation), 0, permutation, positions)


def _lengths_list(lengths) -> list[int]:
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1:
            raise ShapeError(f"pack_padded_sequence: lengths must be a 1-D tensor, got shape {tuple(lengths.shape)}")
        return [int(n) for n in lengths.tolist()]
    return [int(n) for n in lengths]


def _batch_sizes(sorted_lengths: list[int]) -> list[int]:
    """``batch_sizes[t]``: how many of the (descending) lengths exceed ``t``."""
    return [sum(1 for n in sorted_lengths if n > t) for t in range(sorted_lengths[0])] if sorted_lengths else []


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack ``input`` (``(T, B, *)``, or ``(B, T, *)`` with ``batch_first``) whose sequence ``b`` has
    ``lengths[b]`` real steps. With ``enforce_sorted`` the lengths must already be in decreasing order."""
    sizes = _lengths_list(lengths)
    batch_dim = 0 if batch_first else 1
    if input.ndim < 2 or input.shape[batch_dim] != len(sizes):
        raise ShapeError(f"pack_padded_sequence: expected input of shape {'(B, T, *)' if batch_first else '(T, B, *)'}"
                         f" with B = len(lengths) = {len(sizes)}, got {tuple(input.shape)}")
    if not sizes:
        raise ValueError("pack_padded_sequence: cannot pack an empty batch (lengths is empty)")
    if any(n <= 0 for n in sizes):
        raise ValueError("pack_padded_sequence: length of all samples has to be greater than 0, but found an "
                         f"element in 'lengths' that is <= 0: {sizes}")
    if max(sizes) > input.shape[1 - batch_dim]:
        raise ValueError(f"pack_padded_sequence: a length {max(sizes)} exceeds the padded sequence length "
                         f"{input.shape[1 - batch_dim]} of input {tuple(input.shape)}")
    if enforce_sorted:
        if any(a < b for a, b in zip(sizes, sizes[1:])):
            raise ValueError("pack_padded_sequence: `lengths` array must be sorted in decreasing order when "
                             "`enforce_sorted` is True. You can pass `enforce_sorted=False` to pack_padded_sequence "
                             "and/or pack_sequence to sidestep this requirement if you do not need ONNX "
                             f"exportability; got lengths {sizes}")
        sorted_indices = None
        ordered = input
    else:
        order = sorted(range(len(sizes)), key=lambda b: -sizes[b])  # stable: ties keep the caller's order
        sorted_indices = tensor(order, dtype=int64, device=input.device)
        ordered = input.index_select(batch_dim, sorted_indices)
        sizes = [sizes[b] for b in order]
    time_major = ordered.transpose(0, 1) if batch_first else ordered
    batch_sizes = _batch_sizes(sizes)
    data = F.cat([time_major[t, :count] for t, count in enumerate(batch_sizes)], 0)
    return PackedSequence(data, tensor(batch_sizes, dtype=int64), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """The inverse of ``pack_padded_sequence``: ``(padded, lengths)`` with the caller's batch order restored;
    ``total_length`` pads the time dimension further (it may not be shorter than the longest sequence)."""
    batch_sizes = [int(n) for n in sequence.batch_sizes.tolist()]
    data = sequence.data
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {steps}")
    else:
        total_length = steps
    batch = batch_sizes[0] if batch_sizes else 0
    feature = tuple(data.shape[1:])
    rows, offset = [], 0
    for count in batch_sizes:
        step = data[offset:offset + count]
        offset += count
        if count < batch:
            step = F.cat([step, F.full((batch - count,) + feature, padding_value, dtype=data.dtype,
                                       device=data.device)], 0)
        rows.append(step)
    rows += [F.full((batch,) + feature, padding_value, dtype=data.dtype, device=data.device)] * (total_length - steps)
    padded = F.stack(rows, 0) if rows else F.full((0, batch) + feature, padding_value, dtype=data.dtype,
                                                  device=data.device)
    lengths = [sum(1 for n in batch_sizes if n > b) for b in range(batch)]
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = [lengths[i] for i in sequence.unsorted_indices.tolist()]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, tensor(lengths, dtype=int64)


def pad_sequence(sequences: Tensor | Sequence[Tensor], batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences of shapes ``(L_i, *)`` into ``(max L, B, *)`` (``(B, max L, *)`` with ``batch_first``),
    padding each on the ``padding_side`` ('right' or 'left') with ``padding_value``."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"pad_sequence: padding_side must be 'left' or 'right', got {padding_side!r}")
    sequences = list(sequences.unbind(0)) if isinstance(sequences, Tensor) else list(sequences)
    if not sequences:
        raise ValueError("pad_sequence: received an empty list of sequences")
    trailing = tuple(sequences[0].shape[1:])
    for s in sequences:
        if s.ndim < 1 or tuple(s.shape[1:]) != trailing:
            raise ShapeError(f"pad_sequence: every sequence must have shape (L, *{trailing}), got "
                             f"{[tuple(q.shape) for q in sequences]}")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        missing = longest - s.shape[0]
        if missing:
            fill = F.full((missing,) + trailing, padding_value, dtype=s.dtype, device=s.device)
            s = F.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return F.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor, batch_first: bool = False) -> list[Tensor]:
    """The list of sequences ``pad_sequence`` stacked, each cut to its length."""
    time_major = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [time_major[b, :n] for b, n in enumerate(_lengths_list(lengths))]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences of shapes ``(L_i, *)`` (decreasing lengths unless ``enforce_sorted=False``)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences a ``PackedSequence`` holds, in the caller's order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


def packed_steps(batch_sizes: Iterable[int]) -> list[tuple[int, int]]:
    """``(offset, count)`` of each time step's rows in a packed ``data``."""
    steps, offset = [], 0
    for count in batch_sizes:
        steps.append((offset, count))
        offset += count
    return steps
