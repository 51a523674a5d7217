"""FSDP wrap policies: plan_wrapping against PyTorch's own auto-wrap decisions on the same models, and
enable_wrap/wrap."""
import functools

import pytest

import ember
from ember import nn
from ember.distributed.fsdp.wrap import (CustomPolicy, ModuleWrapPolicy, always_wrap_policy, enable_wrap,
                                         lambda_auto_wrap_policy, plan_wrapping, size_based_auto_wrap_policy,
                                         transformer_auto_wrap_policy, wrap)


def build_stack(nn):
    """Nested Sequentials of Linears: sizes differ level by level."""
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(),
                         nn.Sequential(nn.Linear(16, 16), nn.Sequential(nn.Linear(16, 32), nn.Linear(32, 16))),
                         nn.Linear(16, 2))


def build_transformer(nn):
    """A small transformer-like model; returns it and its block class (each framework gets its own class)."""
    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.attn = nn.MultiheadAttention(d, 2)
            self.norm = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    class Net(nn.Module):
        def __init__(self, d=8):
            super().__init__()
            self.embed = nn.Embedding(50, d)
            self.layers = nn.ModuleList([Block(d) for _ in range(3)])
            self.heads = nn.ModuleDict({"lm": nn.Linear(d, 50), "cls": nn.Linear(d, 3)})

    return Net(), Block


def policies(nn, wrap_module, block):
    """The same policies, built from one framework's classes and wrap module."""
    large_linear = functools.partial(lambda_auto_wrap_policy,
                                     lambda_fn=lambda m: isinstance(m, nn.Linear) and m.out_features >= 16)
    custom = wrap_module.CustomPolicy(
        lambda m: {"tag": "block"} if isinstance(m, block) else isinstance(m, (nn.Embedding, nn.LayerNorm)))
    found = {
        "always": wrap_module.always_wrap_policy,
        "transformer": functools.partial(wrap_module.transformer_auto_wrap_policy, transformer_layer_cls={block}),
        "lambda": large_linear,
        "module_classes": wrap_module.ModuleWrapPolicy({block, nn.Embedding}),
        "custom": custom,
        "size_no_leaves": functools.partial(wrap_module.size_based_auto_wrap_policy, min_num_params=200,
                                            force_leaf_modules=set(), exclude_wrap_modules={nn.Sequential}),
    }
    for min_num_params in (1, 50, 300, 600, 1000, 3000, 10 ** 8):
        found[f"size_{min_num_params}"] = functools.partial(wrap_module.size_based_auto_wrap_policy,
                                                            min_num_params=min_num_params)
    return found


POLICY_NAMES = ["always", "transformer", "lambda", "module_classes", "custom", "size_no_leaves"] + \
    [f"size_{n}" for n in (1, 50, 300, 600, 1000, 3000, 10 ** 8)]


def torch_plan(torch, model, policy, ignored_names=()):
    """What PyTorch's FSDP auto-wrap (torch.distributed.fsdp._wrap_utils._auto_wrap) wraps, in order."""
    from torch.distributed.fsdp._wrap_utils import _auto_wrap
    names = {id(m): name for name, m in model.named_modules()}
    ignored = {m for name in ignored_names for m in model.get_submodule(name).modules()}
    chosen = []

    def record(module, **kwargs):
        chosen.append((names[id(module)], {k: v for k, v in kwargs.items() if k not in ("mixed_precision", "policy")}))
        return module

    _auto_wrap(model, policy, ignored, {p for m in ignored for p in m.parameters()}, {"mixed_precision": None},
               record)
    return chosen


def ember_plan(model, policy, ignored_names=()):
    names = {id(m): name for name, m in model.named_modules()}
    ignored = [model.get_submodule(name) for name in ignored_names]
    ignored_params = {id(p) for m in ignored for p in m.parameters()}
    return [(names[id(m)], overrides)
            for m, overrides in plan_wrapping(model, policy, ignored_params, ignored_modules=ignored)]


def both_models(build):
    torch = pytest.importorskip("torch")
    import torch.distributed.fsdp.wrap as torch_wrap
    from ember.distributed.fsdp import wrap as ember_wrap
    built = [build(torch.nn), build(nn)]
    (torch_model, torch_block), (ember_model, ember_block) = [b if isinstance(b, tuple) else (b, None) for b in built]
    numels = [{name: p.numel() for name, p in m.named_parameters()} for m in (torch_model, ember_model)]
    assert numels[0] == numels[1]  # the same model in both, or the comparison means nothing
    return (torch, torch_model, policies(torch.nn, torch_wrap, torch_block),
            ember_model, policies(nn, ember_wrap, ember_block))


@pytest.mark.parametrize("policy", POLICY_NAMES)
@pytest.mark.parametrize("build", [build_transformer, build_stack], ids=["transformer", "stack"])
def test_plan_matches_pytorch(build, policy):
    if build is build_stack and policy in ("transformer", "module_classes", "custom"):
        pytest.skip("the stack has no blocks")
    torch, torch_model, torch_policies, ember_model, ember_policies = both_models(build)
    expected = torch_plan(torch, torch_model, torch_policies[policy])
    assert ember_plan(ember_model, ember_policies[policy]) == expected


@pytest.mark.parametrize("policy", ["always", "module_classes", "custom", "size_50", "size_600"])
def test_ignored_modules_and_parameters_match_pytorch(policy):
    torch, torch_model, torch_policies, ember_model, ember_policies = both_models(build_transformer)
    ignored = ("heads", "layers.1.mlp")
    expected = torch_plan(torch, torch_model, torch_policies[policy], ignored)
    got = ember_plan(ember_model, ember_policies[policy], ignored)
    assert got == expected
    assert not any(name.startswith(ignored) for name, _ in got)


def test_the_plan_is_post_order_and_never_holds_the_root():
    model, block = build_transformer(nn)
    plan = plan_wrapping(model, always_wrap_policy, set())
    order = [name for m, _ in plan for name, other in model.named_modules() if other is m]
    assert order[:4] == ["embed", "layers.0.attn.out_proj", "layers.0.attn", "layers.0.norm"]
    assert order[-3:] == ["heads.lm", "heads.cls", "heads"] and "" not in order
    assert all(overrides == {} for _, overrides in plan)
    assert plan_wrapping(model, None, set()) == []


def test_a_shared_parameter_counts_once():
    """PyTorch's _recursive_wrap counts a tied weight in every module holding it; here it belongs to the first
    unit that takes it, so the tied head alone (its bias) stays below the threshold."""
    model, _ = build_transformer(nn)
    model.heads["lm"].weight = model.embed.weight  # 400 numel; the head's bias is 50
    policy = functools.partial(size_based_auto_wrap_policy, min_num_params=300)
    wrapped = [m for m, _ in plan_wrapping(model, policy, set())]
    assert model.embed in wrapped and model.heads["lm"] not in wrapped
    # ignoring the tied weight leaves the embedding with nothing to count
    wrapped = [m for m, _ in plan_wrapping(model, policy, {id(model.embed.weight)})]
    assert model.embed not in wrapped and model.layers[0] in wrapped


def test_a_module_registered_twice_is_planned_once():
    shared = nn.Linear(4, 4)
    model = nn.Sequential(shared, nn.ReLU(), shared)
    assert [m for m, _ in plan_wrapping(model, always_wrap_policy, set())] == [shared, model[1]]
    assert [m for m, _ in plan_wrapping(model, ModuleWrapPolicy({nn.Linear}), set())] == [shared]


def test_size_based_defaults_follow_pytorch():
    assert size_based_auto_wrap_policy.EXCLUDE_WRAP_MODULES == {nn.ModuleList, nn.ModuleDict}
    assert size_based_auto_wrap_policy.FORCE_LEAF_MODULES == {nn.MultiheadAttention}
    attention, blocks = nn.MultiheadAttention(8, 2), nn.ModuleList([nn.Linear(2, 2)])
    assert not size_based_auto_wrap_policy(attention, recurse=True, nonwrapped_numel=10 ** 9)
    assert size_based_auto_wrap_policy(attention, recurse=False, nonwrapped_numel=10 ** 8)
    assert not size_based_auto_wrap_policy(attention, recurse=False, nonwrapped_numel=10 ** 8 - 1)
    assert size_based_auto_wrap_policy(blocks, recurse=True, nonwrapped_numel=10 ** 8)
    assert not size_based_auto_wrap_policy(blocks, recurse=False, nonwrapped_numel=10 ** 9)


def test_module_wrap_policy_is_also_a_callable_policy():
    policy = ModuleWrapPolicy([nn.Linear])
    assert policy(nn.ReLU(), True, 0) and policy(nn.Linear(2, 2), False, 0) and not policy(nn.ReLU(), False, 0)
    assert repr(policy).endswith(f"({{{nn.Linear!r}}})")
    assert transformer_auto_wrap_policy(nn.Linear(2, 2), recurse=False, nonwrapped_numel=0,
                                        transformer_layer_cls=[nn.Linear])


def test_bad_policies_are_clear_errors():
    model = nn.Sequential(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="should return False/True or a kwarg dict, but it returned 1"):
        plan_wrapping(model, CustomPolicy(lambda m: 1), set())
    with pytest.raises(TypeError, match="plan_wrapping: the auto_wrap_policy must be a callable .* got int"):
        plan_wrapping(model, 3, set())


class Wrapper(nn.Module):
    """A stand-in wrapper class for enable_wrap: keeps the module and the kwargs it was given."""

    def __init__(self, module, **kwargs):
        super().__init__()
        self.module, self.kwargs = module, kwargs


def test_wrap_only_wraps_inside_enable_wrap():
    layer = nn.Linear(2, 2)
    assert wrap(layer, flag=1) is layer
    with enable_wrap(wrapper_cls=Wrapper, flag=0, mode="a"):
        wrapped = wrap(layer, flag=1)
        layer._wrap_overrides = {"mode": "b"}  # a module's own overrides win, as in PyTorch
        overridden = wrap(layer)
    assert isinstance(wrapped, Wrapper) and wrapped.module is layer and wrapped.kwargs == {"flag": 1, "mode": "a"}
    assert overridden.kwargs == {"flag": 0, "mode": "b"}
    assert wrap(layer) is layer  # the context is closed again
    x = ember.ones(1, 2)
    assert wrapped.module(x).tolist() == layer(x).tolist()


def test_enable_wrap_does_not_nest_and_closes_on_error():
    with enable_wrap(wrapper_cls=Wrapper):
        with pytest.raises(NotImplementedError, match="do not supported nested autowrap"):
            with enable_wrap(wrapper_cls=Wrapper):
                pass
    with pytest.raises(RuntimeError, match="inside"):
        with enable_wrap(wrapper_cls=Wrapper):
            raise RuntimeError("inside")
    assert wrap(nn.ReLU()).__class__ is nn.ReLU
