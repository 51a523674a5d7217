"""The complex part of the C renderer: C has no complex type that both OpenCL C and CUDA C++ share, so a
complex value is its (real, imaginary) pair as a ``float2``/``double2`` (the layout of NumPy's and CuPy's
complex64/complex128 elements: ``.x`` real, ``.y`` imaginary), and its arithmetic and functions are calls of
small helpers, written once here and emitted in each dialect (only the pair's constructor differs).

The helpers follow the CPU backend's complex kernels (NumPy's loops, and its fixes of them): Smith's division
(no overflow where NumPy has none), ``expm1`` as NumPy writes it, ``log1p`` without cancellation near 0,
integer powers below 100 by repeated squaring as NumPy's (``exp(b log a)`` where those overflow on the way),
and ``sqrt`` with C99's branch cut; infinities and NaN give C99's special values, as PyTorch's do. The
inverse functions (asinh, asin, ...), which only hand-written kernels call, use the textbook logarithm forms
on the half-plane where they do not cancel, keeping the sign of a zero imaginary part (which side of a branch
cut a number lies on), and their asymptotic forms past 2^28, as the ops' complex composites do.
"""
from __future__ import annotations

import cmath
import operator
from string import Template

from ember.dispatch import Instr, UnsupportedProgram, bool_, complex64, complex128, dtype as DType

_PREFIX = {complex64: "ember_cf_", complex128: "ember_cd_"}
_COMPONENT = {complex64: "float", complex128: "double"}
_ARITHMETIC = {"+": "add", "-": "sub", "*": "mul", "/": "div"}
#: |Re z| past which tanh(z) is ±1 in the component type (FreeBSD's ctanh's limits, which NumPy's are)
_TANH_LIMIT = {complex64: "9", complex128: "22"}
#: |z| past which the inverse functions take their asymptotic forms (z^2 would overflow; 2^28, as the composites)
_LARGE = "268435456"

_HELPERS = Template("""
#define ${P}make(re, im) $MAKE
$q $C ${P}add($C a, $C b) { return ${P}make(a.x + b.x, a.y + b.y); }
$q $C ${P}sub($C a, $C b) { return ${P}make(a.x - b.x, a.y - b.y); }
$q $C ${P}mul($C a, $C b) { return ${P}make(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
$q $C ${P}div($C a, $C b) {
    const $T abs_re = fabs(b.x), abs_im = fabs(b.y);
    if (abs_re >= abs_im) {
        if (abs_re == 0 && abs_im == 0) return ${P}make(a.x / abs_re, a.y / abs_re);
        const $T rat = b.y / b.x, scl = ($T)1 / (b.x + b.y * rat);
        return ${P}make((a.x + a.y * rat) * scl, (a.y - a.x * rat) * scl);
    }
    const $T rat = b.x / b.y, scl = ($T)1 / (b.y + b.x * rat);
    return ${P}make((a.x * rat + a.y) * scl, (a.y * rat - a.x) * scl);
}
$q $T ${P}abs($C a) { return hypot(a.x, a.y); }
$q $C ${P}exp($C a) {
    if (a.y == 0) return ${P}make(exp(a.x), a.y);
    if (isinf(a.x) && !isfinite(a.y)) return a.x < 0 ? ${P}make(0, 0) : ${P}make(a.x, a.y - a.y);
    const $T m = exp(a.x);
    return ${P}make(m * cos(a.y), m * sin(a.y));
}
$q $C ${P}expm1($C a) {
    const $T h = sin(a.y / 2);
    return ${P}make(expm1(a.x) * cos(a.y) - 2 * h * h, exp(a.x) * sin(a.y));
}
$q $C ${P}log($C a) { return ${P}make(log(hypot(a.x, a.y)), atan2(a.y, a.x)); }
$q $C ${P}log1p($C a) {
    const $T x = a.x, y = a.y;
    if (hypot(x, y) < ($T)0.5) {  /* log|1 + z| without the cancellation of 1 + x */
        const $T near = log1p(x * (x + 2) + y * y) / 2;
        return ${P}make(near == 0 ? x : near, atan2(y, x + 1));
    }
    return ${P}make(log(hypot(x + 1, y)), atan2(y, x + 1));
}
$q $C ${P}sqrt($C a) {
    const $T x = a.x, y = a.y;
    if (x == 0 && y == 0) return ${P}make(0, y);
    if (isinf(y)) return ${P}make(fabs(y), y);
    if (isnan(x)) return ${P}make(x, (y - y) / (y - y));
    if (isinf(x)) return signbit(x) ? ${P}make(fabs(y - y), copysign(x, y)) : ${P}make(x, copysign(y - y, y));
    if (x >= 0) { const $T t = sqrt((x + hypot(x, y)) * ($T)0.5); return ${P}make(t, y / (2 * t)); }
    const $T t = sqrt((hypot(x, y) - x) * ($T)0.5);
    return ${P}make(fabs(y) / (2 * t), copysign(t, y));
}
$q $C ${P}sinh($C a) {
    return ${P}make(sinh(a.x) * cos(a.y), a.y == 0 ? a.y : cosh(a.x) * sin(a.y));
}
$q $C ${P}cosh($C a) {
    return ${P}make(cosh(a.x) * cos(a.y), a.y == 0 ? copysign(($T)0, a.x) * a.y : sinh(a.x) * sin(a.y));
}
$q $C ${P}sin($C a) { return ${P}make(sin(a.x) * cosh(a.y), cos(a.x) * sinh(a.y)); }
$q $C ${P}cos($C a) { return ${P}make(cos(a.x) * cosh(a.y), -(sin(a.x) * sinh(a.y))); }
$q $C ${P}tanh($C a) {
    const $T x = a.x, y = a.y;
    if (fabs(x) >= ($T)$TANH_LIMIT) {
        const $T e = exp(-fabs(x));
        return ${P}make(copysign(($T)1, x), isfinite(y) ? 4 * sin(y) * cos(y) * e * e : copysign(($T)0, y));
    }
    const $T t = tan(y), beta = 1 + t * t, s = sinh(x), rho = sqrt(1 + s * s), d = 1 + beta * s * s;
    return ${P}make(beta * rho * s / d, t / d);
}
$q $C ${P}tan($C a) { const $C w = ${P}tanh(${P}make(-a.y, a.x)); return ${P}make(w.y, -w.x); }
$q $C ${P}pow($C a, $C b) {
    if (b.x == 0 && b.y == 0) return ${P}make(1, 0);
    if (a.x == 0 && a.y == 0) {
        if (b.x > 0) return ${P}make(0, 0);
        const $T nan = ($T)0 / ($T)0;
        return ${P}make(nan, nan);
    }
    if (b.y == 0 && fabs(b.x) < 100 && b.x == ($T)(int)b.x) {
        int n = (int)fabs(b.x);
        $C result = ${P}make(1, 0), p = a;
        while (1) {
            if (n & 1) result = ${P}mul(result, p);
            n >>= 1;
            if (n == 0) break;
            p = ${P}mul(p, p);
        }
        if (b.x < 0) result = ${P}div(${P}make(1, 0), result);
        if (isfinite(result.x) && isfinite(result.y)) return result;  /* else exp(b log a), which may not overflow */
    }
    return ${P}exp(${P}mul(b, ${P}log(a)));
}
$q $C ${P}asinh($C a) {
    const int flip = signbit(a.x);
    const $C z = flip ? ${P}make(-a.x, -a.y) : a;
    $C w;
    if (!(hypot(z.x, z.y) <= $LARGE)) {  /* log(2z), where z^2 + 1 is z^2 (and infinities and NaN) */
        w = ${P}log(z);
        w.x += ($T)0.6931471805599453;
    } else {
        w = ${P}log(${P}add(z, ${P}sqrt(${P}make(z.x * z.x - z.y * z.y + 1, 2 * z.x * z.y))));
    }
    return flip ? ${P}make(-w.x, -w.y) : w;
}
$q $C ${P}asin($C a) { const $C w = ${P}asinh(${P}make(-a.y, a.x)); return ${P}make(w.y, -w.x); }
$q $C ${P}acos($C a) {
    const $C w = ${P}asin(a);
    return ${P}make(($T)1.5707963267948966 - w.x, -w.y);
}
$q $C ${P}acosh($C a) {
    if (!(hypot(a.x, a.y) <= $LARGE)) {  /* log(2z) */
        $C w = ${P}log(a);
        w.x += ($T)0.6931471805599453;
        return w;
    }
    const $C root = ${P}mul(${P}sqrt(${P}make(a.x + 1, a.y)), ${P}sqrt(${P}make(a.x - 1, a.y)));
    return ${P}log(${P}add(a, root));
}
$q $C ${P}atanh($C a) {
    const $T magnitude = hypot(a.x, a.y);
    if (magnitude > $LARGE) {  /* 1/z (0 with x's sign at infinity) + i pi/2 with y's sign */
        const int finite = isfinite(magnitude);
        const $T re = finite ? a.x / magnitude / magnitude : copysign(($T)0, a.x);
        const $T im = copysign(($T)1.5707963267948966, a.y) - (finite ? a.y / magnitude / magnitude : 0);
        return ${P}make(re, isnan(a.y) ? a.y : im);
    }
    const $C w = ${P}sub(${P}log1p(a), ${P}log1p(${P}make(-a.x, -a.y)));
    return ${P}make(w.x / 2, w.y / 2);
}
$q $C ${P}atan($C a) { const $C w = ${P}atanh(${P}make(-a.y, a.x)); return ${P}make(w.y, -w.x); }
""")

#: the complex functions a kernel may call by name (``function``): the formula's and the inverse ones
FUNCTIONS = ("abs", "exp", "expm1", "log", "log1p", "sqrt", "sinh", "cosh", "sin", "cos", "tanh", "tan", "pow",
             "asinh", "asin", "acos", "acosh", "atanh", "atan")


def helpers(dialect, dt: DType) -> str:
    """The helper functions of complex dtype ``dt`` in ``dialect``, which a kernel's source holds once."""
    make = dialect.complex_literal.format(t=dialect.types[dt.name], re="(re)", im="(im)")
    functions = _HELPERS.substitute(P=_PREFIX[dt], C=dialect.types[dt.name], T=_COMPONENT[dt], q=dialect.qualifier,
                                    MAKE=make, TANH_LIMIT=_TANH_LIMIT[dt], LARGE=_LARGE)
    return dialect.complex_preamble + functions


def helpers_for(dtypes, dialect) -> str:
    """The helpers of every complex dtype among ``dtypes``, float's first."""
    return "".join(helpers(dialect, dt) for dt in (complex64, complex128) if dt in dtypes)


def function(name: str, dt: DType) -> str:
    """The helper computing complex function ``name`` on values of ``dt``."""
    return f"{_PREFIX[dt]}{name}"


def make(dt: DType, re: str, im: str) -> str:
    return f"{_PREFIX[dt]}make({re}, {im})"


def cast(value: str, source: DType, target: DType, type_name) -> str:
    """C converting ``value`` of ``source`` to ``target`` where either is complex: a real value gets imaginary
    part 0, a complex one keeps its real part (to bool: whether either part is non-zero), as NumPy's casts."""
    if source.is_complex and target.is_complex:
        component = _COMPONENT[target]
        return value if source is target else make(target, f"({component})({value}).x", f"({component})({value}).y")
    if target.is_complex:
        return make(target, f"({_COMPONENT[target]})({value})", "0")
    if target is bool_:
        return f"(({value}).x != 0 || ({value}).y != 0)"
    return f"({type_name(target)})(({value}).x)"


def expression(ins: Instr, typed: dict, reals: set, dialect, const) -> str | None:
    """The right-hand side of an instruction that computes on complex values, or None where the real form
    serves (inputs, ``where``). ``typed``: each earlier variable's dtype; ``reals``: the complex constants with
    no imaginary part (a formula's numbers), which scale both parts as a real number does (``log(z) / log(10)``
    of 0 is -inf + 0i, where a complex division would make inf * 0 = NaN of the imaginary part);
    ``const(value, dtype)``: a real constant in the dialect."""
    kind, args, dt = ins.kind, ins.args, ins.dtype
    if kind == "const":
        value = complex(args[0])
        part = dt.to_real()
        return make(dt, const(value.real, part), const(value.imag, part))
    if kind == "cast":
        return cast(args[0], typed[args[0]], dt, lambda t: dialect.types[t.name])
    if kind == "arith":
        symbol, a, b = args
        if symbol in "*/" and b in reals:
            return make(dt, f"{a}.x {symbol} {b}.x", f"{a}.y {symbol} {b}.x")
        if symbol == "*" and a in reals:
            return make(dt, f"{a}.x * {b}.x", f"{a}.x * {b}.y")
        return f"{function(_ARITHMETIC[symbol], dt)}({a}, {b})"
    if kind == "neg":
        return make(dt, f"-({args[0]}).x", f"-({args[0]}).y")
    if kind == "compare":
        a, b = args[1], args[2]
        if args[0] == "==":
            return f"(({a}).x == ({b}).x && ({a}).y == ({b}).y)"
        if args[0] == "!=":
            return f"(({a}).x != ({b}).x || ({a}).y != ({b}).y)"
        raise UnsupportedProgram(f"codegen: complex values compared with {args[0]} (they are not ordered)")
    if kind == "call":
        operand = typed[args[1]]
        if args[0] not in FUNCTIONS:
            raise UnsupportedProgram(f"codegen: {args[0]} of complex values is not defined")
        return f"{function(args[0], operand)}({', '.join(args[1:])})"
    return None


_FOLDED_CALLS = {"exp": cmath.exp, "log": cmath.log, "sqrt": cmath.sqrt, "sin": cmath.sin, "cos": cmath.cos,
                 "tan": cmath.tan, "tanh": cmath.tanh}
_FOLDED_ARITHMETIC = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


def real_constants(instrs: list[Instr]) -> set:
    """The complex variables that hold real numbers known when the program is rendered: a formula's numbers
    and what it computes from them alone (``log(10)``), which ``expression`` multiplies and divides by as a
    real number scales both parts."""
    values: dict = {}
    for ins in instrs:
        args = ins.args
        try:
            if ins.kind == "const":
                values[ins.var] = complex(args[0])
            elif ins.kind == "cast" and args[0] in values:
                values[ins.var] = values[args[0]]
            elif ins.kind == "call" and args[0] in _FOLDED_CALLS and all(a in values for a in args[1:]):
                values[ins.var] = _FOLDED_CALLS[args[0]](*(values[a] for a in args[1:]))
            elif ins.kind == "arith" and args[1] in values and args[2] in values:
                values[ins.var] = _FOLDED_ARITHMETIC[args[0]](values[args[1]], values[args[2]])
        except (ArithmeticError, ValueError):  # (log(0), 1 / 0: not a real number to scale by)
            continue
    return {ins.var for ins in instrs if ins.dtype.is_complex and ins.var in values and values[ins.var].imag == 0}


def touches_complex(ins: Instr, typed: dict) -> bool:
    """Whether an instruction computes on, or converts, complex values."""
    return ins.dtype.is_complex or any(typed[a].is_complex for a in ins.args if isinstance(a, str) and a in typed)


__all__ = ["FUNCTIONS", "cast", "expression", "function", "helpers", "helpers_for", "make", "real_constants",
           "touches_complex"]
