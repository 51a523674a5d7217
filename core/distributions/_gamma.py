"""The standard gamma distribution on the device: Marsaglia–Tsang sampling, the regularized lower incomplete
gamma function P(a, x), and the implicit reparameterization gradient of a sample with respect to its shape.

Implicit reparameterization (Figurnov, Mohamed & Mnih, 2018): a sample z of Gamma(a, 1) is tied to its
uniform noise u by P(a, z) = u. Holding u fixed, dz/da = -(∂P/∂a) / (∂P/∂z), and ∂P/∂z is the density.
∂P/∂a comes from the series P(a, x) = x^a e^-x / Γ(a+1) · Σₖ cₖ with c₀ = 1, cₖ = cₖ₋₁ · x / (a + k),
differentiated term by term. The ratio simplifies to

    dz/da = -(z / a) · [(log z - ψ(a + 1)) · S + S'],   S = Σ cₖ,  S' = Σ dcₖ/da,

with no exponentials left, so it is stable for tiny and huge a alike. The series is summed until its
terms are negligible (checked every few terms: one scalar read per check). PyTorch's
``torch._standard_gamma_grad`` uses fitted approximations; the tests compare the two.
"""
from __future__ import annotations

from ..autograd import Function
from ..autograd.grad_mode import no_grad
from ..dispatch.schema.dtypes import bool_
from ..functions import rand, randn, where, zeros
from ..tensor import Tensor
from .utils import eps_of, ones_like, tiny_of, zeros_like

_CHECK_EVERY = 8  # series terms between convergence checks
_MAX_TERMS = 100_000


def _series(a: Tensor, x: Tensor) -> tuple[Tensor, Tensor]:
    """(S, S'): the sums of cₖ and of dcₖ/da above, until every term is below eps of its sum."""
    term, dterm = ones_like(x), zeros_like(x)
    total, dtotal = term, dterm
    eps = eps_of(x.dtype)
    past_peak_at = (x - a).amax().item() if x.numel() else 0.0  # terms grow until k reaches x - a
    for k in range(1, _MAX_TERMS):
        ratio = x / (a + k)
        dterm = (dterm - term / (a + k)) * ratio
        term = term * ratio
        total, dtotal = total + term, dtotal + dterm
        if k % _CHECK_EVERY == 0 and k > past_peak_at:
            small = (term <= total * eps) & (dterm.abs() <= dtotal.abs() * eps)
            if bool(small.all().item()):
                break
    return total, dtotal


def regularized_gamma_lower(a: Tensor, x: Tensor) -> Tensor:
    """P(a, x) = γ(a, x) / Γ(a), for a > 0 and x >= 0 (broadcast tensors of one dtype)."""
    safe = x.clamp(min=tiny_of(x.dtype))
    total, _ = _series(a, safe)
    log_prefix = a * safe.log() - safe - (a + 1).lgamma()
    return where(x > 0, (log_prefix.exp() * total).clamp(max=1.0), zeros_like(x))


def standard_gamma_grad(a: Tensor, z: Tensor) -> Tensor:
    """dz/da for Gamma(a, 1) samples z, holding P(a, z) fixed (see the module docstring)."""
    safe = z.clamp(min=tiny_of(z.dtype))
    total, dtotal = _series(a, safe)
    return -(safe / a) * ((safe.log() - (a + 1).digamma()) * total + dtotal)


def _marsaglia_tsang(shape_param: Tensor, generator=None) -> Tensor:
    """Gamma(a, 1) draws for a >= 1: a vectorized rejection loop, one scalar read per round."""
    d = shape_param - 1.0 / 3.0
    c = (9.0 * d).rsqrt()
    result = zeros_like(shape_param)
    done = zeros(tuple(shape_param.shape), dtype=bool_, device=shape_param.device)
    kwargs = dict(dtype=shape_param.dtype, device=shape_param.device, generator=generator)
    while not bool(done.all().item()):
        normal = randn(tuple(shape_param.shape), **kwargs)
        uniform = rand(tuple(shape_param.shape), **kwargs)
        v = (1.0 + c * normal) ** 3
        positive = v > 0
        log_v = where(positive, v, ones_like(v)).log()
        accept = positive & (uniform.log() < 0.5 * normal * normal + d - d * v + d * log_v)
        fresh = accept & ~done
        result = where(fresh, d * v, result)
        done = done | fresh
    return result


def sample_standard_gamma(concentration: Tensor, generator=None) -> Tensor:
    """Gamma(concentration, 1) draws; a < 1 is boosted: Gamma(a) = Gamma(a + 1) · U^(1/a)."""
    small = concentration < 1.0
    boosted = _marsaglia_tsang(where(small, concentration + 1.0, concentration), generator)
    uniform = rand(tuple(concentration.shape), dtype=concentration.dtype, device=concentration.device,
                   generator=generator)
    scale = (uniform.clamp(min=tiny_of(concentration.dtype)).log() / concentration).exp()
    return where(small, boosted * scale, boosted).clamp(min=tiny_of(concentration.dtype))


class _StandardGamma(Function):
    @staticmethod
    def forward(ctx, concentration):
        sample = sample_standard_gamma(concentration)
        ctx.save_for_backward(concentration, sample)
        return sample

    @staticmethod
    def backward(ctx, grad):
        concentration, sample = ctx.saved_tensors
        with no_grad():
            return grad * standard_gamma_grad(concentration, sample)


def standard_gamma(concentration: Tensor) -> Tensor:
    """Reparameterized Gamma(concentration, 1) samples: differentiable with respect to the concentration."""
    return _StandardGamma.apply(concentration)


class _GammaCdf(Function):
    """P(a, x), with ∂P/∂x the density and ∂P/∂a from the same series."""

    @staticmethod
    def forward(ctx, a, x):
        ctx.save_for_backward(a, x)
        return regularized_gamma_lower(a, x)

    @staticmethod
    def backward(ctx, grad):
        a, x = ctx.saved_tensors
        with no_grad():
            safe = x.clamp(min=tiny_of(x.dtype))
            density = ((a - 1) * safe.log() - safe - a.lgamma()).exp()
            density = where(x > 0, density, zeros_like(density))
            grad_a = -density * standard_gamma_grad(a, x)  # ∂P/∂a = -(dz/da) · density
            grad_a = where(x > 0, grad_a, zeros_like(grad_a))
            return grad * grad_a, grad * density


def gamma_cdf(a: Tensor, x: Tensor) -> Tensor:
    """The regularized lower incomplete gamma function, differentiable in both arguments."""
    return _GammaCdf.apply(a, x)


__all__ = ["standard_gamma", "standard_gamma_grad", "gamma_cdf", "regularized_gamma_lower"]
