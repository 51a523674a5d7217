"""The elementwise ops of complex numbers: ``angle``, ``sgn``, ``conj_physical``, ``complex`` and ``polar``.

Composites, so that every backend runs them on real tensors; a backend computes them on complex tensors with its
own kernels (the CPU's are NumPy's), or else through ``real``/``imag``/``view_as_complex``. Gradients follow
PyTorch's convention (conjugate Wirtinger derivatives). A real input fed into a complex output gets a complex
gradient here, whose real part the autograd engine keeps: so ``complex``'s gradient for ``imag`` is
``grad * -1j``, whose real part is ``imag(grad)``.
"""
from __future__ import annotations

import math

import numpy as np

from ...schema import rules
from ...schema.dtypes import SCALAR_TYPE_NAMES, get_default_dtype
from ...schema.errors import DtypeError, describe
from ...schema.meta import elementwise as broadcast_meta
from ...schema import defop
from ..namespace import F
from .complex_support import conj, is_complex
from .opmath import widened


# -- angle and sgn: the direction of a number --------------------------------------------------------------

def _angle(x):
    """Real inputs: pi for negatives, 0 otherwise (NaN stays NaN), as PyTorch."""
    if is_complex(x):
        return F.atan2(F.imag(x), F.real(x))
    x = x if x.dtype.is_floating_point else F.to_dtype(x, get_default_dtype())
    return F.where(F.isnan(x), x, F.where(F.lt(x, 0), F.full_like(x, math.pi), F.zeros_like(x)))


def _angle_reference(x):
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return np.angle(x)
    x = x if x.dtype.kind == "f" else x.astype(get_default_dtype().name)
    return np.where(np.isnan(x), x, np.where(x < 0, np.pi, 0)).astype(x.dtype)


def _angle_derivative(grad, input):
    """d angle = Im(dz / z): PyTorch's ``grad * i z / |z|^2``, 0 at z = 0; a real input's angle is flat."""
    if not is_complex(input):
        return F.zeros_like(input, dtype=grad.dtype)
    magnitude = F.abs(input)
    slope = F.mul(F.div(input, F.mul(magnitude, magnitude)), 1j)
    return F.where(F.eq(input, 0), F.zeros_like(slope), F.mul(grad, slope))


defop("angle(Tensor input)", "elementwise", kind="composite", promotion=rules.to_real, dtypes="numeric+complex",
      meta=broadcast_meta("angle"), composite=_angle, reference=_angle_reference, derivative=_angle_derivative,
      doc="the argument of each complex number, in (-pi, pi]; for real numbers pi where negative, else 0")


def _sgn(x):
    if not is_complex(x):
        return F.sign(x)
    magnitude = F.abs(x)
    return F.where(F.eq(magnitude, 0), F.zeros_like(x), F.div(x, magnitude))


def _sgn_reference(x):
    x = np.asarray(x)
    if x.dtype.kind != "c":
        return np.sign(x)
    magnitude = np.abs(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        direction = (x.real / magnitude + 1j * (x.imag / magnitude)).astype(x.dtype)
    return np.where(magnitude == 0, 0, direction).astype(x.dtype)


def _sgn_derivative(grad, input, result):
    """PyTorch's: (grad - sgn^2 conj(grad)) / (2 |z|), 0 at z = 0; real inputs take sign's zero gradient."""
    if not is_complex(input):
        return F.zeros_like(grad)
    magnitude = F.abs(input)
    slope = F.div(F.sub(grad, F.mul(F.mul(result, result), conj(grad))), F.mul(magnitude, 2))
    return F.where(F.eq(magnitude, 0), F.zeros_like(slope), slope)


defop("sgn(Tensor input)", "elementwise", kind="composite", promotion=rules.same, dtypes="numeric+complex",
      meta=broadcast_meta("sgn"), composite=_sgn, reference=_sgn_reference, derivative=_sgn_derivative,
      inplace=True, doc="z / |z| (0 at 0); sign for real numbers")


# -- conjugation ----------------------------------------------------------------------------------------------

def _conj_physical(x):
    if not is_complex(x):
        return F.clone(x)
    return F.complex(F.real(x), F.neg(F.imag(x)))


def _conj_physical_reference(x):
    x = np.asarray(x)
    return np.conjugate(x) if x.dtype.kind == "c" else x.copy()


defop("conj_physical(Tensor input)", "elementwise", kind="composite", promotion=rules.same,
      dtypes="all+complex", meta=broadcast_meta("conj_physical"), composite=_conj_physical,
      reference=_conj_physical_reference, derivative=lambda grad: conj(grad), inplace=True, jvp="linear",
      doc="the complex conjugate, in new memory (a copy of real tensors)")


# -- building complex numbers from two real ones ----------------------------------------------------------------

def _components_promotion(rt, op, args):
    """PyTorch's rule for complex and polar: two tensors of one floating dtype, answered in its complex type."""
    first, second = (args[p.name] for p in op.params)
    for value in (first, second):
        if not hasattr(value, "_dtype"):
            raise DtypeError(f"{op.name}(): argument '{op.params[0].name}' must be Tensor, not "
                             f"{type(value).__name__}")
    if not (first._dtype.is_floating_point and second._dtype.is_floating_point):
        raise DtypeError(f"{op.name}: Expected both inputs to be Half, Float or Double tensors but got "
                         f"{SCALAR_TYPE_NAMES[first._dtype]} and {SCALAR_TYPE_NAMES[second._dtype]} "
                         f"({describe(first)}, {describe(second)})")
    if first._dtype is not second._dtype:
        raise DtypeError(f"{op.name}: Expected object of scalar type {SCALAR_TYPE_NAMES[first._dtype]} but got "
                         f"scalar type {SCALAR_TYPE_NAMES[second._dtype]} for second argument "
                         f"({describe(first)}, {describe(second)})")
    return first._dtype, first._dtype.to_complex()


def _complex(real, imag):
    """In float32 for half precision (its complex type is complex64)."""
    real, imag = F.broadcast_tensors([widened(real), widened(imag)])
    return F.view_as_complex(F.stack([real, imag], -1))


def _complex_reference(real, imag):
    real, imag = np.broadcast_arrays(np.asarray(real), np.asarray(imag))
    out = np.empty(real.shape, np.result_type(real.dtype, np.complex64))
    out.real, out.imag = real, imag
    return out


defop("complex(Tensor real, Tensor imag)", "elementwise", kind="composite", promotion=_components_promotion,
      dtypes="float", meta=broadcast_meta("complex"), composite=_complex, reference=_complex_reference,
      method=False, derivative={"real": lambda grad: grad, "imag": lambda grad: F.mul(grad, -1j)}, jvp="derived",
      doc="real + imag * 1j, exactly (infinite parts included), from two tensors of one floating dtype")


def _polar(abs, angle):
    """In float32 for half precision (its complex type is complex64)."""
    abs, angle = widened(abs), widened(angle)
    return F.complex(F.mul(abs, F.cos(angle)), F.mul(abs, F.sin(angle)))


def _polar_reference(abs, angle):
    abs, angle = np.asarray(abs, np.result_type(abs, np.float32)), np.asarray(angle, np.result_type(angle, np.float32))
    return _complex_reference(abs * np.cos(angle), abs * np.sin(angle))


def _polar_abs_derivative(grad, result):
    """PyTorch's real(conj(grad) sgn(result)): its real part is what the engine keeps."""
    return F.mul(grad, conj(F.sgn(result)))


def _polar_angle_derivative(grad, result):
    """d result / d angle = i result: real(conj(grad) i result), the real part of grad conj(i result)."""
    return F.mul(F.mul(grad, conj(result)), -1j)


defop("polar(Tensor abs, Tensor angle)", "elementwise", kind="composite", promotion=_components_promotion,
      dtypes="float", meta=broadcast_meta("polar"), composite=_polar, reference=_polar_reference, method=False,
      derivative={"abs": _polar_abs_derivative, "angle": _polar_angle_derivative}, jvp="derived",
      grad_domain={"abs": {"low": 0.1, "high": 5.0}},  # PyTorch's derivative takes sgn(result): abs > 0
      doc="abs * (cos(angle) + i sin(angle)), from two tensors of one floating dtype")
