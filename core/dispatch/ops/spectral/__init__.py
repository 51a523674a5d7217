"""Spectral ops: the three discrete Fourier transform primitives every complex backend implements
(``transforms``: complex to complex, real to complex, complex to real, as PyTorch's aten ``_fft_*``), on
which ``ember.fft`` and the short-time transforms (``stft``) are composed.
"""
