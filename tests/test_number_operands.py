"""Which tensor parameters of a non-elementwise op take a Python number (``OpDef.number_operands``), derived from
PyTorch itself: exactly those where one of the op's overloads in the torch wheel's ``native_functions.yaml``
declares a number (``Scalar``, ``float``, ``int``) at the same position, as ``masked_fill.Scalar`` does for
``value``. A number anywhere else is PyTorch's TypeError, and Ember's."""
from __future__ import annotations

import pytest

import ember
from ember.dispatch import OPS

pytest.importorskip("torch")
from ember.compat.calls.native import overloads  # noqa: E402  (reads the torch wheel)

NUMBER_TYPES = {"Scalar", "float", "int"}


def _torch_number_positions(name: str) -> set[int] | None:
    """The positions where an overload of ``name`` takes a number while another takes a Tensor; None where
    PyTorch has no op of that name."""
    found = [o for o in overloads() if o.name == name and not o.is_out]
    if not found:
        return None
    numbers = {i for o in found for i, a in enumerate(o.args) if a.base_type in NUMBER_TYPES and not a.kw_only}
    tensors = {i for o in found for i, a in enumerate(o.args) if a.base_type == "Tensor" and not a.kw_only}
    return numbers & tensors


def _compared_ops():
    for name, op in sorted(OPS.items()):
        if op.category == "elementwise" or op.category == "custom":
            continue
        positions = _torch_number_positions(name)
        tensor_params = [i for i in op.tensor_positions if op.params[i].type in ("Tensor", "Tensor?")]
        if positions is not None and tensor_params:
            yield name, op, positions, tensor_params


def test_number_operands_are_pytorchs_scalar_overloads():
    wrong = []
    compared = 0
    for name, op, positions, tensor_params in _compared_ops():
        compared += 1
        ours = {i for i in tensor_params if op.params[i].name in op.number_operands}
        theirs = positions & set(tensor_params)
        if ours != theirs:
            wrong.append(f"{name}: Ember takes numbers for {[op.params[i].name for i in sorted(ours)]}, PyTorch "
                         f"for {[op.params[i].name for i in sorted(theirs)]}")
    assert compared > 100, compared
    assert not wrong, "\n".join(wrong)


def test_every_declared_number_operand_is_a_tensor_parameter():
    for name, op in OPS.items():
        params = {p.name: p.type for p in op.params}
        assert all(params.get(n) in ("Tensor", "Tensor?") for n in op.number_operands), name


@pytest.mark.parametrize("call, message", [
    (lambda t: ember.mm(t, 2), r"mm\(\): argument 'mat2' \(position 2\) must be Tensor, not int"),
    (lambda t: ember.scatter_add(t, 1, ember.zeros(2, 1, dtype=ember.int64), 3), r"argument 'src' .* not int"),
    (lambda t: ember.linalg.tensorsolve(ember.rand(1), 0), r"argument 'B' \(position 2\) must be Tensor, not int"),
])
def test_a_number_for_another_tensor_is_a_type_error(call, message):
    with pytest.raises(TypeError, match=message):
        call(ember.rand(2, 3))


def test_declared_number_operands_take_numbers():
    t = ember.rand(2, 3)
    assert ember.masked_fill(t, t > 0.5, 0.0).shape == (2, 3)
    assert ember.scatter(t, 1, ember.zeros(2, 1, dtype=ember.int64), 3.0).shape == (2, 3)
    assert ember.quantile(t, 0.5).shape == ()
    assert ember.normal(0.0, ember.ones(2)).shape == (2,)
