"""``ember.fft``: torch.fft's discrete Fourier transforms and their helpers, under torch.fft's names.

Each is one op of the schema, declared in ``ember.dispatch.ops.spectral`` under ATen's name (``fft_rfft``, ...),
where its checks, its composition from the three transform primitives (``_fft_c2c``, ``_fft_r2c``, ``_fft_c2r``,
which every complex backend implements) and its conformance samples live; this module only names them.
Gradients come from the primitives' derivatives. See docs/fft.md.
"""
from __future__ import annotations

from ..dispatch.ops import F
from ..dispatch.schema import OPS
from ..functions import _with_factory_keywords
from ..tensor import Tensor

__all__ = [
    "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
    "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift", "Tensor",
]

fft = F.fft_fft
ifft = F.fft_ifft
fft2 = F.fft_fft2
ifft2 = F.fft_ifft2
fftn = F.fft_fftn
ifftn = F.fft_ifftn
rfft = F.fft_rfft
irfft = F.fft_irfft
rfft2 = F.fft_rfft2
irfft2 = F.fft_irfft2
rfftn = F.fft_rfftn
irfftn = F.fft_irfftn
hfft = F.fft_hfft
ihfft = F.fft_ihfft
hfft2 = F.fft_hfft2
ihfft2 = F.fft_ihfft2
hfftn = F.fft_hfftn
ihfftn = F.fft_ihfftn
# as every creation function: with requires_grad, layout and pin_memory
fftfreq = _with_factory_keywords(F.fft_fftfreq, OPS["fft_fftfreq"])
rfftfreq = _with_factory_keywords(F.fft_rfftfreq, OPS["fft_rfftfreq"])
fftshift = F.fft_fftshift
ifftshift = F.fft_ifftshift
