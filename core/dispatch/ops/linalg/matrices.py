"""Helpers the linear-algebra declarations share: dtype rules, shape checks and small matrix pieces in Ember ops.

Kept apart from the declarations (ops/decompositions.py and the ops/linalg_*.py modules) so that all read the
same rules: linalg ops take float32/float64 and, where they declare "+complex", complex64/complex128 (as
PyTorch's), a batch of matrices is ``(*, m, n)``, conjugate transposes cost nothing for real matrices, and a
failed factorization is reported through an ``info`` tensor that the checking ops turn into ``LinAlgError``
naming the op and the batch element.
"""
from __future__ import annotations

from ...execution.dispatcher import checking_results, note_value_read
from ...schema.dtypes import float32, float64, int32
from ...schema.errors import DtypeError, EmberError, LinAlgError, ShapeError
from ...schema.meta import shape
from ..elementwise.complex_support import conj
from ..namespace import F


def label(op_name: str) -> str:
    """PyTorch's spelling of an op in messages: ``linalg_cholesky_ex`` -> ``linalg.cholesky_ex``."""
    return op_name.replace("linalg_", "linalg.", 1)


def float_dtype(op_name: str, rt):
    """The input's dtype where it is float32/float64 or complex; DtypeError (a TypeError) otherwise, as PyTorch
    words it. Complex passes through: the dispatcher refuses it for the ops that do not declare "+complex"."""
    if rt is None or rt in (float32, float64) or rt.is_complex:
        return rt
    if not rt.is_floating_point:
        raise DtypeError(f"{op_name}: Expected a floating point tensor as input. Got {rt.name}")
    raise DtypeError(f"{op_name}: Low precision dtypes not supported. Got {rt.name}")


def floating(rt, op, args):
    """Promotion rule: float32/float64 in, the same out."""
    dt = float_dtype(op.name, rt)
    return dt, dt


def floating_real(rt, op, args):
    """Promotion rule: float32/float64 or complex in, the real component dtype out (norms, singular values)."""
    dt = float_dtype(op.name, rt)
    return dt, dt and dt.to_real()


_OUTPUT_KINDS = {"f": lambda dt: dt, "r": lambda dt: dt and dt.to_real(), "c": lambda dt: dt and dt.to_complex(),
                 "i": lambda dt: int32}


def floating_outputs(*kinds: str):
    """Promotion rule for several outputs: "f" an output in the input's dtype, "r" in its real component dtype
    (singular values, Hermitian eigenvalues), "c" in its complex dtype (eig), "i" an int32 one (pivots, info)."""
    def rule(rt, op, args):
        dt = float_dtype(op.name, rt)
        return dt, tuple(_OUTPUT_KINDS[k](dt) for k in kinds)
    rule.__name__ = f"floating_outputs_{''.join(kinds)}"
    return rule


def matrix_shape(op_name: str, a, square: bool = False) -> tuple:
    """``a``'s shape, checked to be a (batch of) matrices, square if asked."""
    s = shape(a)
    if len(s) < 2:
        raise ShapeError(f"{label(op_name)}: The input tensor A must have at least 2 dimensions, got shape {s}")
    if square and s[-1] != s[-2]:
        raise ShapeError(f"{label(op_name)}: A must be batches of square matrices, but they are {s[-2]} by "
                         f"{s[-1]} matrices (shape {s})")
    return s


def wrap_dim(dim: int, ndim: int, name: str) -> int:
    """``dim`` in [0, ndim), or ShapeError naming the op."""
    if not -ndim <= dim < ndim:
        raise ShapeError(f"{name}: dim {dim} is out of range for a tensor of {ndim} dimensions")
    return dim % ndim


def mT(x):
    """The matrix transpose of the last two dims."""
    return F.transpose(x, -1, -2)


def mH(x):
    """The conjugate transpose of the last two dims (mT for real x)."""
    return conj(mT(x))


def real_part(x):
    """The real part of a complex x; x itself when real."""
    return F.real(x) if x.dtype.is_complex else x


def real_gradient(grad, input):
    """A gradient for ``input``: its real part when ``input`` is real and the gradient complex, as PyTorch hands a
    real input of a complex-valued op the real part of the conjugate Wirtinger derivative."""
    return F.real(grad) if grad.dtype.is_complex and not input.dtype.is_complex else grad


def eye_like(x, n: int | None = None):
    """The n x n identity (default: x's last dim) in x's dtype, on x's device."""
    n = x.shape[-1] if n is None else n
    return F.eye(n, dtype=x.dtype, device=x.device)


def diag_of(x):
    """The main diagonal of the last two dims, (*, min(m, n)): a differentiable composite."""
    m, n = x.shape[-2], x.shape[-1]
    k = min(m, n)
    square = F.slice(F.slice(x, -2, 0, k), -1, 0, k)
    return F.sum(F.mul(square, eye_like(x, k)), -1)


def diag_embed(v):
    """Square matrices with ``v`` (*, n) on their diagonals."""
    return F.mul(F.unsqueeze(v, -1), eye_like(v, v.shape[-1]))


def reads_results(op, args) -> None:
    """``normalize`` hook of the composites that read their intermediate results on the host (a factorization's
    info, to raise LinAlgError; the norm that sets matrix_exp's squarings): marks every call data-dependent, so
    that tracers (``ember.compile``, ``ember.onnx``) keep the op whole, its check included, rather than record
    its parts and lose the check."""
    note_value_read()


def check_phase_invariance(name: str, imaginary, vectors: str = "eigenvectors", term: str = "quantity") -> None:
    """PyTorch's check that a loss ignores the phase e^{i phi} of complex eigen/singular vectors: ``imaginary``,
    the imaginary parts that a phase-invariant loss leaves zero, within 1e-2. Reads them (backward only)."""
    with checking_results():
        depends = bool(F.any(F.gt(F.abs(imaginary), 1e-2)).item())
    if depends:
        ending = ("so it is ill-defined." if term == "quantity" else "making it ill-defined.")
        raise EmberError(f"{name}: The {vectors} in the complex case are specified up to multiplication by "
                         f"e^{{i phi}}. The specified loss function depends on this {term}, {ending}")


def check_info(op_name: str, info, what) -> None:
    """Raise LinAlgError, as PyTorch words it, for the first batch element whose ``info`` is non-zero;
    ``what(code)`` says what went wrong."""
    with checking_results():
        codes = info.reshape(-1).tolist() if info.ndim else [info.item()]
    for index, code in enumerate(codes):
        if code:
            where = f" (Batch element {index}):" if info.ndim else ""
            raise LinAlgError(f"{label(op_name)}:{where} {what(code)}")
