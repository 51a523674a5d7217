"""Imports every op module once, in the order their ops were first declared: ``OPS`` keeps this order, and
with it the listings, stubs and conformance test ids made from it. A new module goes at the end.

A module of its own so that the modules named like their family (``elementwise/elementwise.py``) are bound
here, not over the family packages in ``ember.dispatch.ops``.
"""
from .elementwise import elementwise  # noqa: F401
from .reductions import reduction  # noqa: F401
from .shapes import views  # noqa: F401
from .creation import creation  # noqa: F401
from .random import random, sampling  # noqa: F401
from .linalg import linalg  # noqa: F401
from .indexing import indexing  # noqa: F401
from .nn import padding, conv, pooling, softmax  # noqa: F401
from .elementwise import activations  # noqa: F401
from .nn import layers, normalization, losses  # noqa: F401
from .training import optim  # noqa: F401
from .elementwise import special, closeness  # noqa: F401
from .shapes import repetition  # noqa: F401
from .training import amp  # noqa: F401
from .random import binomial  # noqa: F401
from .nn import pointwise_losses, attention, recurrent, ctc  # noqa: F401
from .elementwise import trigonometric, rounding, pointwise_math, bitwise  # noqa: F401
from .reductions import order_statistics, quantiles, scans, nan_reductions  # noqa: F401
from .indexing import membership  # noqa: F401
from .nn import distance, margin_losses  # noqa: F401
from .indexing import sorting  # noqa: F401
from .shapes import reorderings  # noqa: F401
from .indexing import scatter_ops  # noqa: F401
from .shapes import reshaping  # noqa: F401
from .creation import windows  # noqa: F401
from .shapes import view_copies, strided  # noqa: F401
from .nn import resampling, max_pooling, embedding_bag  # noqa: F401
from .shapes import diagonals  # noqa: F401
from .linalg import products  # noqa: F401
from .reductions import statistics, histograms  # noqa: F401
from .indexing import sets  # noqa: F401
from .shapes import grids  # noqa: F401
from .linalg import decompositions, linalg_solvers, linalg_functions, linalg_norms, linalg_householder  # noqa: F401
from .elementwise import special_elementary, special_erf, special_gamma, special_bessel, special_polynomials  # noqa: F401
from .training import multi_tensor  # noqa: F401
from .training import lbfgs  # noqa: F401
from .nn import recurrent_fused  # noqa: F401
from .training import foreach  # noqa: F401
from .shapes import complex_views  # noqa: F401
from .spectral import transforms, fft, frequencies, stft  # noqa: F401
from .elementwise import complex_numbers  # noqa: F401
