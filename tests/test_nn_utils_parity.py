"""nn.utils.parametrize, parametrizations.weight_norm/spectral_norm, the weight_norm/spectral_norm hooks and
prune, against torch.nn.utils: layout, state_dict keys, values and gradients."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn.utils import parametrizations, parametrize

torch = pytest.importorskip("torch")
import torch.nn.utils.prune  # noqa: E402  (torch does not import it with torch.nn.utils)


def _linear_pair(seed=0, out_features=4, in_features=3):
    ours = nn.Linear(in_features, out_features, dtype=ember.float64)
    theirs = torch.nn.Linear(in_features, out_features, dtype=torch.float64)
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            value = rng.standard_normal(tuple(p.shape))
            p.copy_(torch.tensor(value))
            getattr(ours, name).data = ember.tensor(value)
    return ours, theirs


def _close(a, b, tol=1e-10):
    a = a.detach().numpy() if isinstance(a, ember.Tensor) else a
    np.testing.assert_allclose(np.asarray(a), b.detach().numpy(), rtol=tol, atol=tol)


def _run_both(ours, theirs, seed=5):
    x = np.random.default_rng(seed).standard_normal((2, ours.in_features))
    xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ye, yt = ours(xe), theirs(xt)
    _close(ye, yt)
    (ye ** 2).sum().backward()
    (yt ** 2).sum().backward()
    _close(xe.grad, xt.grad)
    return ye, yt


class Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(-1, -2)

    def right_inverse(self, a):
        return a.triu()


class TorchSymmetric(torch.nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(-1, -2)

    def right_inverse(self, a):
        return a.triu()


class Scale(nn.Module):
    def forward(self, x):
        return x * 2

    def right_inverse(self, x):
        return x / 2


def test_register_parametrization_layout_state_dict_and_assignment():
    ours, theirs = _linear_pair(out_features=3)
    parametrize.register_parametrization(ours, "weight", Symmetric())
    torch.nn.utils.parametrize.register_parametrization(theirs, "weight", TorchSymmetric())
    assert type(ours).__name__ == "ParametrizedLinear" == type(theirs).__name__
    assert parametrize.type_before_parametrizations(ours) is nn.Linear
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert "parametrizations.weight.original" in ours.state_dict()
    assert parametrize.is_parametrized(ours) and parametrize.is_parametrized(ours, "weight")
    assert not parametrize.is_parametrized(ours, "bias") and not parametrize.is_parametrized(nn.Linear(1, 1))
    assert other_linear_untouched()
    _close(ours.weight, theirs.weight)
    _run_both(ours, theirs)
    _close(ours.parametrizations.weight.original.grad, theirs.parametrizations.weight.original.grad)
    ours.weight = ember.tensor(np.arange(9.0).reshape(3, 3))
    theirs.weight = torch.tensor(np.arange(9.0).reshape(3, 3))
    _close(ours.parametrizations.weight.original, theirs.parametrizations.weight.original)
    _close(ours.weight, theirs.weight)


def other_linear_untouched() -> bool:
    return type(nn.Linear(2, 2)) is nn.Linear and "weight" in nn.Linear(2, 2)._parameters


def test_chained_parametrizations_cached_and_removal():
    ours, theirs = _linear_pair(out_features=3)
    parametrize.register_parametrization(ours, "weight", Symmetric())
    parametrize.register_parametrization(ours, "weight", Scale())
    assert len(ours.parametrizations.weight) == 2
    expected = np.triu(ours.parametrizations.weight.original.detach().numpy())
    expected = (expected + np.triu(expected, 1).T) * 2
    np.testing.assert_allclose(ours.weight.detach().numpy(), expected)
    with parametrize.cached():
        assert ours.weight is ours.weight
    assert ours.weight is not ours.weight
    original = ours.parametrizations.weight.original
    parametrize.remove_parametrizations(ours, "weight", leave_parametrized=True)
    assert type(ours) is nn.Linear and "parametrizations" not in ours._modules
    assert ours.weight is original and isinstance(ours.weight, nn.Parameter)
    np.testing.assert_allclose(ours.weight.detach().numpy(), expected)
    with pytest.raises(ValueError, match="does not have a parametrization"):
        parametrize.remove_parametrizations(ours, "weight")
    with pytest.raises(ValueError, match="may not change the shape"):
        parametrize.register_parametrization(ours, "weight", _Flatten())
    with pytest.raises(ValueError, match="does not have a parameter"):
        parametrize.register_parametrization(ours, "nothing", Scale())


class _Flatten(nn.Module):
    def forward(self, x):
        return x.reshape(-1)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_parametrizations_weight_norm_matches_torch(dim):
    ours, theirs = _linear_pair()
    parametrizations.weight_norm(ours, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(theirs, dim=dim)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for key in ("parametrizations.weight.original0", "parametrizations.weight.original1"):
        _close(ours.state_dict()[key], theirs.state_dict()[key])
    _run_both(ours, theirs)
    for key in ("original0", "original1"):
        _close(getattr(ours.parametrizations.weight, key).grad, getattr(theirs.parametrizations.weight, key).grad)
    parametrize.remove_parametrizations(ours, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(theirs, "weight")
    _close(ours.weight, theirs.weight)
    assert list(ours.state_dict()) == list(theirs.state_dict())


def _copy_spectral_vectors(ours, theirs, prefix):
    for name in ("_u", "_v"):
        key = prefix + name
        ours.state_dict()[key].copy_(ember.tensor(theirs.state_dict()[key].numpy()))


@pytest.mark.parametrize("shape,dim", [((4, 3), None), ((5, 2, 3), 1)])
def test_parametrizations_spectral_norm_matches_torch(shape, dim):
    ours, theirs = _linear_pair(out_features=4)
    if len(shape) == 3:  # a 3-D tensor through a buffer-free module: a bare parameter holder
        ours, theirs = _Holder(shape), _TorchHolder(shape)
        ours.weight.data = ember.tensor(theirs.weight.detach().numpy())
    parametrizations.spectral_norm(ours, dim=dim)
    torch.nn.utils.parametrizations.spectral_norm(theirs, dim=dim)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _copy_spectral_vectors(ours, theirs, "parametrizations.weight.0.")
    for _ in range(3):  # training mode: each access runs one power-iteration step
        _close(ours.weight, theirs.weight, 1e-8)
    ours.eval(), theirs.eval()
    _close(ours.weight, theirs.weight, 1e-8)
    loss_e, loss_t = (ours.weight ** 3).sum(), (theirs.weight ** 3).sum()
    loss_e.backward()
    loss_t.backward()
    _close(ours.parametrizations.weight.original.grad, theirs.parametrizations.weight.original.grad, 1e-8)
    sigma = np.linalg.svd(as_matrix(theirs.parametrizations.weight.original.detach().numpy(), dim or 0),
                          compute_uv=False)[0]
    np.testing.assert_allclose(np.linalg.svd(as_matrix(ours.weight.detach().numpy(), dim or 0),
                                             compute_uv=False)[0], 1.0, rtol=0.05 if sigma else 1)


def as_matrix(array, dim):
    return np.moveaxis(array, dim, 0).reshape(array.shape[dim], -1)


class _Holder(nn.Module):
    def __init__(self, shape):
        super().__init__()
        self.weight = nn.Parameter(ember.zeros(*shape, dtype=ember.float64))


class _TorchHolder(torch.nn.Module):
    def __init__(self, shape):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(*shape, dtype=torch.float64))


def test_weight_norm_hook_matches_torch_and_is_removable():
    ours, theirs = _linear_pair()
    with pytest.warns(FutureWarning):
        nn.utils.weight_norm(ours)
    with pytest.warns(FutureWarning):
        torch.nn.utils.weight_norm(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["bias", "weight_g", "weight_v"]
    _run_both(ours, theirs)
    _close(ours.weight_g.grad, theirs.weight_g.grad)
    _close(ours.weight_v.grad, theirs.weight_v.grad)
    nn.utils.remove_weight_norm(ours)
    torch.nn.utils.remove_weight_norm(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _close(ours.weight, theirs.weight)
    with pytest.raises(ValueError, match="not found"):
        nn.utils.remove_weight_norm(ours)


def test_spectral_norm_hook_matches_torch_and_is_removable():
    ours, theirs = _linear_pair()
    nn.utils.spectral_norm(ours)
    torch.nn.utils.spectral_norm(theirs)
    assert sorted(ours.state_dict()) == sorted(k for k in theirs.state_dict())
    assert {"weight_orig", "weight_u", "weight_v"} <= set(ours.state_dict())
    for name in ("weight_u", "weight_v"):
        getattr(ours, name).copy_(ember.tensor(getattr(theirs, name).numpy()))
    for _ in range(2):
        _run_both(ours, theirs)
        _close(ours.weight_u, theirs.weight_u)
    _close(ours.weight_orig.grad, theirs.weight_orig.grad)
    ours.eval(), theirs.eval()
    _run_both(ours, theirs)
    nn.utils.remove_spectral_norm(ours)
    torch.nn.utils.remove_spectral_norm(theirs)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    _close(ours.weight, theirs.weight)


# -- prune ---------------------------------------------------------------------------------------------------

def _conv_like_pair(seed=1):
    """A Linear(6 -> 5) whose distinct weights make the pruning order unambiguous."""
    ours, theirs = _linear_pair(seed, out_features=5, in_features=6)
    return ours, theirs


def _assert_same_pruning(ours, theirs, name="weight"):
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    _close(getattr(ours, name + "_mask"), getattr(theirs, name + "_mask"), 0)
    _close(getattr(ours, name), getattr(theirs, name))


@pytest.mark.parametrize("recipe", [
    lambda p, m: p.l1_unstructured(m, "weight", amount=0.3),
    lambda p, m: p.l1_unstructured(m, "weight", amount=7),
    lambda p, m: p.ln_structured(m, "weight", amount=2, n=2, dim=0),
    lambda p, m: p.ln_structured(m, "weight", amount=0.5, n=1, dim=1),
    lambda p, m: p.ln_structured(m, "weight", amount=1, n=float("inf"), dim=-1),
    lambda p, m: p.identity(m, "weight"),
])
def test_deterministic_pruning_matches_torch(recipe):
    ours, theirs = _conv_like_pair()
    recipe(nn.utils.prune, ours)
    recipe(torch.nn.utils.prune, theirs)
    _assert_same_pruning(ours, theirs)
    _run_both(ours, theirs)
    _close(ours.weight_orig.grad, theirs.weight_orig.grad)  # zero where pruned
    assert nn.utils.prune.is_pruned(ours) and not nn.utils.prune.is_pruned(nn.Linear(2, 2))


def test_iterative_and_custom_pruning_combine_masks_like_torch():
    ours, theirs = _conv_like_pair(2)
    mask = np.ones((5, 6))
    mask[0, :3] = 0
    for lib, module in ((nn.utils.prune, ours), (torch.nn.utils.prune, theirs)):
        to_tensor = ember.tensor if lib is nn.utils.prune else torch.tensor
        lib.custom_from_mask(module, "weight", mask=to_tensor(mask))
        lib.l1_unstructured(module, "weight", amount=4)
        lib.ln_structured(module, "weight", amount=1, n=2, dim=0)
    assert type(ours._forward_pre_hooks[next(iter(ours._forward_pre_hooks))]).__name__ == "PruningContainer"
    _assert_same_pruning(ours, theirs)
    nn.utils.prune.remove(ours, "weight")
    torch.nn.utils.prune.remove(theirs, "weight")
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict()) and isinstance(ours.weight, nn.Parameter)
    _close(ours.weight, theirs.weight)
    assert not nn.utils.prune.is_pruned(ours)
    with pytest.raises(ValueError, match="has to be pruned"):
        nn.utils.prune.remove(ours, "weight")


def test_global_unstructured_matches_torch():
    pairs = [_linear_pair(seed, out_features=3, in_features=4) for seed in (3, 4)]
    nn.utils.prune.global_unstructured([(p[0], "weight") for p in pairs],
                                       pruning_method=nn.utils.prune.L1Unstructured, amount=9)
    torch.nn.utils.prune.global_unstructured([(p[1], "weight") for p in pairs],
                                             pruning_method=torch.nn.utils.prune.L1Unstructured, amount=9)
    for ours, theirs in pairs:
        _assert_same_pruning(ours, theirs)
    assert sum(int((p[0].weight_mask == 0).sum().item()) for p in pairs) == 9


def test_random_pruning_counts_and_errors():
    module = nn.Linear(6, 5)
    nn.utils.prune.random_unstructured(module, "weight", amount=0.4)
    assert int((module.weight_mask == 0).sum().item()) == 12
    conv_like = nn.Linear(6, 5)
    nn.utils.prune.random_structured(conv_like, "weight", amount=2, dim=0)
    rows_zeroed = (conv_like.weight_mask.sum(dim=1) == 0).sum().item()
    assert rows_zeroed == 2 and set(np.unique(conv_like.weight_mask.numpy()).tolist()) == {0.0, 1.0}
    with pytest.raises(ValueError, match="amount"):
        nn.utils.prune.l1_unstructured(nn.Linear(2, 2), "weight", amount=1.5)
    with pytest.raises(ValueError, match="smaller than"):
        nn.utils.prune.l1_unstructured(nn.Linear(2, 2), "weight", amount=5)
    with pytest.raises(ValueError, match="multidimensional"):
        nn.utils.prune.ln_structured(nn.Linear(2, 2), "bias", amount=1, n=2, dim=0)
    untouched = nn.Linear(2, 2)
    with pytest.raises(ValueError):
        nn.utils.prune.l1_unstructured(untouched, "weight", amount=5)
    assert "weight" in untouched._parameters and "weight_orig" not in untouched._parameters


# -- AdaptiveLogSoftmaxWithLoss ----------------------------------------------------------------------------------

def _adaptive_pair(head_bias):
    ours = nn.AdaptiveLogSoftmaxWithLoss(8, 12, [3, 7], div_value=2.0, head_bias=head_bias, dtype=ember.float64)
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 12, [3, 7], div_value=2.0, head_bias=head_bias,
                                                 dtype=torch.float64)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: ember.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_log_softmax_matches_torch(head_bias):
    ours, theirs = _adaptive_pair(head_bias)
    x = np.random.default_rng(0).standard_normal((6, 8))
    target = np.array([0, 2, 3, 6, 7, 11])
    xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out_e, out_t = ours(xe, ember.tensor(target)), theirs(xt, torch.tensor(target))
    assert out_e._fields == out_t._fields == ("output", "loss")
    _close(out_e.output, out_t.output)
    _close(out_e.loss, out_t.loss)
    out_e.loss.backward()
    out_t.loss.backward()
    _close(xe.grad, xt.grad)
    for (name, p_t), p_e in zip(theirs.named_parameters(), ours.parameters()):
        _close(p_e.grad, p_t.grad)
    _close(ours.log_prob(ember.tensor(x)), theirs.log_prob(torch.tensor(x)))
    many = np.random.default_rng(1).standard_normal((20, 8)) * 3
    assert ours.predict(ember.tensor(many)).tolist() == theirs.predict(torch.tensor(many)).tolist()
    single_e, single_t = ours(ember.tensor(x[0]), ember.tensor(8)), theirs(torch.tensor(x[0]), torch.tensor(8))
    _close(single_e.output, single_t.output)


def test_adaptive_log_softmax_rejects_bad_input():
    with pytest.raises(ValueError, match="cutoffs"):
        nn.AdaptiveLogSoftmaxWithLoss(4, 10, [5, 3])
    module = nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3])
    with pytest.raises(RuntimeError, match="Target values should be in"):
        module(ember.zeros(2, 4), ember.tensor([1, 10]))
    with pytest.raises(RuntimeError, match="same size"):
        module(ember.zeros(3, 4), ember.tensor([1, 2]))


# -- orthogonal ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,orthogonal_map", [((3, 3), None), ((5, 3), None), ((3, 5), "matrix_exp"),
                                                  ((4, 4), "cayley"), ((4, 2), "householder")])
def test_orthogonal_matches_torch(shape, orthogonal_map):
    ours, theirs = _linear_pair(7, out_features=shape[0], in_features=shape[1])
    parametrizations.orthogonal(ours, orthogonal_map=orthogonal_map)
    torch.nn.utils.parametrizations.orthogonal(theirs, orthogonal_map=orthogonal_map)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    # a non-square base is completed with random columns: start both from torch's
    ours.parametrizations.weight[0].base.copy_(ember.tensor(theirs.parametrizations.weight[0].base.numpy()))
    _close(ours.parametrizations.weight.original, theirs.parametrizations.weight.original)
    weight = ours.weight.detach().numpy()
    small = min(shape)
    np.testing.assert_allclose(weight.T @ weight if shape[0] >= shape[1] else weight @ weight.T, np.eye(small),
                               atol=1e-10)
    with torch.no_grad():  # move away from the identity point, where every map's derivative is simplest
        noise = np.random.default_rng(1).standard_normal(shape) * 0.3
        theirs.parametrizations.weight.original.add_(torch.tensor(noise))
    ours.parametrizations.weight.original.data = ember.tensor(theirs.parametrizations.weight.original.detach().numpy())
    _close(ours.weight, theirs.weight, 1e-9)
    _run_both(ours, theirs)
    _close(ours.parametrizations.weight.original.grad, theirs.parametrizations.weight.original.grad, 1e-8)


def test_orthogonal_assignment_and_errors():
    module = nn.Linear(3, 3, dtype=ember.float64)
    parametrizations.orthogonal(module)
    q = np.linalg.qr(np.random.default_rng(0).standard_normal((3, 3)))[0]
    module.weight = ember.tensor(q)
    np.testing.assert_allclose(module.weight.detach().numpy(), q, atol=1e-10)
    with pytest.raises(ValueError, match="matrix or batch"):
        parametrizations.orthogonal(nn.Linear(3, 3), name="bias")
    with pytest.raises(ValueError, match="orthogonal_map"):
        parametrizations.orthogonal(nn.Linear(3, 3), orthogonal_map="qr")


def test_orthogonal_householder_without_trivialization_matches_torch():
    ours, theirs = _linear_pair(9, out_features=5, in_features=3)
    parametrizations.orthogonal(ours, orthogonal_map="householder", use_trivialization=False)
    torch.nn.utils.parametrizations.orthogonal(theirs, orthogonal_map="householder", use_trivialization=False)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _close(ours.parametrizations.weight.original, theirs.parametrizations.weight.original, 1e-10)
    _close(ours.weight, theirs.weight, 1e-10)
    _run_both(ours, theirs)
    _close(ours.parametrizations.weight.original.grad, theirs.parametrizations.weight.original.grad, 1e-8)


def test_parametrized_modules_deepcopy_and_refuse_pickling():
    import copy
    import pickle
    module = nn.Linear(3, 3)
    parametrizations.weight_norm(module)
    replica = copy.deepcopy(module)
    assert type(replica).__name__ == "ParametrizedLinear" and ember.equal(replica.weight, module.weight)
    assert replica.parametrizations.weight.original0 is not module.parametrizations.weight.original0
    assert replica.load_state_dict(module.state_dict()) is not None
    with pytest.raises(RuntimeError, match="state_dict"):
        pickle.dumps(module)
    parametrize.remove_parametrizations(module, "weight")
    assert pickle.loads(pickle.dumps(module)).weight.shape == (3, 3)
