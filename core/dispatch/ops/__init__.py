"""The operator declarations, one module per category, and the callable namespace built from them.

``ember.dispatch.ops.F`` (``namespace``) holds one Python function per declared op; composite
definitions call other ops through it, so they run on any backend.
"""
from __future__ import annotations

from .namespace import F, populate

from . import elementwise, reduction, views, creation, random, sampling, linalg, indexing  # noqa: E402,F401
from . import padding, conv, pooling, softmax, activations, layers, normalization, losses, optim, special  # noqa: E402,F401
from . import closeness, repetition, amp, binomial  # noqa: E402,F401
from . import pointwise_losses, attention, recurrent, ctc  # noqa: E402,F401
from . import trigonometric, rounding, pointwise_math, bitwise  # noqa: E402,F401
from . import order_statistics, quantiles, scans, nan_reductions, membership  # noqa: E402,F401
from . import distance, margin_losses  # noqa: E402,F401
from . import sorting, reorderings, scatter_ops, reshaping, windows, view_copies, strided  # noqa: E402,F401
from . import resampling, max_pooling, embedding_bag  # noqa: E402,F401
from . import diagonals, products, statistics, histograms, sets, grids  # noqa: E402,F401
from . import decompositions, linalg_solvers, linalg_functions, linalg_norms, linalg_householder  # noqa: E402,F401,E501
from . import special_elementary, special_erf, special_gamma, special_bessel, special_polynomials  # noqa: E402,F401,E501

populate()
