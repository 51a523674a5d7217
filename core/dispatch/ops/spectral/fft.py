"""torch.fft's transforms as composite ops (ATen's names: ``fft_fft``, ``fft_rfftn``, ...; ``ember.fft`` gives them
torch.fft's), each composed of the three primitives in ``transforms`` the way torch/_refs/fft.py composes them.

A call is first put in canonical form (``normalize``): the dims wrapped, and the signal size of each (``n`` or
``s``; for the complex-to-real transforms the *output's* sizes). The composite then cuts or zero-pads the input to
those sizes and runs the primitives, whose ``normalization`` applies ``norm`` for the direction of each: so the
derivatives are the primitives' and no scaling op is needed.

The three families: complex to complex (fft, ifft: a real input takes the cheaper two-sided r2c), real to complex
(rfft; ihfft is the conjugate of rfft, scaled as an inverse), complex to real (irfft; hfft is irfft of the
conjugate, scaled as a forward transform).
"""
from __future__ import annotations

from ...schema import Sample, defop
from ...schema.meta import shape
from .._shared import _with_size
from ..namespace import F
from ._shared import (check_norm, check_sizes, complex_out, complex_transform_dtype, normalization, real_in_complex_out,
                      real_out, require_axes, resized, signal_dim, sizes_and_dims)

_ONE_D = "(Tensor input, int? n=None, int dim=-1, str? norm=None)"
_TWO_D = "(Tensor input, int[]? s=None, int[] dim=(-2, -1), str? norm=None)"
_N_D = "(Tensor input, int[]? s=None, int[]? dim=None, str? norm=None)"


# -- canonical form: (sizes, dims) with sizes the signal's (the output's for c2r) -----------------------

def _normalize_one_d(family: str):
    """The checks of a 1-d transform; then ``dim`` wrapped, and ``n`` the input's size there unless given (for
    c2r the output's length: by default 2 (bins - 1))."""
    def normalize(op, args):
        x, n = args["input"], args["n"]
        check_norm(op.name, args["norm"])
        dim = signal_dim(op.name, x, args["dim"])
        if n is None:
            n = 2 * (shape(x)[dim] - 1) if family == "c2r" else shape(x)[dim]
        check_sizes(op.name, (n,))
        args["n"], args["dim"] = n, dim
    return normalize


def _normalize_n_d(family: str):
    """The checks of an n-d transform; then ``s`` and ``dim`` as tuples, one signal size per dim (for c2r the
    output's, by default 2 (bins - 1) in the last dim, also where ``s`` says -1 there)."""
    def normalize(op, args):
        s = (args["s"],) if isinstance(args["s"], int) else args["s"]
        check_norm(op.name, args["norm"])
        sizes, dims = sizes_and_dims(op.name, args["input"], s, args["dim"])
        if family != "c2c":  # r2c and c2r halve the last dim: they need one
            require_axes(op.name, dims)
        if family == "c2r" and (s is None or s[-1] == -1):
            sizes = sizes[:-1] + (2 * (shape(args["input"])[dims[-1]] - 1),)
            check_sizes(op.name, sizes[-1:])
        args["s"], args["dim"] = sizes, dims
    return normalize


# -- output shapes -----------------------------------------------------------------------------------

def _sized(in_shape, dims, sizes):
    for d, size in zip(dims, sizes):
        in_shape = _with_size(in_shape, d, size)
    return in_shape


def _halved(sizes):
    """The non-redundant bins of each size: the last dim keeps n//2 + 1."""
    return tuple(sizes[:-1]) + (sizes[-1] // 2 + 1,)


def _meta_one_d(one_sided: bool):
    def meta(input, n, dim, norm):
        return _with_size(shape(input), dim, n // 2 + 1 if one_sided else n)
    return meta


def _meta_n_d(one_sided: bool):
    def meta(input, s, dim, norm):
        return _sized(shape(input), dim, _halved(s) if one_sided else s)
    return meta


# -- the three families, over canonical sizes and dims ---------------------------------------------------

def c2c(x, sizes, dims, norm, forward: bool):
    """fft and ifft: a real signal through the two-sided r2c (its inverse is the conjugate), a complex one c2c."""
    if not dims:  # a 0-d tensor, or dim=(): nothing to transform
        return F.to_dtype(x, complex_transform_dtype(x.dtype))
    x = resized(x, dims, sizes)
    level = normalization(norm, forward)
    if x.is_complex():
        return F._fft_c2c(x, dims, level, forward)
    out = F._fft_r2c(x, dims, level, False)
    return out if forward else F.conj(out)


def r2c(x, sizes, dims, norm, forward: bool):
    """rfft, and ihfft (forward False): the conjugate of rfft, then the inverse c2c over the other dims."""
    x = resized(x, dims, sizes)
    level = normalization(norm, forward)
    if forward:
        return F._fft_r2c(x, dims, level, True)
    out = F.conj(F._fft_r2c(x, dims[-1:], level, True))
    return F._fft_c2c(out, dims[:-1], level, False) if len(dims) > 1 else out


def c2r(x, sizes, dims, norm, forward: bool):
    """irfft, and hfft (forward True): the forward c2c over the other dims, then irfft of the conjugate."""
    x = resized(x, dims, _halved(sizes))
    level = normalization(norm, forward)
    if not forward:
        return F._fft_c2r(x, dims, level, sizes[-1])
    if len(dims) > 1:
        x = F._fft_c2c(x, dims[:-1], level, True)
    return F._fft_c2r(F.conj(x), dims[-1:], level, sizes[-1])


# -- declarations --------------------------------------------------------------------------------------

_FAMILIES = {  # family -> (promotion, dtypes, composite over canonical sizes and dims)
    "c2c": (complex_out, "float+complex", c2c),
    "r2c": (real_in_complex_out, "float", r2c),
    "c2r": (real_out, "float+complex", c2r),
}


def _reference(name: str):
    """SciPy's transform of the same name and arguments (it keeps single precision, as PyTorch does)."""
    def reference(x, *args, **kwargs):
        import scipy.fft
        return getattr(scipy.fft, name)(x, *args, **kwargs)
    return reference


def _samples(family: str, arity: str):
    def samples(make, dtype):
        if arity == "1":
            yield Sample((make((6,)),), note="even")
            yield Sample((make((3, 7)), 9, 0, "ortho"), note="padded, odd, ortho")
            yield Sample((make((4, 10), noncontiguous=True), 5, -1, "forward"), note="cut, forward")
        else:
            yield Sample((make((3, 4, 5)),), note="every dim" if arity == "n" else "last two dims")
            yield Sample((make((4, 6, 3)), (5, 2), (0, -1), "ortho"), note="padded and cut, ortho")
            yield Sample((make((2, 5, 4), noncontiguous=True), None, (2, 1), "forward"), note="dims reversed")
        if family != "r2c":
            yield Sample((make((0, 4)),) if arity == "1" else (make((0, 4)), None, (1,)), note="empty batch")
    return samples


def _declare(op_name: str, family: str, forward: bool, arity: str):
    """torch.fft's transform of ATen's ``op_name``: of ``family``, in the direction ``forward``, over 1, 2 or n
    dims."""
    name = op_name.removeprefix("fft_")
    promotion, dtypes, transform = _FAMILIES[family]
    one_sided = family == "r2c"
    if arity == "1":
        signature, normalize, meta = _ONE_D, _normalize_one_d(family), _meta_one_d(one_sided)

        def composite(input, n, dim, norm):
            return transform(input, (n,), (dim,), norm, forward)
    else:
        signature, normalize, meta = _TWO_D if arity == "2" else _N_D, _normalize_n_d(family), _meta_n_d(one_sided)

        def composite(input, s, dim, norm):
            return transform(input, s, dim, norm, forward)
    defop(f"{op_name}{signature}", "linalg", kind="composite", promotion=promotion, dtypes=dtypes,
          normalize=normalize, meta=meta, composite=composite, reference=_reference(name),
          samples=_samples(family, arity), method=False,
          tolerances={"float32": (1e-4, 1e-4), "complex64": (1e-4, 1e-4)},
          doc=f"torch.fft.{name}: the {'forward' if forward else 'inverse'} {family} discrete Fourier transform")


_declare("fft_fft", "c2c", forward=True, arity="1")
_declare("fft_ifft", "c2c", forward=False, arity="1")
_declare("fft_fft2", "c2c", forward=True, arity="2")
_declare("fft_ifft2", "c2c", forward=False, arity="2")
_declare("fft_fftn", "c2c", forward=True, arity="n")
_declare("fft_ifftn", "c2c", forward=False, arity="n")
_declare("fft_rfft", "r2c", forward=True, arity="1")
_declare("fft_irfft", "c2r", forward=False, arity="1")
_declare("fft_rfft2", "r2c", forward=True, arity="2")
_declare("fft_irfft2", "c2r", forward=False, arity="2")
_declare("fft_rfftn", "r2c", forward=True, arity="n")
_declare("fft_irfftn", "c2r", forward=False, arity="n")
_declare("fft_hfft", "c2r", forward=True, arity="1")
_declare("fft_ihfft", "r2c", forward=False, arity="1")
_declare("fft_hfft2", "c2r", forward=True, arity="2")
_declare("fft_ihfft2", "r2c", forward=False, arity="2")
_declare("fft_hfftn", "c2r", forward=True, arity="n")
_declare("fft_ihfftn", "r2c", forward=False, arity="n")
