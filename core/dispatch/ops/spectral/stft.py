"""The short-time Fourier transform and its inverse, PyTorch's ``stft`` and ``istft``, composed of Ember ops.

stft frames the (padded) signal with ``unfold``, weights each frame by the window (centred in n_fft points) and
transforms the frames with r2c (a real signal and window) or c2c. istft inverts each frame, weights it by the
window again and overlap-adds the frames (``scatter_add``), dividing by the overlap-added squared window: the
envelope, which must not vanish anywhere (PyTorch's "window overlap add min" check). Both are differentiable
through the ops they are made of.
"""
from __future__ import annotations

import warnings

import numpy as np

from ...schema import Sample, defop
from ...schema.errors import ArgumentError, DtypeError, UnsupportedDtypeError, describe
from ...schema.meta import shape
from ..namespace import F
from ._shared import complex_transform_dtype

_STFT_PARAMS = ("(Tensor input, int n_fft, int? hop_length=None, int? win_length=None, Tensor? window=None, "
                "bool center=True, str pad_mode='reflect', bool normalized=False, bool? onesided=None, "
                "bool? return_complex=None, bool? align_to_window=None)")
_ISTFT_PARAMS = ("(Tensor input, int n_fft, int? hop_length=None, int? win_length=None, Tensor? window=None, "
                 "bool center=True, bool normalized=False, bool? onesided=None, int? length=None, "
                 "bool return_complex=False)")

_TOLERANCES = {"float32": (1e-4, 1e-4), "complex64": (1e-4, 1e-4)}


# -- shared: lengths, the padded window, overlap-add ---------------------------------------------------------

def _lengths(n_fft: int, hop_length, win_length) -> tuple[int, int]:
    """PyTorch's defaults: a hop of n_fft // 4, a window of n_fft points."""
    return (n_fft // 4 if hop_length is None else hop_length), (n_fft if win_length is None else win_length)


def _check_window(op_name: str, window, win_length: int, message: str) -> None:
    if window is not None and shape(window) != (win_length,):
        raise ArgumentError(f"{op_name}: {message} ({describe(window)})")


def _centred_window(window, win_length: int, n_fft: int, dtype, device):
    """The window zero-padded on both sides to n_fft points (ones where none is given); None for no window."""
    if window is None:
        if win_length == n_fft:
            return None
        window = F.ones((win_length,), dtype=dtype, device=device)
    left = (n_fft - win_length) // 2
    return _padded(window, [left, n_fft - win_length - left], "constant") if win_length < n_fft else window


def _overlap_add(frames, hop: int, length: int):
    """Frames (batch, count, size) summed into signals of ``length`` points, frame f starting at f hop."""
    batch, count, size = frames.shape
    starts = F.mul(F.arange(count, device=frames.device), hop)
    positions = F.add(F.unsqueeze(starts, 1), F.arange(size, device=frames.device))
    index = F.expand(F.reshape(positions, (1, count * size)), (batch, count * size))
    signal = F.zeros((batch, length), dtype=frames.dtype, device=frames.device)
    return F.scatter_add(signal, 1, index, F.reshape(frames, (batch, count * size)))


def _padded(x, widths: list, mode: str):
    """``pad`` of the last dim; a complex signal's components are padded alike, as pad takes no complex tensors."""
    if x.is_complex():
        return F.view_as_complex(F.pad(F.view_as_real(x), [0, 0, *widths], mode))
    return F.pad(x, widths, mode)


def _in_transform_precision(x):
    """float16 and bfloat16 as float32, the precision they transform in: the frames are weighted there."""
    dtype = complex_transform_dtype(x.dtype)
    wanted = dtype if x.is_complex() else dtype.to_real()
    return x if x.dtype is wanted else F.to_dtype(x, wanted)


def _floating(op_name: str, rt, args) -> None:
    if rt.kind not in ("float", "complex"):
        raise UnsupportedDtypeError(f"{op_name}: expected a tensor of floating point or complex values, got "
                                    f"{describe(args['input'])}")


# -- stft ---------------------------------------------------------------------------------------------------

def _stft_promotion(rt, op, args):
    """Frames transform in the type of the signal and window together; the output is complex, or with
    ``return_complex=False`` its real view's type."""
    _floating(op.name, rt, args)
    out = complex_transform_dtype(rt)
    return rt, (out if args["return_complex"] is not False else out.to_real())


def _stft_normalize(op, args):
    x, window, n_fft = args["input"], args["window"], args["n_fft"]
    is_complex = x.is_complex() or (window is not None and window.is_complex())
    if args["center"] and args["align_to_window"] is not None:
        raise ArgumentError("stft: stft align_to_window should only be set when center = false.")
    if args["return_complex"] is None and not is_complex:
        raise ArgumentError("stft: stft requires the return_complex parameter be given for real inputs, and will "
                            "further require that return_complex=True in a future PyTorch release.")
    if x.ndim not in (1, 2):
        raise ArgumentError(f"stft: expected a 1D or 2D tensor, got {describe(x)}")
    hop, win = _lengths(n_fft, args["hop_length"], args["win_length"])
    length = shape(x)[-1] + (2 * (n_fft // 2) if args["center"] else 0)
    if not 0 < n_fft <= length:
        raise ArgumentError(f"stft: expected 0 < n_fft <= {length}, but got n_fft={n_fft} ({describe(x)})")
    if hop <= 0:
        raise ArgumentError(f"stft: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise ArgumentError(f"stft: expected 0 < win_length <= n_fft, but got win_length={win}")
    _check_window("stft", window, win, f"expected a 1D window tensor of size equal to win_length={win}, but got "
                                       f"window with size {list(shape(window))}")
    if is_complex and args["onesided"]:
        raise ArgumentError("stft: Cannot have onesided output if window or input is complex")


def _stft_frames(length: int, n_fft: int, hop: int, win: int, center: bool, aligned: bool) -> int:
    if not center and aligned:
        return 1 + (length - win) // hop
    return 1 + (length + (2 * (n_fft // 2) if center else 0) - n_fft) // hop


def _stft_meta(input, n_fft, hop_length, win_length, window, center, pad_mode, normalized, onesided,
               return_complex, align_to_window):
    hop, win = _lengths(n_fft, hop_length, win_length)
    is_complex = input.is_complex() or (window is not None and window.is_complex())
    bins = n_fft // 2 + 1 if (not is_complex if onesided is None else onesided) else n_fft
    frames = _stft_frames(shape(input)[-1], n_fft, hop, win, center, bool(align_to_window))
    return shape(input)[:-1] + (bins, frames) + (() if return_complex is not False else (2,))


def _stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
          normalized=False, onesided=None, return_complex=None, align_to_window=None):
    hop, win = _lengths(n_fft, hop_length, win_length)
    x = _in_transform_precision(F.unsqueeze(input, 0) if input.ndim == 1 else input)
    if center:
        x = _padded(x, [n_fft // 2, n_fft // 2], pad_mode)
    window = _centred_window(window if window is None else _in_transform_precision(window), win, n_fft, x.dtype,
                             input.device)
    count = _stft_frames(input.shape[-1], n_fft, hop, win, center, bool(align_to_window))
    if not center and align_to_window:
        x = _padded(x, [(n_fft - win) // 2] * 2, pad_mode)
    frames = F.narrow(F.unfold(x, -1, n_fft, hop), 1, 0, count)  # (batch, frames, n_fft)
    if window is not None:
        frames = F.mul(frames, window)
    level = 1 if normalized else 0
    if frames.is_complex():
        out = F._fft_c2c(frames, (2,), level, True)
    else:
        out = F._fft_r2c(frames, (2,), level, True if onesided is None else onesided)
    out = F.transpose(out, 1, 2)  # (batch, bins, frames)
    if input.ndim == 1:
        out = F.squeeze(out, 0)
    return out if return_complex is not False else F.view_as_real(out)


def _stft_reference(x, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
                    normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """NumPy's frames of the padded signal, windowed, transformed."""
    hop, win = _lengths(n_fft, hop_length, win_length)
    x = x.astype(np.result_type(x, np.float32))
    window = window if window is None else window.astype(np.result_type(window, np.float32))
    if center:
        widths = [(0, 0)] * (x.ndim - 1) + [(n_fft // 2, n_fft // 2)]
        x = np.pad(x, widths, mode={"reflect": "reflect", "constant": "constant", "replicate": "edge",
                                    "circular": "wrap"}[pad_mode])
    left = (n_fft - win) // 2
    full = np.pad(np.ones(win) if window is None else window, (left, n_fft - win - left))
    count = 1 + (x.shape[-1] - n_fft) // hop
    frames = np.stack([x[..., f * hop:f * hop + n_fft] * full for f in range(count)], axis=-2)
    is_complex = np.iscomplexobj(frames)
    transform = np.fft.rfft if (not is_complex if onesided is None else onesided) else np.fft.fft
    out = np.swapaxes(transform(frames, axis=-1, norm="ortho" if normalized else "backward"), -1, -2)
    return out if return_complex is not False else np.stack([out.real, out.imag], axis=-1)


def _stft_samples(make, dtype):
    yield Sample((make((40,)), 8), {"return_complex": True}, note="defaults, 1-d")
    yield Sample((make((2, 33)), 10, 3, 7, make((7,))),
                 {"pad_mode": "constant", "normalized": True, "return_complex": True},
                 note="window shorter than n_fft, odd hop, normalized")
    yield Sample((make((3, 20), noncontiguous=True), 6, 2), {"center": False, "onesided": False,
                                                             "return_complex": False},
                 note="not centred, two-sided, real view")


defop(f"stft{_STFT_PARAMS}", "linalg", kind="composite", promotion=_stft_promotion, dtypes="float+complex",
      normalize=_stft_normalize, meta=_stft_meta, composite=_stft, reference=_stft_reference,
      samples=_stft_samples, tolerances=_TOLERANCES,
      doc="the short-time Fourier transform: the DFT of each window-weighted frame of n_fft points, hop_length "
          "apart; (batch?, bins, frames)")


# -- istft ---------------------------------------------------------------------------------------------------

def _istft_promotion(rt, op, args):
    if not args["input"].is_complex():
        raise DtypeError(f"{op.name}: istft requires a complex-valued input tensor matching the output from stft "
                         f"with return_complex=True, got {describe(args['input'])}")
    return rt, (rt if args["return_complex"] else rt.to_real())


def _istft_normalize(op, args):
    x, n_fft = args["input"], args["n_fft"]
    hop, win = _lengths(n_fft, args["hop_length"], args["win_length"])
    if x.numel() == 0:
        raise ArgumentError(f"istft: input tensor cannot be empty ({describe(x)})")
    if x.ndim not in (2, 3):
        raise ArgumentError(f"istft: expected a tensor with 2 or 3 dimensions of complex values, got {describe(x)}")
    bins = shape(x)[-2]
    onesided = bins != n_fft if args["onesided"] is None else args["onesided"]
    if onesided and bins != n_fft // 2 + 1:
        raise ArgumentError(f"istft: expected the frequency dimension (2nd to the last) of the input tensor to match "
                            f"n_fft / 2 + 1 when onesided=True, but got {bins}")
    if not onesided and bins != n_fft:
        raise ArgumentError(f"istft: expected the frequency dimension (2nd to the last) of the input tensor to match "
                            f"n_fft when onesided=False, but got {bins}")
    if args["return_complex"] and onesided:
        raise ArgumentError("istft: Cannot have onesided output if window or input is complex")
    if not 0 < hop <= win:
        raise ArgumentError(f"istft: expected 0 < hop_length <= win_length, got hop_length={hop}, win_length={win}")
    if not 0 < win <= n_fft:
        raise ArgumentError(f"istft: expected 0 < win_length <= n_fft, got win_length={win}, n_fft={n_fft}")
    _check_window("istft", args["window"], win, "Invalid window shape. window has to be 1D and length of "
                                                "`win_length`")
    window = args["window"]
    if not args["return_complex"] and window is not None and window.is_complex():
        raise DtypeError(f"istft: Complex windows are incompatible with return_complex=False ({describe(window)})")


def _istft_span(n_fft: int, hop: int, frames: int, center: bool, length) -> tuple[int, int, int]:
    """The overlap-added length, and where the signal starts and ends in it (the centring padding cut off)."""
    total = n_fft + hop * (frames - 1)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else total - n_fft // 2 if center else total
    return total, start, end


def _istft_meta(input, n_fft, hop_length, win_length, window, center, normalized, onesided, length,
                return_complex):
    hop, _ = _lengths(n_fft, hop_length, win_length)
    _, start, end = _istft_span(n_fft, hop, shape(input)[-1], center, length)
    return shape(input)[:-2] + (max(end - start, 0),)


def _istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
           onesided=None, length=None, return_complex=False):
    hop, win = _lengths(n_fft, hop_length, win_length)
    x = F.unsqueeze(input, 0) if input.ndim == 2 else input
    frames_count = x.shape[-1]
    window = _centred_window(window, win, n_fft, input.dtype.to_real(), input.device)
    if window is None:
        window = F.ones((n_fft,), dtype=input.dtype.to_real(), device=input.device)
    frames = F.transpose(x, 1, 2)  # (batch, frames, bins)
    level = 1 if normalized else 2
    if return_complex:
        frames = F._fft_c2c(frames, (2,), level, False)
    else:
        if frames.shape[-1] != n_fft // 2 + 1:  # two-sided: the redundant half is not needed
            frames = F.narrow(frames, -1, 0, n_fft // 2 + 1)
        frames = F._fft_c2r(frames, (2,), level, n_fft)
    total, start, end = _istft_span(n_fft, hop, frames_count, center, length)
    signal = _overlap_add(F.mul(frames, window), hop, total)
    envelope = _overlap_add(F.expand(F.unsqueeze(F.mul(window, window), 0), (1, frames_count, n_fft)), hop, total)
    kept = max(min(end, total) - start, 0)
    signal, envelope = F.narrow(signal, 1, start, kept), F.narrow(envelope, 1, start, kept)
    if kept and float(F.amin(F.abs(envelope))) < 1e-11:
        raise ArgumentError(f"istft: window overlap add min: {float(F.amin(F.abs(envelope)))} (the squared window, "
                            f"overlap-added with hop_length={hop}, vanishes somewhere, so the signal cannot be "
                            f"recovered there)")
    signal = F.div(signal, envelope)
    if input.ndim == 2:
        signal = F.squeeze(signal, 0)
    if end > total:
        warnings.warn("istft: The length of signal is shorter than the length parameter. Result is being padded with "
                      "zeros in the tail. Please check your center and hop_length settings.", stacklevel=2)
        signal = _padded(signal, [0, end - total], "constant")
    return signal


def _istft_samples(make, dtype):
    window = make((8,), dtype=dtype.to_real(), low=0.5, high=1.0)  # a real window: return_complex=False takes it
    yield Sample((make((5, 9)), 8), {"window": window}, note="onesided, centred")
    yield Sample((make((2, 6, 7)), 6, 2, 5),
                 {"window": make((5,), low=0.5, high=1.0), "normalized": True, "onesided": False,
                  "return_complex": True},
                 note="two-sided, complex, short window")


defop(f"istft{_ISTFT_PARAMS}", "linalg", kind="composite", promotion=_istft_promotion, dtypes="float+complex",
      normalize=_istft_normalize, meta=_istft_meta, composite=_istft, samples=_istft_samples,
      tolerances=_TOLERANCES,
      doc="the inverse short-time Fourier transform: each frame's inverse DFT, window-weighted and overlap-added, "
          "divided by the overlap-added squared window")
