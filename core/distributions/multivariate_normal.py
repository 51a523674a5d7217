"""MultivariateNormal(loc, covariance_matrix= | precision_matrix= | scale_tril=)."""
from __future__ import annotations

import math

from ..dispatch.schema.meta import broadcast_shapes
from ..dispatch.ops import F
from ..functions import randn
from ..tensor import Size, Tensor
from . import constraints
from ._linalg import cholesky, diagonal, solve_triangular
from .distribution import Distribution
from .utils import lazy_property

__all__ = ["MultivariateNormal"]


def _precision_to_scale_tril(precision: Tensor) -> Tensor:
    """The lower Cholesky factor of the inverse of ``precision``, without forming the inverse:
    with J the flip, flip(P) = Lf Lfᵀ gives P⁻¹ = (J Lf⁻ᵀ J)(J Lf⁻ᵀ J)ᵀ, and J Lf⁻ᵀ J is lower-triangular."""
    flipped = cholesky(precision.flip((-2, -1)))
    upper = flipped.flip((-2, -1)).mT  # J Lf J transposed: lower-triangular, its inverse is the factor
    eye = F.eye(precision.shape[-1], dtype=precision.dtype, device=precision.device)
    return solve_triangular(upper, eye.expand(tuple(upper.shape)), upper=False)


def batch_mahalanobis(scale_tril: Tensor, diff: Tensor) -> Tensor:
    """‖L⁻¹ diff‖² over the last dim, for scale_tril L, batch dims broadcast."""
    shape = broadcast_shapes("MultivariateNormal", tuple(scale_tril.shape[:-2]), tuple(diff.shape[:-1]))
    n = diff.shape[-1]
    solved = solve_triangular(scale_tril.expand(shape + (n, n)), diff.expand(shape + (n,)).unsqueeze(-1), upper=False)
    return (solved.squeeze(-1) ** 2).sum(-1)


class MultivariateNormal(Distribution):
    """The Gaussian on Rⁿ; give exactly one of covariance_matrix, precision_matrix or scale_tril."""
    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None) -> None:
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError("MultivariateNormal: pass exactly one of covariance_matrix, precision_matrix or "
                             "scale_tril")
        matrix = given[0]
        if loc.ndim < 1:
            raise ValueError(f"MultivariateNormal: loc must be at least one-dimensional, got shape {tuple(loc.shape)}")
        if matrix.ndim < 2 or matrix.shape[-1] != matrix.shape[-2]:
            raise ValueError(f"MultivariateNormal: the matrix must be (a batch of) square matrices, got shape "
                             f"{tuple(matrix.shape)}")
        if matrix.shape[-1] != loc.shape[-1]:
            raise ValueError(f"MultivariateNormal: loc of shape {tuple(loc.shape)} and matrix of shape "
                             f"{tuple(matrix.shape)} disagree on the event size")
        n = loc.shape[-1]
        batch_shape = broadcast_shapes("MultivariateNormal", tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))
        if scale_tril is not None:
            self.scale_tril = scale_tril.expand(batch_shape + (n, n))
        elif covariance_matrix is not None:
            self.covariance_matrix = covariance_matrix.expand(batch_shape + (n, n))
        else:
            self.precision_matrix = precision_matrix.expand(batch_shape + (n, n))
        self.loc = loc.expand(batch_shape + (n,))
        super().__init__(Size(batch_shape), Size((n,)), validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_parameters(MultivariateNormal, batch_shape, _instance,
                                      ("loc", "covariance_matrix", "precision_matrix", "scale_tril"))
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        return new

    @lazy_property
    def scale_tril(self):
        n = self._event_shape[0]
        return self._unbroadcasted_scale_tril.expand(tuple(self._batch_shape) + (n, n))

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        n = self._event_shape[0]
        return (L @ L.mT).expand(tuple(self._batch_shape) + (n, n))

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        n = self._event_shape[0]
        eye = F.eye(n, dtype=L.dtype, device=L.device)
        inverse = solve_triangular(L, eye.expand(tuple(L.shape)), upper=False)  # L⁻¹
        return (inverse.mT @ inverse).expand(tuple(self._batch_shape) + (n, n))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        L = self._unbroadcasted_scale_tril
        return (L ** 2).sum(-1).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        noise = randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (self._unbroadcasted_scale_tril @ noise.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self) -> Tensor:
        return diagonal(self._unbroadcasted_scale_tril).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(tuple(self._batch_shape)) if len(self._batch_shape) else h
