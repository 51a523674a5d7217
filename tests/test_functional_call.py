"""``functional_call`` and ``stack_module_state`` against ``torch.func`` in float64: outputs and gradients with
swapped-in weights, buffers updated in place, restoration after errors, tied weights, strict keys, ensembles."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch.func import functional_call as t_functional_call, stack_module_state as t_stack  # noqa: E402

import ember as E  # noqa: E402
from ember import nn  # noqa: E402
from ember.func.functional_call import functional_call, stack_module_state  # noqa: E402

RNG = np.random.default_rng(11)


def arr(*shape):
    return RNG.standard_normal(shape)


def twin(ours, theirs):
    """Give the torch module the Ember module's parameters and buffers."""
    state = {k: torch.tensor(v.detach().numpy()) for k, v in ours.state_dict().items()}
    theirs.load_state_dict(state)
    return theirs


def close(ours, theirs):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)


def mlp(lib):
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2)).double()


def bn_net(lib):
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.ReLU(), lib.nn.Linear(4, 1)).double()


def snapshot(module):
    """Identity and values of every parameter and buffer, to check that a call left the module as it was."""
    named = dict(module.named_parameters())
    named.update(module.named_buffers())
    return {k: (id(v), v.detach().numpy().copy()) for k, v in named.items()}


def assert_unchanged(module, before):
    after = snapshot(module)
    assert after.keys() == before.keys()
    for k in before:
        assert after[k][0] == before[k][0], f"{k} was replaced"
        np.testing.assert_array_equal(after[k][1], before[k][1])
    for name, p in module.named_parameters():
        assert isinstance(p, nn.Parameter), name


# -- nn.Linear ---------------------------------------------------------------------------------------------
def test_linear_output_and_gradients_match_torch():
    lin, tlin = nn.Linear(3, 2).double(), torch.nn.Linear(3, 2).double()
    w, b, x = arr(2, 3), arr(2), arr(5, 3)
    ew, eb = E.tensor(w).requires_grad_(), E.tensor(b).requires_grad_()
    tw, tb = torch.tensor(w).requires_grad_(), torch.tensor(b).requires_grad_()
    before = snapshot(lin)
    out = functional_call(lin, {"weight": ew, "bias": eb}, (E.tensor(x),))
    tout = t_functional_call(tlin, {"weight": tw, "bias": tb}, (torch.tensor(x),))
    close(out, tout)
    np.testing.assert_allclose(out.detach().numpy(), x @ w.T + b, rtol=1e-12)
    for g, tg in zip(E.autograd.grad((out ** 2).sum(), [ew, eb]), torch.autograd.grad((tout ** 2).sum(), [tw, tb])):
        close(g, tg)
    assert_unchanged(lin, before)


def test_partial_dict_keeps_the_module_own_tensors():
    lin = nn.Linear(3, 2).double()
    tlin = twin(lin, torch.nn.Linear(3, 2).double())
    w, x = arr(2, 3), arr(4, 3)
    out = functional_call(lin, {"weight": E.tensor(w)}, E.tensor(x))  # a bare tensor as args
    close(out, t_functional_call(tlin, {"weight": torch.tensor(w)}, torch.tensor(x)))
    np.testing.assert_allclose(out.detach().numpy(), x @ w.T + lin.bias.detach().numpy(), rtol=1e-12)


def test_kwargs_reach_forward():
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.s = nn.Parameter(E.tensor(2.0, dtype=E.float64))

        def forward(self, x, *, offset):
            return x * self.s + offset

    module = Scale()
    x = arr(3)
    out = functional_call(module, {"s": E.tensor(5.0, dtype=E.float64)}, (E.tensor(x),),
                          {"offset": E.tensor(1.0, dtype=E.float64)})
    np.testing.assert_allclose(out.numpy(), 5.0 * x + 1.0, rtol=1e-12)
    assert module.s.item() == 2.0


# -- Sequential with buffers -------------------------------------------------------------------------------
@pytest.mark.parametrize("training", [True, False])
def test_sequential_batchnorm_matches_torch(training):
    net = bn_net(E).train(training)
    tnet = twin(net, bn_net(torch)).train(training)
    params = {k: arr(*v.shape) for k, v in net.named_parameters()}
    buffers = {k: (arr(*v.shape) ** 2 if "var" in k else arr(*v.shape)) for k, v in net.named_buffers()
               if "num_batches" not in k}
    ours = {k: E.tensor(v) for k, v in {**params, **buffers}.items()}
    theirs = {k: torch.tensor(v) for k, v in {**params, **buffers}.items()}
    ours["1.num_batches_tracked"] = E.tensor(3)
    theirs["1.num_batches_tracked"] = torch.tensor(3)
    before = snapshot(net)
    x = arr(6, 3)
    out = functional_call(net, ours, (E.tensor(x),))
    tout = t_functional_call(tnet, theirs, (torch.tensor(x),))
    close(out, tout)
    for k in buffers:  # running statistics updated in place in the given tensors (in training), as torch's
        close(ours[k], theirs[k])
    assert int(ours["1.num_batches_tracked"].item()) == int(theirs["1.num_batches_tracked"].item()) == 3 + training
    if training:
        assert not np.allclose(ours["1.running_mean"].numpy(), buffers["1.running_mean"])
    assert_unchanged(net, before)


def test_tuple_of_dicts_is_merged():
    net = bn_net(E).eval()
    tnet = twin(net, bn_net(torch)).eval()
    params = {k: arr(*v.shape) for k, v in net.named_parameters()}
    x = arr(4, 3)
    out = functional_call(net, ({k: E.tensor(v) for k, v in params.items()}, dict(net.named_buffers())),
                          (E.tensor(x),))
    tout = t_functional_call(tnet, ({k: torch.tensor(v) for k, v in params.items()}, dict(tnet.named_buffers())),
                             (torch.tensor(x),))
    close(out, tout)


def test_duplicate_keys_across_dicts_are_an_error():
    lin, tlin = nn.Linear(3, 2), torch.nn.Linear(3, 2)
    with pytest.raises(ValueError) as ours:
        functional_call(lin, ({"weight": E.zeros(2, 3)}, {"weight": E.ones(2, 3)}), (E.ones(1, 3),))
    with pytest.raises(ValueError) as theirs:
        t_functional_call(tlin, ({"weight": torch.zeros(2, 3)}, {"weight": torch.ones(2, 3)}), (torch.ones(1, 3),))
    assert str(ours.value) == str(theirs.value) == ("['weight'] appeared in multiple dictionaries; behavior of "
                                                    "functional call is ambiguous")


def test_not_a_dict_is_an_error():
    with pytest.raises(ValueError, match="Expected parameter_and_buffer_dicts to be a dict"):
        functional_call(nn.Linear(3, 2), 3, (E.ones(1, 3),))
    with pytest.raises(ValueError, match="Expected all elements of parameter_and_buffer_dicts to be dictionaries"):
        functional_call(nn.Linear(3, 2), [{"weight": E.ones(2, 3)}, 4], (E.ones(1, 3),))


# -- restoration -------------------------------------------------------------------------------------------
seen = []  # what Boom.forward saw, checked after the call


class Boom(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(2, 2)
        self.register_buffer("count", E.zeros(()))

    def forward(self, x):
        seen.append((self.inner.weight, self.count))
        raise ValueError("boom")


def test_restored_after_an_exception():
    net = Boom()
    before = snapshot(net)
    w, c = E.ones(2, 2), E.full((), 7.0)
    with pytest.raises(ValueError, match="boom"):
        functional_call(net, {"inner.weight": w, "count": c}, (E.ones(1, 2),))
    assert seen[-1][0] is w and seen[-1][1] is c  # the call did see the swapped tensors
    assert_unchanged(net, before)


def test_restored_after_a_bad_value_midway():
    net = mlp(E)
    before = snapshot(net)
    with pytest.raises(TypeError):
        functional_call(net, {"0.weight": E.zeros(4, 3, dtype=E.float64), "2.weight": "not a tensor"},
                        (E.ones(1, 3, dtype=E.float64),))
    assert_unchanged(net, before)


def test_unknown_name_is_set_for_the_call_only():
    """As in torch, a name the module lacks becomes a plain attribute during the call, then disappears."""
    class Uses(nn.Module):
        def forward(self, x):
            return x + self.extra

    for lib, call in ((E, functional_call), (torch, t_functional_call)):
        module = Uses() if lib is E else type("TUses", (torch.nn.Module,), {"forward": Uses.forward})()
        out = call(module, {"extra": lib.ones(2)}, (lib.ones(2),))
        assert out.tolist() == [2.0, 2.0]
        assert not hasattr(module, "extra")


def test_bad_submodule_path():
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        functional_call(mlp(E), {"nope.weight": E.zeros(1)}, (E.ones(1, 3, dtype=E.float64),))


# -- strict ------------------------------------------------------------------------------------------------
def test_strict_missing_and_unexpected_keys_match_torch():
    lin, tlin = nn.Linear(3, 2), torch.nn.Linear(3, 2)
    cases = [{"weight": "w"}, {"weight": "w", "bias": "b", "extra": "e"}, {"weight": "w", "zzz": "z"}]
    for case in cases:
        with pytest.raises(RuntimeError) as ours:
            functional_call(lin, {k: E.zeros(2, 3) for k in case}, (E.ones(1, 3),), strict=True)
        with pytest.raises(RuntimeError) as theirs:
            t_functional_call(tlin, {k: torch.zeros(2, 3) for k in case}, (torch.ones(1, 3),), strict=True)
        assert str(ours.value) == str(theirs.value)
        assert str(ours.value).startswith("Error(s) in reparametrizing for Linear:\n\t")
    out = functional_call(lin, {"weight": E.zeros(2, 3), "bias": E.ones(2)}, (E.ones(1, 3),), strict=True)
    assert out.tolist() == [[1.0, 1.0]]


# -- tied weights ------------------------------------------------------------------------------------------
class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2, bias=False)
        self.b = nn.Linear(2, 2, bias=False)
        self.b.weight = self.a.weight

    def forward(self, x):
        return self.b(self.a(x))


class TTied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(2, 2, bias=False)
        self.b = torch.nn.Linear(2, 2, bias=False)
        self.b.weight = self.a.weight

    def forward(self, x):
        return self.b(self.a(x))


@pytest.mark.parametrize("tie", [True, False])
def test_tied_weights_follow_torch(tie):
    net, tnet = Tied().double(), TTied().double()
    tnet.a.weight.data = torch.tensor(net.a.weight.detach().numpy())
    w, x = arr(2, 2), arr(3, 2)
    out = functional_call(net, {"a.weight": E.tensor(w)}, (E.tensor(x),), tie_weights=tie)
    tout = t_functional_call(tnet, {"a.weight": torch.tensor(w)}, (torch.tensor(x),), tie_weights=tie)
    close(out, tout)
    other = w if tie else net.b.weight.detach().numpy()
    np.testing.assert_allclose(out.detach().numpy(), x @ w.T @ other.T, rtol=1e-12)
    assert net.b.weight is net.a.weight  # still tied afterwards


def test_tied_weights_given_two_values_is_an_error():
    net, tnet = Tied(), TTied()
    with pytest.raises(ValueError) as ours:
        functional_call(net, {"a.weight": E.zeros(2, 2), "b.weight": E.ones(2, 2)}, (E.ones(1, 2),))
    with pytest.raises(ValueError) as theirs:
        t_functional_call(tnet, {"a.weight": torch.zeros(2, 2), "b.weight": torch.ones(2, 2)}, (torch.ones(1, 2),))
    assert str(ours.value) == str(theirs.value)
    same = E.ones(2, 2)  # the same tensor under both names is fine
    assert functional_call(net, {"a.weight": same, "b.weight": same}, (E.ones(1, 2),)).tolist() == [[4.0, 4.0]]


def test_strict_accepts_one_name_of_a_tied_pair():
    net = Tied()
    out = functional_call(net, {"a.weight": E.ones(2, 2)}, (E.ones(1, 2),), strict=True)
    assert out.tolist() == [[4.0, 4.0]]


# -- stack_module_state ------------------------------------------------------------------------------------
def test_stack_module_state_over_three_mlps():
    models = [mlp(E) for _ in range(3)]
    tmodels = [twin(m, mlp(torch)) for m in models]
    params, buffers = stack_module_state(models)
    tparams, tbuffers = t_stack(tmodels)
    assert list(params) == list(tparams) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert buffers == {} and tbuffers == {}
    for k, p in params.items():
        assert tuple(p.shape) == (3,) + tuple(models[0].get_parameter(k).shape)
        assert p.requires_grad and p.is_leaf and p.grad_fn is None
        close(p, tparams[k])
        for i, m in enumerate(models):
            close(p[i], tparams[k][i])
            np.testing.assert_array_equal(p[i].detach().numpy(), m.get_parameter(k).detach().numpy())
    x = arr(5, 3)
    for i, m in enumerate(models):  # each slice of the stack runs model i
        out = functional_call(models[0], {k: v[i] for k, v in params.items()}, (E.tensor(x),))
        close(out, m(E.tensor(x)))
    loss = sum(functional_call(models[0], {k: v[i] for k, v in params.items()}, (E.tensor(x),)).sum()
               for i in range(3))
    grads = E.autograd.grad(loss, list(params.values()))
    assert all(tuple(g.shape) == tuple(p.shape) for g, p in zip(grads, params.values()))
    assert models[0].get_parameter("0.weight").grad is None  # the stack is not linked to the models


def test_stack_module_state_buffers():
    models = [bn_net(E) for _ in range(3)]
    for i, m in enumerate(models):
        m[1].running_mean.copy_(E.full((4,), float(i), dtype=E.float64))
    params, buffers = stack_module_state(models)
    assert list(buffers) == ["1.running_mean", "1.running_var", "1.num_batches_tracked"]
    assert buffers["1.running_mean"][:, 0].tolist() == [0.0, 1.0, 2.0]
    assert not buffers["1.running_mean"].requires_grad
    assert buffers["1.num_batches_tracked"].dtype == E.int64 and tuple(buffers["1.num_batches_tracked"].shape) == (3,)


def test_stack_module_state_errors():
    with pytest.raises(RuntimeError, match=r"^stack_module_state: Expected at least one model, got 0.$"):
        stack_module_state([])
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        stack_module_state([mlp(E), mlp(E).eval()])
    with pytest.raises(RuntimeError, match="same class"):
        stack_module_state([nn.Linear(3, 2), nn.Bilinear(3, 3, 2)])
    with pytest.raises(RuntimeError, match="same parameters"):
        stack_module_state([mlp(E), nn.Sequential(nn.Linear(3, 4))])
    with pytest.raises(RuntimeError, match="same shape"):
        stack_module_state([nn.Linear(3, 2), nn.Linear(3, 5)])
    frozen = nn.Linear(3, 2)
    frozen.weight.requires_grad_(False)
    with pytest.raises(RuntimeError, match=r"Expected weight from each model to have the same \.requires_grad"):
        stack_module_state([nn.Linear(3, 2), frozen])


def test_stack_module_state_accepts_module_list():
    params, _ = stack_module_state(nn.ModuleList([nn.Linear(3, 2), nn.Linear(3, 2)]))
    assert tuple(params["weight"].shape) == (2, 2, 3)
