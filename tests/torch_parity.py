"""Compare Ember with PyTorch: the leaf pairs, value checks and gradient checks the parity tests share."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def leaf_pair(values):
    """The same float64 values as an Ember and a torch leaf that require grad."""
    return (ember.tensor(values, dtype=ember.float64, requires_grad=True),
            torch.tensor(values, dtype=torch.float64, requires_grad=True))


def copy_parameters(ours, theirs) -> None:
    """Copies torch's (random) parameter values into the Ember module's, in registration order."""
    with ember.no_grad():
        for p, tp in zip(ours.parameters(), theirs.parameters()):
            p.copy_(ember.tensor(tp.detach().numpy()))


def assert_same(ours, theirs, rtol: float = 1e-6, atol: float = 1e-6) -> None:
    """Same values, shape and dtype name; tuples and lists compared element by element."""
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert_same(a, b, rtol, atol)
        return
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol)


def assert_forward_backward(ours, theirs, inputs, modules=None, *, rng: np.random.Generator, rtol: float = 1e-7,
                            atol: float = 1e-9) -> None:
    """Same values, then the same gradients of a random weighting (drawn from ``rng``) of the output for every
    (ember, torch) input pair in ``inputs`` and, given ``modules`` (ours, theirs), every parameter."""
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol)
    weights = rng.standard_normal(tuple(theirs.shape))
    (ours * ember.tensor(weights)).sum().backward()
    (theirs * torch.tensor(weights)).sum().backward()
    for x, tx in inputs:
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=rtol, atol=atol)
    if modules is not None:
        for (name, p), (_, tp) in zip(modules[0].named_parameters(), modules[1].named_parameters()):
            np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=rtol, atol=atol, err_msg=name)
