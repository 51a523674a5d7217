"""What the ember.fft and stft parity tests share: the same random values as an Ember and a torch tensor, value
comparisons at each precision's tolerance, gradients of a random weighting of the output, and errors compared."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

#: absolute and relative tolerance by the precision of the values compared
TOLERANCE = {"float32": 2e-4, "complex64": 2e-4, "float64": 1e-10, "complex128": 1e-10, "int64": 0}


def values(shape, dtype: str, rng: np.random.Generator) -> np.ndarray:
    """Standard normal values of ``dtype`` (both components random for a complex one; ints from -5 to 5)."""
    if dtype.startswith("complex"):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if dtype.startswith(("int", "bool")):
        return rng.integers(-5, 5, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def pair(shape, dtype: str, rng: np.random.Generator, requires_grad: bool = False):
    """The same values as an Ember and a torch tensor."""
    data = values(shape, dtype, rng)
    return (ember.tensor(data, requires_grad=requires_grad), torch.tensor(data, requires_grad=requires_grad))


def assert_same(ours, theirs, precision: str | None = None) -> None:
    """Same shape, dtype and values (to the tolerance of ``precision``, by default the result's dtype)."""
    theirs = theirs.detach().resolve_conj()
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    tolerance = TOLERANCE[precision or ours.dtype.name]
    scale = max(1.0, float(np.abs(theirs.numpy()).max(initial=0)))
    np.testing.assert_allclose(ours.detach().numpy(), theirs.numpy(), rtol=tolerance, atol=tolerance * scale)


def assert_same_gradients(ours, theirs, inputs, rng: np.random.Generator, precision: str) -> None:
    """Both outputs backpropagate one random gradient (complex for a complex output); each input pair in
    ``inputs`` gets the same gradient."""
    gradient = values(tuple(theirs.shape), str(theirs.dtype).removeprefix("torch."), rng)
    ours.backward(ember.tensor(gradient))
    theirs.backward(torch.tensor(gradient))
    for x, tx in inputs:
        assert_same(x.grad, tx.grad, precision)


def assert_same_error(ours, theirs, phrase: str) -> None:
    """Both calls raise; Ember's error is of torch's class (IndexError, RuntimeError, ...) and both messages say
    ``phrase``."""
    with pytest.raises(Exception) as theirs_raised:
        theirs()
    with pytest.raises(type(theirs_raised.value)) as ours_raised:
        ours()
    assert phrase in str(theirs_raised.value), theirs_raised.value
    assert phrase in str(ours_raised.value), ours_raised.value
