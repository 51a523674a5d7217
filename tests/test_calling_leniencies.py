"""PyTorch's everyday leniencies, checked against PyTorch itself: what it accepts, Ember accepts with the same
result, and what it refuses, Ember refuses with the same exception type.

- ``x == None`` is False and ``x != None`` True (a comparison with what no tensor compares to falls back to
  identity), while ``x < None`` raises TypeError;
- NumPy's keyword names (``axis``, ``keepdims``, ``x``, ``a``, ``x1``, ``x2``) for every op's own
  (``ember.dispatch.schema.binding.NUMPY_KEYWORDS``), on the ops of the schema that take the parameter;
- ``x[index] = value`` drops the value's leading size-1 dims (a (1, 4) value fills a (4,) selection), with
  gradients back to the value in its own shape;
- a NumPy scalar operand (``np.float32(2.5) * x``) is its Python number, weak in promotion (a NumPy bool is
  read as a float, as PyTorch reads it).
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.dispatch import OPS
from ember.dispatch.schema.binding import NUMPY_KEYWORDS

torch = pytest.importorskip("torch")

DATA = np.arange(1, 13, dtype=np.float32).reshape(3, 4) / 4


def _both(call):
    """``call(framework, tensor)`` on Ember and PyTorch: (ember result or exception, torch result or exception)."""
    results = []
    for framework in (ember, torch):
        try:
            results.append(call(framework, framework.tensor(DATA)))
        except Exception as exc:  # noqa: BLE001  (the exception type is what is compared)
            results.append(exc)
    return results


def _same(ours, theirs) -> None:
    if isinstance(theirs, Exception):
        assert isinstance(ours, type(theirs)) or (isinstance(theirs, RuntimeError) and isinstance(ours, Exception)), \
            f"PyTorch raises {type(theirs).__name__}; Ember gave {ours!r}"
        return
    assert not isinstance(ours, Exception), f"PyTorch accepts the call; Ember raises {ours!r}"
    if isinstance(theirs, torch.Tensor):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    else:
        assert ours == theirs


@pytest.mark.parametrize("other", [None, "text", object()], ids=["None", "str", "object"])
@pytest.mark.parametrize("operator", ["==", "!=", "<", ">="])
def test_comparisons_with_what_no_tensor_compares_to(operator, other):
    compare = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
               ">=": lambda a, b: a >= b}[operator]
    ours, theirs = _both(lambda framework, t: compare(t, other))
    _same(ours, theirs)


def _ops_with(param: str) -> list[str]:
    """Schema ops that take ``param`` and a tensor first, and that PyTorch has as a function too."""
    return sorted(name for name, op in OPS.items()
                  if param in op.param_index and op.params[0].type == "Tensor" and op.kind != "inplace"
                  and hasattr(torch, name) and not name.endswith("_"))


#: keyword -> (ops to try it on, how to call one: framework, tensor, op name, keyword -> result)
_UNARY_DIM = ("sum", "mean", "prod", "cumsum", "cumprod", "softmax", "log_softmax", "argmax", "amax", "amin",
              "logsumexp", "std", "var", "all", "any", "flip", "squeeze", "unsqueeze", "nansum", "count_nonzero")


def _dim_call(framework, t, name, keyword):
    function = getattr(framework, name)
    if name == "flip":
        return function(t, **{keyword: (0,)})
    if name == "unsqueeze":
        return function(t, **{keyword: 1})
    return function(t, **{keyword: 0})


@pytest.mark.parametrize("name", [n for n in _UNARY_DIM if n in _ops_with("dim")])
@pytest.mark.parametrize("keyword", ["dim", "axis"])
def test_numpy_axis_for_dim(name, keyword):
    _same(*_both(lambda framework, t: _dim_call(framework, t, name, keyword)))


@pytest.mark.parametrize("name", [n for n in ("sum", "mean", "amax", "amin", "logsumexp", "std", "var", "prod", "all",
                                              "any", "nansum", "argmax") if n in _ops_with("keepdim")])
def test_numpy_keepdims_for_keepdim(name):
    _same(*_both(lambda framework, t: getattr(framework, name)(t, 1, keepdims=True)))


@pytest.mark.parametrize("keyword", ["x", "a", "x1"])
@pytest.mark.parametrize("name", ["abs", "exp", "neg", "sqrt"])
def test_numpy_names_for_input(name, keyword):
    _same(*_both(lambda framework, t: getattr(framework, name)(**{keyword: t})))


def test_numpy_names_for_other_and_the_table_is_pytorchs():
    _same(*_both(lambda framework, t: framework.add(x1=t, x2=t)))
    _same(*_both(lambda framework, t: t.sum(axis=1, keepdims=True)))
    # a name given twice, by both spellings, is refused by both
    _same(*_both(lambda framework, t: framework.sum(t, dim=0, axis=1)))
    assert set(NUMPY_KEYWORDS.values()) <= {"dim", "keepdim", "input", "other"}


SETITEM_CASES = [
    ((3, 4), 1, (1, 4)), ((3, 4), 1, (1, 1, 4)), ((3, 4), (slice(None), 1), (1, 3)), ((3, 4), 0, (1, 1)),
    ((2, 3, 4), (0, slice(1, 3)), (1, 2, 4)), ((3, 4), [0, 2], (1, 2, 4)), ((3, 4), 1, (2, 4)),
    ((3, 4), 1, (1, 5)), ((1, 3), 0, (1, 3)),
]


@pytest.mark.parametrize("shape, index, value_shape", SETITEM_CASES,
                         ids=[f"{s}[{i}]={v}" for s, i, v in SETITEM_CASES])
def test_setitem_drops_the_values_leading_ones(shape, index, value_shape):
    size = int(np.prod(value_shape))
    value = np.arange(1, size + 1, dtype=np.float32).reshape(value_shape)

    def assign(framework, _):
        given = framework.tensor(value, requires_grad=True)
        written = framework.zeros(*shape).requires_grad_(True) * 1
        written[index] = given * 2
        (written * framework.tensor(np.arange(np.prod(shape), dtype=np.float32).reshape(shape))).sum().backward()
        return written.detach().numpy(), given.grad.numpy()

    ours, theirs = _both(assign)
    if isinstance(theirs, Exception):
        assert isinstance(ours, Exception), f"PyTorch refuses this assignment ({theirs}); Ember accepted it"
        return
    assert not isinstance(ours, Exception), f"PyTorch accepts this assignment; Ember raises {ours!r}"
    np.testing.assert_array_equal(ours[0], theirs[0])
    assert ours[1].shape == theirs[1].shape
    np.testing.assert_array_equal(ours[1], theirs[1])


NUMPY_SCALARS = [np.float32(2.5), np.float64(2.5), np.int64(3), np.int8(3), np.bool_(True), np.float16(1.5)]


@pytest.mark.parametrize("dtype", ["float16", "float32", "int32"])
@pytest.mark.parametrize("scalar", NUMPY_SCALARS, ids=[type(s).__name__ for s in NUMPY_SCALARS])
def test_numpy_scalars_stand_for_their_python_numbers(scalar, dtype):
    """``np.float32(2.5) * x``, ``x + np.int64(3)``: a NumPy scalar is a Python number to PyTorch (weak in
    promotion), from either side of the operator and as a function argument."""
    def combine(framework, t):
        t = t.to(getattr(framework, dtype))
        out = [scalar * t, t + scalar, framework.sub(t, scalar), t.mul(scalar)]
        return [(str(r.dtype).rsplit(".", 1)[-1], r.float().numpy()) for r in out]

    ours, theirs = _both(combine)
    if isinstance(theirs, Exception):
        assert isinstance(ours, Exception), f"PyTorch refuses ({theirs}); Ember accepted"
        return
    assert not isinstance(ours, Exception), f"PyTorch accepts; Ember raises {ours!r}"
    for (our_dtype, our_values), (their_dtype, their_values) in zip(ours, theirs):
        assert our_dtype == their_dtype
        np.testing.assert_allclose(our_values, their_values, rtol=1e-3)


#: operator calls whose other operand no tensor takes: PyTorch's operators answer NotImplemented, so Python tries
#: the other operand (a NumPy array computes it, with the tensor as an array) or falls back to identity (==, !=)
OPERATOR_CASES = {
    "t + array": lambda t: t + np.array([1.0, 2.0, 3.0, 4.0]),
    "t * int array": lambda t: t * np.array([1, 2, 3, 4], dtype=np.int32),
    "t ** array": lambda t: t ** np.array([2.0, 2.0, 2.0, 2.0]),
    "t + None": lambda t: t + None,
    "None + t": lambda t: None + t,
    "t + str": lambda t: t + "a",
    "t @ list": lambda t: t @ [1.0, 2.0, 3.0, 4.0],
    "t == list": lambda t: t == [1.0, 2.0, 3.0, 4.0],
    "np.float32 - t": lambda t: np.float32(1) - t,
}


@pytest.mark.parametrize("case", OPERATOR_CASES)
def test_operators_answer_not_implemented_as_pytorch(case):
    def outcome(framework, t):
        result = OPERATOR_CASES[case](t)
        if not hasattr(result, "shape"):
            return result
        return type(result).__name__, np.asarray(result).dtype.name, np.asarray(result).tolist()

    ours, theirs = (type(r) if isinstance(r, Exception) else r for r in _both(outcome))
    assert ours == theirs
