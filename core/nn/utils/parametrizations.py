"""``nn.utils.parametrizations``: weight and spectral normalization as parametrizations (PyTorch's current API).

``weight_norm`` stores ``original0`` (the magnitude g) and ``original1`` (the direction v);
``spectral_norm`` stores ``original`` and keeps its power-iteration vectors ``_u``, ``_v`` as buffers of the
parametrization, so state_dict keys are ``parametrizations.weight.original0`` / ``.original`` and
``parametrizations.weight.0._u``, as in PyTorch.
"""
from __future__ import annotations

from ...autograd import no_grad
from ...dispatch.ops import F as ops
from ...tensor import Tensor
from ... import linalg
from .. import functional as F
from ..modules.module import Module
from .. import init
from . import parametrize
from ._norms import as_matrix, norm_except_dim, normalized, random_unit, weight_from_g_v

__all__ = ["orthogonal", "weight_norm", "spectral_norm"]

_ORTHOGONAL_MAPS = ("matrix_exp", "cayley", "householder")


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    eye = ops.eye(k, dtype=q.dtype, device=q.device)
    tolerance = 10.0 * n * _eps(q)
    return bool(((q.mT @ q) - eye).abs().le(tolerance + 1e-5 * eye.abs()).all())


def _eps(t: Tensor) -> float:
    from ...type_info import finfo
    return finfo(t.dtype).eps


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of ``a = QR`` (``a`` tall) with R's diagonal made non-negative, so Q is unique."""
    q, r = linalg.qr(a)
    return q * r.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _Orthogonal(Module):
    """Maps an unconstrained matrix to an orthogonal one (columns orthonormal; a wide one through its
    transpose): the exponential or Cayley transform of its skew-symmetric part, or Householder reflectors from
    its strictly lower triangle. With ``use_trivialization`` the result multiplies a stored orthogonal
    ``base``, and assigning a matrix stores it there (the unconstrained tensor restarts at -I)."""

    def __init__(self, weight: Tensor, orthogonal_map: str, *, use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X, n, k = X.mT, k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            X = X.tril()
            if n != k:
                X = ops.cat([X, ops.zeros(tuple(X.shape[:-2]) + (n, n - k), dtype=X.dtype, device=X.device)], -1)
            A = X - X.mT
            if self.orthogonal_map == "matrix_exp":
                Q = linalg.matrix_exp(A)
            else:
                eye = ops.eye(n, dtype=A.dtype, device=A.device)
                Q = linalg.solve(eye - 0.5 * A, eye + 0.5 * A)
            Q = Q[..., :k] if n != k else Q
        else:
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = linalg.householder_product(A, tau) * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if "base" in self._buffers:
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        if tuple(Q.shape) != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of shape "
                             f"{tuple(Q.shape)}.")
        with no_grad():
            original = Q
            n, k = Q.shape[-2], Q.shape[-1]
            transposed = n < k
            if transposed:
                Q, n, k = Q.mT, k, n
            if "base" not in self._buffers:
                if self.orthogonal_map != "householder":
                    raise RuntimeError("It is not possible to assign to the matrix exponential or the Cayley "
                                       "parametrizations when use_trivialization=False.")
                A, tau = ops.geqrf(Q)
                diagonal = A.diagonal(dim1=-2, dim2=-1)
                signs = ops.where(tau == 0.0, -diagonal.sgn(), diagonal.sgn())
                eye = ops.eye(n, k, dtype=A.dtype, device=A.device)
                A = A * (1 - eye) + eye * signs.unsqueeze(-2)
                return A.mT if transposed else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                noise = init.normal_(ops.empty(tuple(Q.shape[:-2]) + (n, n - k), dtype=Q.dtype, device=Q.device))
                Q = _make_orthogonal(ops.cat([Q, noise], -1))
            self.base = Q
            return _negative_identity_like(original)


def _negative_identity_like(t: Tensor) -> Tensor:
    """Zeros of ``t``'s shape with -1 on the main diagonal of each matrix."""
    n, k = t.shape[-2], t.shape[-1]
    eye = ops.eye(n, k, dtype=t.dtype, device=t.device)
    return -ops.expand(eye, tuple(t.shape)).clone()


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Constrain ``module.<name>`` (a matrix or batch of matrices) to be orthogonal (orthonormal columns or rows);
    ``orthogonal_map`` is 'matrix_exp' (default for square), 'cayley' or 'householder' (default otherwise)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{type(module).__name__}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in _ORTHOGONAL_MAPS:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: '
                         f"{orthogonal_map}")
    parametrize.register_parametrization(module, name, _Orthogonal(weight, orthogonal_map,
                                                                   use_trivialization=use_trivialization),
                                         unsafe=True)
    return module


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_from_g_v(weight_g, weight_v, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as ``g * v / ||v||``, the norm taken per slice along ``dim`` (over the
    whole tensor with ``dim=None``)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    """``weight / sigma``, sigma the largest singular value of ``weight`` seen as a matrix (``dim`` first),
    estimated by power iteration: ``n_power_iterations`` steps at each forward in training mode."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got "
                             f"{dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            matrix = as_matrix(weight, self.dim)
            self.register_buffer("_u", random_unit(matrix.shape[0], weight, eps))
            self.register_buffer("_v", random_unit(matrix.shape[1], weight, eps))
            self._power_method(matrix, 15)

    def _power_method(self, matrix: Tensor, n_power_iterations: int) -> None:
        with no_grad():
            matrix = matrix.detach()
            for _ in range(n_power_iterations):
                self._u.copy_(normalized(matrix @ self._v, self.eps))
                self._v.copy_(normalized(matrix.T @ self._u, self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        matrix = as_matrix(weight, self.dim)
        if self.training:
            self._power_method(matrix, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = (u * (matrix @ v)).sum()
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """Reparametrize ``module.<name>`` divided by its spectral norm; ``dim`` defaults to 1 for transposed
    convolutions (whose output channels are dim 1) and 0 otherwise."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{type(module).__name__}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
