"""Issue 23's calls against PyTorch itself: what PyTorch rejects, Ember rejects with an error of the same kind
(an instance of the exception class PyTorch raises); what PyTorch accepts at the edges, Ember accepts alike."""
from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")


def _functional(lib):
    return lib.nn.functional


# Each call takes the library (torch or ember) and makes its own inputs.
REJECTED = {
    "chunk dim": lambda L: L.ones(2, 3).chunk(2, 5),
    "split dim": lambda L: L.ones(2, 3).split(1, 5),
    "select dim": lambda L: L.ones(2, 3).select(5, 0),
    "select index": lambda L: L.ones(2, 3).select(1, 3),
    "unflatten dim": lambda L: L.ones(2, 3).unflatten(5, (1, 2)),
    "size dim": lambda L: L.ones(2, 3).size(5),
    "size of 0-d": lambda L: L.tensor(1.0).size(0),
    "chunk of 0-d": lambda L: L.tensor(1.0).chunk(2, 0),
    "split of 0-d": lambda L: L.tensor(1.0).split(1, 0),
    "select of 0-d": lambda L: L.tensor(1.0).select(0, 0),
    "sum dim": lambda L: L.ones(2, 3).sum(2),
    "ones of 2**62": lambda L: L.ones(2 ** 62),
    "cross_entropy target": lambda L: _functional(L).cross_entropy(L.zeros(4, 5), L.tensor([0, 1, 7, 2])),
    "nll_loss target": lambda L: _functional(L).nll_loss(L.zeros(4, 5), L.tensor([0, 1, -3, 2])),
    "gather rank": lambda L: L.gather(L.ones(2, 3), 1, L.tensor([0, 1])),
    "scatter rank": lambda L: L.zeros(2, 3).scatter(1, L.tensor([0, 1]), L.ones(2, 3)),
    "index_select high": lambda L: L.index_select(L.ones(4, 5), 1, L.tensor([0, 5])),
    "index_select negative": lambda L: L.index_select(L.ones(4, 5), 1, L.tensor([0, -1])),
    "tensor 2**63": lambda L: L.tensor([1, 2 ** 63]),
    "tensor -2**63-1": lambda L: L.tensor(-2 ** 63 - 1),
    "tensor int8 300": lambda L: L.tensor(300, dtype=L.int8),
    "setitem int8 300": lambda L: L.zeros(3, dtype=L.int8).__setitem__(0, 300),
    "setitem uint8 256": lambda L: L.zeros(3, dtype=L.uint8).__setitem__(slice(None), 256),
    "fill_ int32 2**31": lambda L: L.zeros(3, dtype=L.int32).fill_(2 ** 31),
    "full int16 1e10": lambda L: L.full((2,), 1e10, dtype=L.int16),
    "masked_fill int8 -129": lambda L: L.zeros(3, dtype=L.int8).masked_fill(L.tensor([True, False, True]), -129),
    "bce reduction": lambda L: _functional(L).binary_cross_entropy(L.full((3,), 0.5), L.full((3,), 0.5),
                                                                   reduction="bogus"),
    "bce sizes": lambda L: _functional(L).binary_cross_entropy(L.full((3,), 0.5), L.full((3, 1), 0.5)),
    "bce logits sizes": lambda L: _functional(L).binary_cross_entropy_with_logits(L.zeros(3), L.zeros(4)),
    "t of 4-d": lambda L: L.ones(2, 3, 4, 5).t(),
    "bool - bool": lambda L: L.tensor([True]) - L.tensor([False]),
    "bool - 1": lambda L: L.tensor([True]) - 1,
    "int - bool": lambda L: L.tensor([1]) - L.tensor([True]),
    "permute()": lambda L: L.ones(2, 3).permute(),
    "expand()": lambda L: L.ones(2, 3).expand(),
    "kl_div int": lambda L: _functional(L).kl_div(L.tensor([1, 2]), L.tensor([1, 2]), reduction="sum"),
    "kl_div int target": lambda L: _functional(L).kl_div(L.tensor([0.5, 0.5]), L.tensor([1, 2]), reduction="sum"),
    "clamp tensor, number": lambda L: L.clamp(L.zeros(3), L.zeros(3), 1.0),
    "clamp number, tensor": lambda L: L.clamp(L.zeros(3), 0.0, L.ones(3)),
    "size float dim": lambda L: L.ones(2, 3).size(0.0),
    "size bool dim": lambda L: L.ones(2, 3).size(True),
    "stride list dim": lambda L: L.ones(2, 3).stride([]),
    "expand_as number": lambda L: L.ones(2, 3).expand_as(0),
    "view_as number": lambda L: L.ones(2, 3).view_as(0),
    "reshape_as None": lambda L: L.ones(2, 3).reshape_as(None),
    "type_as dtype": lambda L: L.ones(2, 3).type_as(L.int64),
    "max tensor, tensor, dim": lambda L: L.ones(2, 3).max(L.ones(2, 3), L.ones(2, 3), 0),
    "max tensor, keepdim": lambda L: L.ones(2, 3).max(L.ones(2, 3), 0),
    "new_full int size": lambda L: L.ones(2).new_full(0, 1.0),
    "new_full None fill": lambda L: L.ones(2).new_full((2,), None),
    "new_full float size": lambda L: L.ones(2).new_full((1.5,), 1.0),
    "new_tensor None": lambda L: L.ones(2).new_tensor(None),
    "new_tensor str": lambda L: L.ones(2, dtype=L.int64).new_tensor([1, "x"]),
    "apply_ number": lambda L: L.ones(2).apply_(0),
    "bernoulli_ list": lambda L: L.ones(2).bernoulli_([]),
    "split None": lambda L: L.ones(2, 3).split(None),
    "split float sections": lambda L: L.ones(2, 3).split([1.0, 1]),
    "index dtype": lambda L: L.ones(2, 3)[L.bfloat16],
    "index object": lambda L: L.ones(2, 3)[0, object()],
    "index float": lambda L: L.ones(2, 3)[1.5],
    "setitem dtype index": lambda L: L.zeros(2, 3).__setitem__(L.float32, 1.0),
}


def _raised(call, lib):
    try:
        call(lib)
    except Exception as exc:  # noqa: BLE001 - the point is which exception
        return exc
    return None


@pytest.mark.parametrize("name", list(REJECTED))
def test_rejected_like_pytorch(name):
    expected = _raised(REJECTED[name], torch)
    assert expected is not None, f"PyTorch accepts {name}: this case no longer holds"
    got = _raised(REJECTED[name], ember)
    assert got is not None, f"Ember accepts {name}; PyTorch raises {type(expected).__name__}: {expected}"
    assert isinstance(got, type(expected)), (f"{name}: PyTorch raises {type(expected).__name__}, Ember "
                                             f"{type(got).__name__} ({got})")
    assert isinstance(got, (ember.EmberError, TypeError, ValueError, IndexError)), \
        f"{name}: untyped {type(got).__name__}"


# Argument checks whose message is PyTorch's own (up to the "torch." of a type's name).
SAME_MESSAGE = ["size float dim", "size bool dim", "stride list dim", "expand_as number", "view_as number",
                "reshape_as None", "type_as dtype", "max tensor, keepdim", "new_full int size", "index dtype",
                "index object", "index float", "setitem dtype index"]


@pytest.mark.parametrize("name", SAME_MESSAGE)
def test_message_like_pytorch(name):
    expected = str(_raised(REJECTED[name], torch)).replace("torch.", "")
    assert str(_raised(REJECTED[name], ember)) == expected


ACCEPTED = {
    "uint8 takes -1": lambda L: L.full((2,), -1, dtype=L.uint8),
    "int64 edges": lambda L: L.tensor([2 ** 63 - 1, -2 ** 63]),
    "floats among big ints": lambda L: L.tensor([1.0, 2 ** 64]),
    "clamp 0-d tensor and number": lambda L: L.clamp(L.tensor([-1.0, 0.5, 2.0]), L.tensor(0.0), 1.0),
    "clamp tensor and None": lambda L: L.clamp(L.tensor([-1.0, 0.5, 2.0]), L.zeros(3), None),
    "t of 1-d": lambda L: L.arange(3).t(),
    "index_select in range": lambda L: L.index_select(L.arange(6.0).reshape(2, 3), 1, L.tensor([2, 0, 2])),
    "select negative index": lambda L: L.arange(6.0).reshape(2, 3).select(1, -1),
    "integer arithmetic wraps": lambda L: L.full((2,), 100, dtype=L.int8) + 100,
    "sum dim of 0-d": lambda L: L.tensor(3.0).sum(0),
    "index True": lambda L: L.arange(6.0).reshape(2, 3)[True],
    "index False": lambda L: L.arange(6.0).reshape(2, 3)[False],
    "index True, int": lambda L: L.arange(6.0).reshape(2, 3)[True, 1],
    "split by a 0-d tensor": lambda L: L.arange(6.0).split(L.tensor(4))[1],
}


@pytest.mark.parametrize("name", list(ACCEPTED))
def test_accepted_like_pytorch(name):
    expected, got = ACCEPTED[name](torch), ACCEPTED[name](ember)
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    assert got.tolist() == expected.tolist()
