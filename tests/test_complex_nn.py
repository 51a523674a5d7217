"""Complex parameters in nn layers and optimizers, against PyTorch: convolutions (Gauss's three real ones),
linear, l1_loss, ``Module.to(complex)``, and every optimizer stepping a complex parameter as its real view."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _complex(rng, *shape, dtype=np.complex64):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _pair(array, requires_grad=True):
    return (ember.tensor(array.copy(), requires_grad=requires_grad),
            torch.tensor(array.copy(), requires_grad=requires_grad))


def _real_loss(lib, out, weights):
    """A real loss reading both parts of ``out``: sum of Re(out * w) over a fixed complex ``w``."""
    return lib.view_as_real(out * weights)[..., 0].sum()


CONVS = [
    ("conv1d", (2, 3, 9), (4, 3, 3), dict(padding=1, stride=2)),
    ("conv2d", (2, 2, 6, 5), (3, 2, 3, 2), dict(padding="same")),
    ("conv2d", (2, 6, 5), (3, 2, 3, 2), dict(groups=1, dilation=(2, 1))),  # unbatched
    ("conv3d", (1, 2, 4, 4, 3), (2, 2, 2, 2, 2), dict()),
    ("conv_transpose1d", (2, 3, 5), (3, 2, 3), dict(stride=2, output_padding=1)),
    ("conv_transpose2d", (1, 2, 4, 4), (2, 3, 3, 3), dict(padding=1)),
]


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name,x_shape,w_shape,kwargs", CONVS, ids=[f"{c[0]}-{i}" for i, c in enumerate(CONVS)])
def test_complex_convolution_values_and_gradients_match_torch(name, x_shape, w_shape, kwargs, dtype):
    rng = np.random.default_rng(0)
    x, w = _complex(rng, *x_shape, dtype=dtype), _complex(rng, *w_shape, dtype=dtype)
    out_channels = w_shape[1] if "transpose" in name else w_shape[0]
    b = _complex(rng, out_channels, dtype=dtype)
    results = []
    for index, lib in enumerate((ember, torch)):
        tensors = [_pair(a)[index] for a in (x, w, b)]
        out = getattr(lib.nn.functional, name)(*tensors, **kwargs)
        weights = lib.tensor(_complex(np.random.default_rng(1), *out.shape, dtype=dtype))
        grads = (lib.autograd.grad(_real_loss(lib, out, weights), tensors))
        results.append([out.detach().numpy()] + [g.numpy() for g in grads])
    tolerance = 2e-4 if dtype == np.complex64 else 1e-10
    assert results[0][0].dtype == results[1][0].dtype
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=tolerance, atol=tolerance)


def test_complex_input_with_a_real_weight_takes_two_real_convolutions():
    rng = np.random.default_rng(2)
    x, w = _complex(rng, 1, 2, 7), rng.standard_normal((3, 2, 3)).astype(np.float32)
    ours = ember.nn.functional.conv1d(ember.tensor(x), ember.tensor(w))
    theirs = torch.nn.functional.conv1d(torch.tensor(x), torch.tensor(w).to(torch.complex64))
    assert ours.dtype is ember.complex64
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-5)


def test_complex_linear_layer_gradients_match_torch():
    rng = np.random.default_rng(3)
    x, w, b = _complex(rng, 5, 3), _complex(rng, 2, 3), _complex(rng, 2)
    results = []
    for index, lib in enumerate((ember, torch)):
        tensors = [_pair(a)[index] for a in (x, w, b)]
        out = lib.nn.functional.linear(*tensors)
        weights = lib.tensor(_complex(np.random.default_rng(4), 5, 2))
        grads = lib.autograd.grad(_real_loss(lib, out, weights), tensors)
        results.append([out.detach().numpy()] + [g.numpy() for g in grads])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def test_l1_loss_of_complex_inputs_is_the_real_mean_distance():
    rng = np.random.default_rng(5)
    a, b = _complex(rng, 4, 3), _complex(rng, 4, 3)
    ours = ember.nn.functional.l1_loss(ember.tensor(a), ember.tensor(b))
    theirs = torch.nn.functional.l1_loss(torch.tensor(a), torch.tensor(b))
    assert ours.dtype is ember.float32
    np.testing.assert_allclose(ours.item(), theirs.item(), rtol=1e-6)


def test_module_to_complex_converts_floating_parameters_and_float_leaves_complex_ones():
    layer = ember.nn.Linear(3, 2)
    layer.to(ember.cfloat)
    assert layer.weight.dtype is ember.complex64 and layer.weight.requires_grad
    layer.float()  # as torch: .float() converts floating tensors only, so complex ones stay
    assert layer.weight.dtype is ember.complex64
    with pytest.raises(TypeError, match="floating point or complex dtypes"):
        layer.to(ember.int32)
    assert ember.nn.Parameter(ember.zeros(2, dtype=ember.complex128)).requires_grad


OPTIMIZERS = [("SGD", dict(momentum=0.9)), ("Adam", {}), ("AdamW", dict(amsgrad=True)),
              ("RMSprop", dict(momentum=0.5, centered=True)), ("Adagrad", {}), ("NAdam", {}), ("RAdam", {}),
              ("Adamax", {}), ("Adadelta", {}), ("ASGD", {}), ("Rprop", {})]


@pytest.mark.parametrize("name,kwargs", OPTIMIZERS, ids=[o[0] for o in OPTIMIZERS])
def test_optimizers_step_complex_parameters_as_torch_does(name, kwargs):
    """PyTorch steps a complex parameter as its real view (each part its own moments); the state stays complex."""
    start = _complex(np.random.default_rng(6), 3, 2)
    results = []
    for lib in (ember, torch):
        w = lib.tensor(start.copy(), requires_grad=True)
        optimizer = getattr(lib.optim, name)([w], lr=0.05, **kwargs)
        for _ in range(3):
            optimizer.zero_grad()
            parts = lib.view_as_real(w * w * w)
            (parts[..., 0].sum() + (parts ** 2).sum()).backward()
            optimizer.step()
        kept = ("exp_avg", "momentum_buffer", "square_avg", "sum", "step_size", "ax")
        state = {k: v for k, v in optimizer.state[w].items() if k in kept}
        results.append((w.detach().numpy(), {k: (str(v.dtype).split(".")[-1], v.numpy()) for k, v in state.items()}))
    (ours, our_state), (theirs, their_state) = results
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    assert our_state.keys() == their_state.keys()
    for key, (dtype, value) in our_state.items():
        assert dtype == their_state[key][0] == "complex64", key
        np.testing.assert_allclose(value, their_state[key][1], rtol=1e-5, atol=1e-6)
