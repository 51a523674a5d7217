"""ember.compile's capture, guards, replay, breaks and explain (models end to end: test_compile_models.py)."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn


def _mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def _trainer(model, optimizer_class=ember.optim.Adam, **options):
    optimizer = optimizer_class(model.parameters(), lr=0.05, **options)
    x, y = ember.randn(5, 8), ember.randint(0, 4, (5,))

    def step():
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss
    return step


def _max_difference(a, b) -> float:
    return max(float(np.abs(p.detach().numpy() - q.detach().numpy()).max()) for p, q in zip(a, b))


@pytest.mark.parametrize("optimizer_class", [ember.optim.Adam, ember.optim.SGD])
def test_a_compiled_training_step_matches_eager_steps(optimizer_class):
    eager_model, compiled_model = _mlp(), _mlp()
    ember.manual_seed(1)
    eager = _trainer(eager_model, optimizer_class)
    ember.manual_seed(1)
    compiled = ember.compile(_trainer(compiled_model, optimizer_class))
    losses = [(float(eager()), float(compiled())) for _ in range(4)]
    assert all(a == b for a, b in losses)
    assert _max_difference(eager_model.parameters(), compiled_model.parameters()) == 0.0
    captures = compiled._ember_compiled.captures
    assert all(entry is not None for _, entry, _ in captures)
    assert captures[-1][1].program.eager_calls == 1  # optimizer.step() runs as itself


def test_the_last_capture_is_replayed_without_capturing_again():
    compiled = ember.compile(_trainer(_mlp()))
    for _ in range(5):
        compiled()
    assert len(compiled._ember_compiled.captures) == 2  # gradients unset at the first call, set later


def test_compiled_module_forward_and_gradients_match_eager():
    model = _mlp()
    compiled = ember.compile(model)
    x = ember.randn(5, 8, requires_grad=True)
    h = x * 2  # an argument with a history: its gradient must flow through the compiled region
    for _ in range(2):
        model.zero_grad()
        x.grad = None
        compiled(h).pow(2).sum().backward(retain_graph=True)
        compiled_grads = [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy().copy()]
        model.zero_grad()
        x.grad = None
        model(h).pow(2).sum().backward(retain_graph=True)
        eager_grads = [p.grad.numpy() for p in model.parameters()] + [x.grad.numpy()]
        for a, b in zip(compiled_grads, eager_grads):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    entry = compiled._compiled_call.captures[-1][1]
    assert entry.differentiable and entry.backward.ops_captured > 0


def test_a_compiled_backward_frees_its_saved_values_and_refuses_double_backward():
    compiled = ember.compile(_mlp())
    x = ember.randn(5, 8)
    compiled(x)  # capture
    loss = compiled(x).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()
    y = ember.randn(5, 8, requires_grad=True)
    out = compiled(y).sum()
    out = compiled(y).sum()
    with pytest.raises(RuntimeError, match="create_graph"):
        ember.autograd.grad(out, y, create_graph=True)


def test_guards_capture_again_for_new_shapes_modes_and_flags():
    model = _mlp()
    compiled = ember.compile(model)
    calls = compiled._compiled_call
    with ember.no_grad():
        for batch in (5, 5, 7, 5):
            np.testing.assert_array_equal(compiled(ember.randn(batch, 8) * 0).numpy(),
                                          model(ember.zeros(batch, 8)).numpy())
        assert len(calls.captures) == 2
        model.eval()
        compiled(ember.randn(5, 8))
        assert len(calls.captures) == 3
    compiled(ember.randn(5, 8))  # grad mode on: differentiable
    assert len(calls.captures) == 4
    model[0].weight.requires_grad_(False)
    compiled(ember.randn(5, 8))
    assert len(calls.captures) == 5


def test_a_replaced_parameter_is_seen():
    model = _mlp()
    compiled = ember.compile(model)
    x = ember.randn(5, 8)
    with ember.no_grad():
        compiled(x)
        model[2].weight = nn.Parameter(ember.zeros(4, 16))
        model[2].bias = nn.Parameter(ember.ones(4))
        np.testing.assert_array_equal(compiled(x).numpy(), np.ones((5, 4), np.float32))


def test_in_place_updates_of_buffers_replay_and_bump_versions():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
    reference = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
    reference.load_state_dict(model.state_dict())
    compiled = ember.compile(model)
    x = ember.randn(4, 1, 6, 6)
    with ember.no_grad():
        for _ in range(3):
            version = model[1].running_mean._version[0]
            compiled(x)
            reference(x)
            assert model[1].running_mean._version[0] > version
    np.testing.assert_allclose(model[1].running_mean.numpy(), reference[1].running_mean.numpy(), rtol=1e-6)
    assert int(model[1].num_batches_tracked) == 3


def test_random_ops_draw_fresh_numbers_at_each_replay():
    compiled = ember.compile(lambda x: F.dropout(x, 0.5, training=True))
    x = ember.ones(1000)
    masks = [compiled(x).numpy() for _ in range(3)]
    assert not np.array_equal(masks[1], masks[2])
    assert 300 < int((masks[2] == 0).sum()) < 700


def test_a_host_read_breaks_the_graph_and_the_modules_still_run_compiled():
    model = _mlp()
    step = _trainer(model)
    compiled = ember.compile(lambda: float(step()))
    values = [compiled() for _ in range(3)]
    assert values[0] > values[-1]
    function = compiled._ember_compiled
    assert function.broken and "float" in next(iter(function.broken.values()))[0]
    children = list(function._children.values())
    assert len(children) == 1 and children[0].entries  # the model: captured and replayed


def test_fullgraph_names_the_break_and_its_source_line():
    def f(a):
        return a.exp() if a.sum() > 0 else a
    with pytest.raises(ember.compiler.GraphBreak, match=r"test_compile\.py:\d+ \(return a\.exp\(\)"):
        ember.compile(f, fullgraph=True)(ember.ones(3))


def test_data_dependent_control_flow_stays_correct():
    def f(a):
        b = a * 2
        if b.sum() > 0:
            return b.exp()
        return b
    compiled = ember.compile(f)
    for sign in (1, -1, 1, -1):
        x = ember.ones(3) * sign
        np.testing.assert_array_equal(compiled(x).numpy(), f(x).numpy())


def test_explain_counts_graphs_breaks_and_kernels():
    model = _mlp()
    x = ember.randn(5, 8)
    with ember.no_grad():
        out = ember._dynamo.explain(model)(x)
    assert (out.graph_count, out.graph_break_count, out.op_count) == (1, 0, 3)
    assert out.kernels_per_graph == [3] and out.ops_per_graph == [["linear", "relu", "linear"]]
    broken = ember._dynamo.explain(lambda a: (a * 2).sum().item() + (a + 1).sum().item())(x)
    assert broken.graph_break_count == 2 and broken.graph_count == 2
    assert "item" in str(broken.break_reasons[0])


def test_disable_runs_a_function_as_itself_inside_compiled_code():
    seen = []

    @ember.compiler.disable
    def log_value(t):
        seen.append(float(t.sum()))

    def f(a):
        b = a * 2
        log_value(b)
        return b + 1
    compiled = ember.compile(f)
    for k in range(3):
        np.testing.assert_array_equal(compiled(ember.ones(2) * k).numpy(), np.full(2, 2 * k + 1, np.float32))
    assert seen == [0.0, 4.0, 8.0]
    assert compiled._ember_compiled.entries


def test_recompile_limit_falls_back_to_eager_with_a_logged_reason(caplog, monkeypatch):
    monkeypatch.setattr(ember._dynamo.config, "recompile_limit", 2)
    compiled = ember.compile(lambda a: a + 1)
    with caplog.at_level(logging.WARNING, logger="ember._dynamo"):
        for n in range(1, 5):
            assert compiled(ember.zeros(n)).shape == (n,)
    assert len(compiled._ember_compiled.captures) == 2
    assert "recompile limit" in caplog.text


def test_reset_forgets_captures():
    compiled = ember.compile(lambda a: a + 1)
    compiled(ember.zeros(2))
    ember.compiler.reset()
    assert not compiled._ember_compiled.captures


def test_optimized_module_is_a_module_with_prefixed_state_dict_keys():
    model = _mlp()
    compiled = ember.compile(model)
    assert isinstance(compiled, nn.Module) and compiled._orig_mod is model
    assert list(compiled.state_dict()) == [f"_orig_mod.{k}" for k in model.state_dict()]
    model.vocabulary = ["a", "b"]
    assert compiled.vocabulary is model.vocabulary  # other attributes are the module's
    assert ember.compiler.disable(compiled) is model


def test_autocast_inside_and_outside_is_captured_as_cast_ops():
    model = _mlp()
    compiled = ember.compile(model)
    x = ember.randn(5, 8)
    with ember.no_grad(), ember.autocast("cpu"):
        assert compiled(x).dtype == ember.bfloat16
        out = compiled(x)
        expected = model(x)
    assert out.dtype == ember.bfloat16
    np.testing.assert_array_equal(out.float().numpy(), expected.float().numpy())
    with ember.no_grad():
        assert compiled(x).dtype == ember.float32


def test_value_checks_still_run_in_replay():
    embedding = nn.Embedding(4, 3)
    compiled = ember.compile(embedding)
    with ember.no_grad():
        compiled(ember.tensor([0, 1]))
        with pytest.raises(Exception, match="index"):
            compiled(ember.tensor([0, 9]))


def test_compile_validates_its_arguments_like_pytorch():
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        ember.compile(_mlp(), mode="fastest")
    with pytest.raises(ValueError, match="backend"):
        ember.compile(_mlp(), backend="tvm")
    model = _mlp()
    assert ember.compile(model, disable=True) is model
    decorated = ember.compile(fullgraph=True)(lambda a: a * 3)
    np.testing.assert_array_equal(decorated(ember.ones(2)).numpy(), [3, 3])
    assert ember.compiler.is_compiling() is False


def test_is_compiling_is_true_while_capturing():
    seen = []
    compiled = ember.compile(lambda a: seen.append(ember.compiler.is_compiling()) or a + 1)
    compiled(ember.ones(1))
    assert seen == [True]


def test_lr_scheduler_steps_inside_a_compiled_step_take_effect():
    model = _mlp()
    optimizer = ember.optim.SGD(model.parameters(), lr=1.0)
    scheduler = ember.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    x = ember.randn(5, 8)

    @ember.compile
    def step():
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
        scheduler.step()
    for _ in range(4):
        step()
    assert optimizer.param_groups[0]["lr"] == 0.0625


def test_a_mixed_precision_step_with_scaler_and_clipping_matches_eager():
    def trainer(model):
        optimizer = ember.optim.SGD(model.parameters(), lr=0.1)
        scaler = ember.amp.GradScaler("cpu", init_scale=2.0 ** 10)
        x, y = ember.randn(5, 8), ember.randint(0, 4, (5,))

        def step():
            optimizer.zero_grad()
            with ember.autocast("cpu"):
                loss = F.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            scaler.step(optimizer)
            scaler.update()
            return loss
        return step
    eager_model, compiled_model = _mlp(), _mlp()
    ember.manual_seed(3)
    eager = trainer(eager_model)
    ember.manual_seed(3)
    compiled = ember.compile(trainer(compiled_model))
    assert [float(eager()) for _ in range(4)] == [float(compiled()) for _ in range(4)]
    assert _max_difference(eager_model.parameters(), compiled_model.parameters()) == 0.0
    graph, entry, _ = compiled._ember_compiled.captures[-1]
    assert not graph.breaks and entry.program.eager_calls == 3  # unscale_, step, update run as themselves


def _fusing() -> bool:
    from ember.backends.cpu.fusion import numba_available
    return numba_available()


@pytest.mark.skipif(not _fusing(), reason="the cpu backend fuses with numba, which is not installed")
def test_an_elementwise_chain_becomes_one_kernel_with_the_same_values():
    def f(a, b):
        return ((a + b) * 0.5).relu() - a * 2
    a, b = ember.randn(4, 5), ember.randn(5)
    out = ember._dynamo.explain(f)(a, b)
    assert out.op_count == 5 and out.kernels_per_graph == [1] and out.fused_groups_per_graph == [1]
    compiled = ember.compile(f)
    compiled(a, b)
    np.testing.assert_array_equal(compiled(a, b).numpy(), f(a, b).numpy())


def test_fusion_keeps_reads_before_a_later_write_in_place():
    def f(a, b):
        c = a * 2 + b
        b.add_(1)  # written after c read it: c must not see the new b
        return c * b
    compiled = ember.compile(f)
    results = []
    for _ in range(3):
        a, b, b_eager = ember.ones(3), ember.ones(3), ember.ones(3)
        results.append((compiled(a, b).numpy(), f(a, b_eager).numpy(), b.numpy(), b_eager.numpy()))
    for got, expected, b_after, b_eager_after in results:
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(b_after, b_eager_after)


@pytest.mark.skipif(not _fusing(), reason="the cpu backend fuses with numba, which is not installed")
def test_an_elementwise_chain_ending_in_a_reduction_is_one_kernel():
    def f(a, b):
        return ((a - b) * (a - b)).sum(dim=1), (a * 2).amax()
    a, b = ember.randn(6, 7), ember.randn(7)
    out = ember._dynamo.explain(f)(a, b)
    assert out.op_count == 6 and out.kernels_per_graph == [2]  # sub, sub, mul, sum | mul, amax
    compiled = ember.compile(f)
    compiled(a, b)
    for got, expected in zip(compiled(a, b), f(a, b)):
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)
