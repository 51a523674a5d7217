"""ember.compile on whole models: the benchmark's four workloads, made small, on every backend that runs here.

Compiled and eager runs start from the same weights and inputs and must agree within a relative 1e-5
(absolute 1e-6 near zero) in float32: fusion may reorder the arithmetic of an elementwise chain, so
bitwise equality is not asked for. Weights after training steps are compared within 1e-5 absolute (the
Adam optimizers use an eps above rounding noise: see ``compile_models.ADAM_EPS``). Every compiled
callable is called with more than one batch, so the replayed graph (not only the capturing first call)
is checked, and inputs are not baked into it.
"""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

import ember
from compile_models import GPT_CONFIG, GPT_EXAMPLE, WORKLOADS, gpt, gpt_example, training_step

STATUS = ember.backends.available()
DEVICES = [pytest.param(name, marks=pytest.mark.skipif(STATUS.get(name) != "available",
                                                       reason=f"{name}: {STATUS.get(name, 'not registered')}"))
           for name in ("cpu", "opencl", "template")]
RTOL, ATOL = 1e-5, 1e-6
WEIGHTS_ATOL = 1e-5  # after optimizer steps: see the module docstring
PREFIX = "_orig_mod."


@pytest.fixture(autouse=True)
def fresh_compiler():
    """Each test compiles from scratch: no cached graphs from another test."""
    ember.compiler.reset()
    yield
    ember.compiler.reset()


def assert_close(actual, expected, what: str = "", atol: float = ATOL) -> None:
    ember.testing.assert_close(actual, expected, rtol=RTOL, atol=atol, msg=lambda m: f"{what}: {m}" if what else m)


@pytest.mark.parametrize("key", WORKLOADS)
@pytest.mark.parametrize("device", DEVICES)
def test_compiled_forward_equals_eager(device, key):
    workload = WORKLOADS[key]
    model = workload.build(device)
    compiled = ember.compile(model)
    assert isinstance(compiled, ember.nn.Module) and compiled._orig_mod is model
    for seed in range(3):
        x, _ = workload.tensors(device, seed)
        assert_close(compiled(x), model(x), f"{key} forward, batch {seed}")


@pytest.mark.parametrize("key", WORKLOADS)
@pytest.mark.parametrize("device", DEVICES)
def test_compiled_gradients_equal_eager(device, key):
    workload = WORKLOADS[key]
    model = workload.build(device)
    compiled = ember.compile(model)
    for seed in range(2):
        x, y = workload.tensors(device, seed)
        grads = []
        for run in (model, compiled):
            model.zero_grad()
            loss = workload.loss(run, x, y)
            loss.backward()
            grads.append({name: p.grad.clone() for name, p in model.named_parameters()})
        assert grads[1].keys() == grads[0].keys()
        for name in grads[0]:
            assert_close(grads[1][name], grads[0][name], f"{key} gradient of {name}, batch {seed}")


@pytest.mark.parametrize("key", WORKLOADS)
@pytest.mark.parametrize("device", DEVICES)
def test_three_compiled_training_steps_equal_eager(device, key):
    workload = WORKLOADS[key]
    eager_model, compiled_model = workload.build(device), workload.build(device)
    eager_step = training_step(workload, eager_model)
    compiled_step = ember.compile(training_step(workload, compiled_model))
    for seed in range(3):
        x, y = workload.tensors(device, seed)
        assert_close(compiled_step(x, y), eager_step(x, y), f"{key} loss of step {seed + 1}")
    expected, initial = eager_model.state_dict(), workload.build(device).state_dict()
    for name, value in compiled_model.state_dict().items():
        assert_close(value, expected[name], f"{key} {name} after 3 steps", atol=WEIGHTS_ATOL)
    assert any(not ember.equal(value, initial[name]) for name, value in expected.items()), "the steps changed nothing"


@pytest.mark.parametrize("key", WORKLOADS)
@pytest.mark.parametrize("device", DEVICES)
def test_whole_training_step_is_one_graph(device, key):
    """fullgraph=True: zero_grad, forward, loss, backward and the optimizer step are captured with no break."""
    workload = WORKLOADS[key]
    step = ember.compile(training_step(workload, workload.build(device)), fullgraph=True)
    for seed in range(2):
        assert ember.isfinite(step(*workload.tensors(device, seed))).item()
    explained = ember._dynamo.explain(training_step(workload, workload.build(device)))(*workload.tensors(device))
    assert (explained.graph_count, explained.graph_break_count) == (1, 0), explained.break_reasons


@pytest.mark.parametrize("device", DEVICES)
def test_explain_a_gpt_step_fused_into_fewer_kernels(device):
    """ember.compiler.explain (the spelling issue 18 gives; PyTorch's is torch._dynamo.explain) of the whole step."""
    workload = WORKLOADS["gpt"]
    explained = ember.compiler.explain(training_step(workload, workload.build(device)))(*workload.tensors(device))
    assert (explained.graph_count, explained.graph_break_count) == (1, 0), explained.break_reasons
    kernels, ops = explained.kernels_per_graph[0], len(explained.ops_per_graph[0])
    # cpu and opencl generate fused elementwise kernels; a backend without the codegen hook runs op by op
    assert kernels < ops if device in ("cpu", "opencl") else kernels == ops, (kernels, ops)


@pytest.mark.parametrize("key", WORKLOADS)
@pytest.mark.parametrize("device", DEVICES)
def test_compiled_state_dict_has_prefix_and_loads_into_eager_model(device, key):
    workload = WORKLOADS[key]
    model = workload.build(device)
    compiled = ember.compile(model)
    x, _ = workload.tensors(device)
    compiled(x)
    state = compiled.state_dict()
    assert list(state) == [PREFIX + name for name in model.state_dict()]
    fresh = workload.build(device, seed=1)
    with pytest.raises(RuntimeError, match="Unexpected key"):  # as in PyTorch: the prefix must be stripped
        fresh.load_state_dict(state)
    fresh.load_state_dict({name.removeprefix(PREFIX): value for name, value in state.items()})
    assert_close(fresh(x), model(x), f"{key} forward after loading the compiled state_dict")


@pytest.mark.parametrize("device", DEVICES)
def test_gpt_with_dropout_compiles_and_trains(device):
    ember.manual_seed(0)
    model = gpt(dropout=0.1).to(device)
    x, y = WORKLOADS["gpt"].tensors(device)
    compiled = ember.compile(model)
    first, second = compiled(x), compiled(x)
    assert not ember.allclose(first, second), "dropout drew the same mask on two calls: it was baked into the graph"
    model.eval()
    assert_close(compiled(x), model(x), "gpt eval forward (dropout off)")
    model.train()

    step = ember.compile(training_step(WORKLOADS["gpt"], model, gpt_example.gpt_optimizer(ember, model, lr=1e-2)))
    losses = [step(x, y).item() for _ in range(12)]
    assert all(np.isfinite(losses)), losses
    assert np.mean(losses[-3:]) < losses[0] - 0.5, f"the loss did not go down on a fixed batch: {losses}"


def test_gpt_matches_pytorch_from_the_same_weights():
    """The GPT and its two-group AdamW are the same model on both frameworks: eval loss and one step."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    reference = gpt_example.gpt(torch, GPT_CONFIG)
    model = gpt()
    model.load_state_dict({name: ember.tensor(value.numpy()) for name, value in reference.state_dict().items()})
    assert model.lm_head.weight is model.wte.weight and reference.lm_head.weight is reference.wte.weight
    x, y = WORKLOADS["gpt"].batch(np.random.default_rng(0))

    def losses():
        model.eval(), reference.eval()
        with torch.no_grad(), ember.no_grad():
            mine = model(ember.tensor(x), ember.tensor(y))[1].item()
            theirs = reference(torch.tensor(x), torch.tensor(y))[1].item()
        model.train(), reference.train()
        return mine, theirs

    mine, theirs = losses()
    assert mine == pytest.approx(theirs, rel=1e-5)
    optimizers = gpt_example.gpt_optimizer(ember, model), gpt_example.gpt_optimizer(torch, reference)
    assert [len(g["params"]) for g in optimizers[0].param_groups] == \
        [len(g["params"]) for g in optimizers[1].param_groups] == [4 * GPT_CONFIG.n_layer, 8 * GPT_CONFIG.n_layer + 4]
    for lib, net, optimizer in ((ember, model, optimizers[0]), (torch, reference, optimizers[1])):
        optimizer.zero_grad()
        net(lib.tensor(x), lib.tensor(y))[1].backward()
        optimizer.step()
    # default eps 1e-8: this GPT's key-bias gradient noise (~1e-12) is far below it
    for name, value in reference.state_dict().items():
        np.testing.assert_allclose(model.state_dict()[name].numpy(), value.numpy(), rtol=RTOL, atol=WEIGHTS_ATOL,
                                   err_msg=f"{name} after one AdamW step")
    mine, theirs = losses()
    assert mine == pytest.approx(theirs, rel=1e-5)


def test_gpt_example_trains_with_its_step_compiled():
    done = subprocess.run([sys.executable, str(GPT_EXAMPLE), "--steps", "30", "--compile"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"examples/gpt.py --compile exited with {done.returncode}:\n{done.stderr}"
    found = re.search(r"eval loss (\d+\.\d+) after 30 steps .*uniform: (\d+\.\d+)\)", done.stdout)
    assert found, done.stdout
    assert float(found.group(1)) < float(found.group(2)) - 0.5, done.stdout
