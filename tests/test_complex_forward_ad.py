"""Forward-mode AD (``ember.func.jvp``) on complex inputs against ``torch.func.jvp``: holomorphic ops, ops that are
not (abs, angle, conj), views across the dtype change, and the FFT primitives."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _complex(seed: int, *shape):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _jvps(name: str, primal: np.ndarray, tangent: np.ndarray):
    ours = ember.func.jvp(_function(ember, name), (ember.tensor(primal),), (ember.tensor(tangent),))
    theirs = torch.func.jvp(_function(torch, name), (torch.tensor(primal),), (torch.tensor(tangent),))
    return ours, theirs


def _function(lib, name: str):
    namespace, _, attribute = name.rpartition(".")
    return getattr(getattr(lib, namespace) if namespace else lib, attribute)


@pytest.mark.parametrize("name", ["exp", "log", "sin", "tanh", "sqrt", "reciprocal", "abs", "angle",
                                  "conj_physical", "view_as_real", "fft.fft", "fft.ifft"])
def test_complex_jvp_matches_torch(name):
    (primal, tangent), (torch_primal, torch_tangent) = _jvps(name, _complex(0, 4), _complex(1, 4))
    assert tangent.dtype.name == str(torch_tangent.dtype).split(".")[-1]
    assert not tangent.requires_grad  # as torch's: nothing here is differentiated
    np.testing.assert_allclose(primal.numpy(), torch_primal.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tangent.numpy(), torch_tangent.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["fft.rfft", "fft.hfft"])
def test_real_to_complex_and_back_jvp_matches_torch(name):
    primal, tangent = _complex(2, 6), _complex(3, 6)
    if name == "fft.rfft":
        primal, tangent = primal.real, tangent.real
    (_, ours), (_, theirs) = _jvps(name, primal, tangent)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


def test_derived_tangents_of_real_ops_do_not_require_grad():
    """Tangents made by the double-VJP construction (prod has no forward rule of its own) are plain tensors."""
    x, t = ember.randn(3, 3, dtype=ember.float64), ember.randn(3, 3, dtype=ember.float64)
    _, tangent = ember.func.jvp(ember.prod, (x,), (t,))
    expected = torch.func.jvp(torch.prod, (torch.tensor(x.numpy()),), (torch.tensor(t.numpy()),))[1]
    assert not tangent.requires_grad
    np.testing.assert_allclose(tangent.numpy(), expected.numpy(), rtol=1e-12)
