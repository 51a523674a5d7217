"""The CPU's fused recurrent layer kernels: the shared array kernels' time loops (NumPy's GEMMs, one per step),
with each step's gate arithmetic in the numba loops of ``recurrent_loops`` where numba is installed. Half-precision
inputs are widened to float32 by the time loop, so they take the float32 loops; ReLU layers keep the array
expressions (an add and a max; a multiply backward), as does everything without numba.

Chosen by measurement (``python benchmarks/recurrent_kernels.py --kernels``, one thread, a 2-core machine shared
with other jobs, median CPU ms per call of one layer, forward / backward, array expressions against numba loops):

    LSTM float32, L 35, N 20, H 200 (word LM)    12.5 / 19.8  against  8.8 / 14.0
    GRU  float32, L 35, N 20, H 200               9.2 / 14.5  against  5.8 / 11.4
    LSTM float32, L 35, N 20, H 32                1.9 /  3.7  against  0.66 / 0.87
    LSTM float64, L 1, N 97, H 51 (LSTMCell)      0.47 / 0.66 against  0.36 / 0.46

The rest of each call is its GEMMs, which both share.
"""
from __future__ import annotations

import numpy as np

from ember.backends.arraykernels import ArrayLib
from ember.backends.arraykernels import recurrent

from . import fusion, recurrent_loops


def build(lib: ArrayLib) -> dict:
    """The four kernels with numba gate loops; {} without numba (the shared kernels then stay)."""
    if not fusion.numba_available():
        return {}
    array = recurrent.array_steps(lib)
    chosen: dict = {}

    def step_math(mode: str, dtype: np.dtype) -> recurrent.StepMath:
        key = (mode, dtype)
        math = chosen.get(key)
        if math is None:
            math = chosen[key] = _numba_steps(mode, dtype) if dtype.name in ("float32", "float64") and \
                mode != "RNN_RELU" else array[mode]
        return math

    return recurrent.build(lib, step_math)


def _numba_steps(mode: str, dtype: np.dtype) -> recurrent.StepMath:
    """The loops of ``mode`` in ``dtype``, adapted to StepMath's calling convention."""
    loops = recurrent_loops.load()

    def loop(name):
        return getattr(loops, f"{name}_{dtype.name}")

    if mode == "LSTM":
        forward, backward = loop("lstm_forward"), loop("lstm_backward")
        return recurrent.StepMath(
            lambda gi, gh, bias, h_prev, c_prev, ws, h: forward(gi, gh, _zeros_for(gh, bias), c_prev, ws, h),
            lambda dh, dc, ws, gws, h_prev, c_prev, h, dgi, dgh: backward(dh, dc, ws, gws, c_prev, dgi))
    if mode == "GRU":
        forward, backward = loop("gru_forward"), loop("gru_backward")
        return recurrent.StepMath(
            lambda gi, gh, bias, h_prev, c_prev, ws, h: forward(gi, gh, _zeros_for(gh, bias), h_prev, ws, h),
            lambda dh, dc, ws, gws, h_prev, c_prev, h, dgi, dgh: backward(dh, ws, gws, h_prev, dgi, dgh))
    forward, backward = loop("tanh_forward"), loop("tanh_backward")
    return recurrent.StepMath(lambda gi, gh, bias, h_prev, c_prev, ws, h: forward(gi, gh, _zeros_for(gh, bias), h),
                              lambda dh, dc, ws, gws, h_prev, c_prev, h, dgi, dgh: backward(dh, h, dgi))


def _zeros_for(gh: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """The bias, or zeros where the layer has none (one compiled loop for both)."""
    return np.zeros(gh.shape[1], gh.dtype) if bias is None else bias
