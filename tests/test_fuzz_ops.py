"""Fuzzed calls of every op of the schema and every Tensor method: each fails cleanly or not at all.

Hypothesis draws shapes, dtypes and attribute values, valid and hostile alike (out-of-range dims, negative and
astronomical sizes, mismatched ranks, None, values of the wrong type). A call may succeed or raise one of
Ember's typed errors (``EmberError``), or a TypeError/ValueError/IndexError/RuntimeError that Ember raises on
purpose (a ``raise`` statement in Ember's code) or that Python raises at the call boundary. It fails the test
when it raises anything else (a raw NumPy error, an AttributeError or implicit IndexError from inside Ember's
code, MemoryError, ...), or when it runs past the per-call deadline.

Seeded and short by default (CI); ``EMBER_HYPOTHESIS_PROFILE=thorough`` draws far more examples at random.
"""
from __future__ import annotations

import contextlib
import dis
import linecache
import os
import re
import resource
import signal
import traceback
import warnings

import pytest
from hypothesis import given, settings, strategies as st

import ember
from ember.conformance import profiles
from ember.dispatch import ALL_DTYPES, OPS, EmberError
from ember.dispatch.ops import F

PROFILE = os.environ.get(profiles.ENV_VAR) or profiles.DEFAULT
EXAMPLES = {"quick": 8, "thorough": 400}
CALL_DEADLINE_S = {"quick": 10.0, "thorough": 30.0}.get(PROFILE, 30.0)  # a call running longer counts as a hang
#: Address space the fuzzed calls may add: an allocation that validation lets through fails as MemoryError
#: (which the test reports) instead of taking the machine's memory.
MEMORY_HEADROOM = 4 << 30

_EMBER_DIRS = tuple(os.path.dirname(m.__file__) + os.sep for m in (ember, ember.backends))
_HERE = os.path.abspath(__file__)
_PURPOSEFUL = (TypeError, ValueError, IndexError, RuntimeError)

profiles.register()
_SETTINGS = settings(settings.get_profile(PROFILE), max_examples=EXAMPLES.get(PROFILE, 400), deadline=None)

# -- values -------------------------------------------------------------------------------------------------
HUGE = [2 ** 62, 10 ** 30, -(2 ** 63), 2 ** 70]
small_int = st.integers(-3, 6)
any_int = st.one_of(small_int, small_int, st.sampled_from(HUGE + [-1, 100]))
shape = st.lists(st.integers(0, 4), max_size=4).map(tuple)
dtypes = st.sampled_from(sorted(ALL_DTYPES, key=lambda d: d.name))


@st.composite
def tensors(draw, index=False):
    size = draw(shape)
    dt = ember.int64 if index else draw(dtypes)
    values = ember.rand(*size) * 12 - 4
    t = values.to(dt)
    if draw(st.booleans()) and t.ndim >= 2:
        t = t.transpose(0, 1)  # non-contiguous
    return t


hostile = st.sampled_from([None, "bogus", [1, "x"], object(), 1.5, float("nan"), 2 ** 70, -1, (), [[1], [2, 3]],
                           ember.float32, "cpu", "nosuch:3", True])
int_list = st.lists(any_int, max_size=5)
by_type = {
    "Tensor": st.one_of(tensors(), tensors(), st.floats(allow_nan=True), small_int),
    "Index": tensors(index=True),
    "Tensor[]": st.lists(tensors(), max_size=3),
    "Index?[]": st.lists(st.one_of(st.none(), tensors(index=True)), max_size=3),
    "Scalar": st.one_of(st.floats(allow_nan=True), any_int, st.booleans()),
    "int": any_int, "dim": st.one_of(small_int, st.sampled_from([-7, 9, 2 ** 62])),
    "int[]": int_list, "dim[]": st.lists(st.integers(-6, 6), max_size=4),
    "bool": st.booleans(), "float": st.one_of(st.floats(allow_nan=True), small_int),
    "str": st.sampled_from(["mean", "sum", "none", "bogus", "", "reflect", "linear", "tanh"]),
    "dtype": dtypes, "device": st.sampled_from(["cpu", "cpu:0", "cpu:3", "nosuch", 0, "opencl:99"]),
    "Generator": st.sampled_from([None, "gen", 3]),
    "Any": st.one_of(small_int, st.floats(), tensors(), st.none(), int_list),
}


def _strategy(type_name: str):
    base = by_type[type_name.rstrip("?")]  # "dim[]?" -> "dim[]", "int?" -> "int"
    if type_name.endswith("?"):
        base = st.one_of(st.none(), base)
    return st.one_of(base, base, base, hostile)  # mostly the right kind, sometimes anything


generic_argument = st.one_of(tensors(), small_int, st.sampled_from(HUGE), st.floats(), int_list, dtypes, hostile,
                             st.none(), st.lists(st.integers(-4, 4), max_size=3).map(tuple))


# -- judging what a call raised ------------------------------------------------------------------------------
class CallHung(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds: float):
    def alarm(signum, frame):
        raise CallHung(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _verdict(exc: BaseException) -> str | None:
    """None for a clean failure, else why this exception is not one."""
    if isinstance(exc, EmberError):
        return None
    if isinstance(exc, CallHung):
        return "hang"
    frames = traceback.extract_tb(exc.__traceback__)
    inner = frames[-1]
    where = os.path.abspath(inner.filename)
    if where == _HERE:  # Python's own argument binding at the call (too many arguments, unknown keyword)
        return None if isinstance(exc, TypeError) else f"{type(exc).__name__} at the call"
    if isinstance(exc, TypeError) and _binding_failed(exc):  # the same, one wrapper down (a forwarding call)
        return None
    if not where.startswith(_EMBER_DIRS):
        return f"raised inside {where} (not Ember's code)"
    if isinstance(exc, _PURPOSEFUL) and not isinstance(exc, (KeyError, MemoryError)) and _raised_by_statement(exc):
        return None
    line = (linecache.getline(inner.filename, inner.lineno) or "").strip()
    return f"implicit {type(exc).__name__} inside Ember ({inner.filename}:{inner.lineno}: {line})"


_BINDING = re.compile(r"\(\) (takes|missing|got an unexpected keyword|got multiple values)")


def _binding_failed(exc: TypeError) -> bool:
    """Whether Python refused the arguments of a call the innermost frame made (a wrapper forwarding them to a
    function that does not take them), read from the instruction that ran and the message Python words."""
    tb = exc.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    ran = next((i for i in dis.get_instructions(tb.tb_frame.f_code) if i.offset == tb.tb_lasti), None)
    return ran is not None and ran.opname.startswith("CALL") and _BINDING.search(str(exc)) is not None


def _raised_by_statement(exc: BaseException) -> bool:
    """Whether the innermost frame raised ``exc`` with a ``raise`` statement, read from the bytecode that ran
    (the source file may have changed since it was imported)."""
    tb = exc.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    ran = next((i for i in dis.get_instructions(tb.tb_frame.f_code) if i.offset == tb.tb_lasti), None)
    return ran is not None and ran.opname in ("RAISE_VARARGS", "RERAISE")


def _describe(value) -> str:
    if isinstance(value, ember.Tensor):
        return f"tensor(shape={tuple(value.shape)}, dtype={value.dtype}, non-contiguous={not value.is_contiguous()})"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_describe(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    return repr(value)


def _call_cleanly(label: str, function, args: list, kwargs: dict) -> None:
    try:
        with warnings.catch_warnings(), _deadline(CALL_DEADLINE_S):
            warnings.simplefilter("ignore")
            function(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - judging every exception is the point
        if isinstance(exc, KeyboardInterrupt):
            raise
        why = _verdict(exc)
        if why is not None:
            call = ", ".join([_describe(a) for a in args] + [f"{k}={_describe(v)}" for k, v in kwargs.items()])
            detail = "".join(traceback.format_exception(exc)[-3:])
            pytest.fail(f"{label}({call}): {why}\n{detail}", pytrace=False)


@pytest.fixture(scope="module", autouse=True)
def bounded_memory():
    """Caps the address space while the fuzz runs, restoring the limit after it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        in_use = int(f.read().split()[0]) * resource.getpagesize()
    cap = in_use + MEMORY_HEADROOM
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


# -- the fuzz tests ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(OPS))
def test_fuzzed_op_calls_fail_cleanly(name):
    op = OPS[name]
    function = getattr(F, name)

    @_SETTINGS
    @given(st.data())
    def run(data):
        args, kwargs = [], {}
        for param in op.params:
            if param.default is not ember.dispatch.schema.REQUIRED and data.draw(st.booleans(), label="default"):
                continue  # leave it at its default
            value = data.draw(_strategy(param.type), label=param.name)
            if param.kw_only or data.draw(st.booleans(), label="as keyword"):
                kwargs[param.name] = value
            elif kwargs:  # a positional argument after keywords is impossible in Python: name it
                kwargs[param.name] = value
            else:
                args.append(value)
        if data.draw(st.integers(0, 9), label="extra") == 0:
            args.append(data.draw(generic_argument, label="one too many"))
        _call_cleanly(f"ember.dispatch.ops.F.{name}", function, args, kwargs)

    run()


_METHODS = sorted(name for name in dir(ember.Tensor) if not name.startswith("_")
                  and callable(getattr(ember.Tensor, name, None)))


@pytest.mark.parametrize("name", _METHODS)
def test_fuzzed_tensor_method_calls_fail_cleanly(name):
    @_SETTINGS
    @given(tensors(), st.lists(generic_argument, max_size=3))
    def run(tensor, args):
        _call_cleanly(f"Tensor.{name}", getattr(tensor, name), args, {})

    run()


@given(tensors(), st.one_of(generic_argument, st.tuples(generic_argument, generic_argument)), generic_argument)
@_SETTINGS
def test_fuzzed_indexing_fails_cleanly(tensor, index, value):
    _call_cleanly("Tensor.__getitem__", tensor.__getitem__, [index], {})
    _call_cleanly("Tensor.__setitem__", tensor.__setitem__, [index, value], {})
