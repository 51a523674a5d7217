"""``ember.compile(mode="reduce-overhead")``: the static memory plan, its fallbacks, and parity with eager.

On cpu and opencl (no device graphs) the plan runs the program on static input buffers: these tests check
what it does there (inputs copied in, outputs fresh, in-place writes given back, nothing allocated by the
plan per replay) and that training gives eager's losses and weights. Capture itself is CUDA-only
(``backends/cuda/graphs.py``); its host bookkeeping of random offsets is tested in test_cuda_graphs_api.py.
"""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import ember
from ember import nn
from ember.compiler.reduce_overhead import ReplayedDifferentiableEntry, ReplayedPlainEntry
from ember.nn import functional as F
from compile_models import WORKLOADS

STATUS = ember.backends.available()
DEVICES = [pytest.param(name, marks=pytest.mark.skipif(STATUS.get(name) != "available",
                                                       reason=f"{name}: {STATUS.get(name, 'not registered')}"))
           for name in ("cpu", "opencl", "cuda")]


@pytest.fixture(autouse=True)
def fresh_compiler():
    ember.compiler.reset()
    yield
    ember.compiler.reset()


def _entry(compiled_fn):
    compiled = getattr(compiled_fn, "_ember_compiled", compiled_fn)
    entries = list(compiled.entries.values())
    assert len(entries) == 1, entries
    return entries[0]


def _loss_and_grads(model, mode: str):
    """``(x, y) -> loss`` that also leaves the gradients in ``.grad``: eager, or compiled in ``mode``."""
    def loss_and_grads(x, y):
        loss = F.mse_loss(model(x), y)
        loss.backward()
        return loss
    return loss_and_grads if mode == "eager" else ember.compile(loss_and_grads, mode=mode)


def _mlp(device: str) -> nn.Module:
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.25), nn.Linear(16, 3)).to(device)


def _batches(device: str, count: int = 4):
    rng = np.random.default_rng(1)
    return [(ember.tensor(rng.standard_normal((5, 6), dtype=np.float32), device=device),
             ember.tensor(rng.standard_normal((5, 3), dtype=np.float32), device=device)) for _ in range(count)]


@pytest.mark.parametrize("device", DEVICES)
def test_mlp_with_dropout_and_adam_trains_as_eager(device):
    """Forward and backward compiled, Adam stepping outside: the same losses, dropout masks and weights."""
    results = {}
    for mode in ("eager", "reduce-overhead"):
        model = _mlp(device)
        opt = ember.optim.Adam(model.parameters(), lr=1e-2)
        run = _loss_and_grads(model, mode)
        ember.manual_seed(7)  # the dropout masks: drawn in the same order in both modes
        losses = []
        for x, y in _batches(device):
            opt.zero_grad()
            losses.append(run(x, y).item())
            opt.step()
        results[mode] = losses, [p.detach().cpu().numpy() for p in model.parameters()]
        if mode != "eager":
            assert isinstance(_entry(run), ReplayedPlainEntry)  # the static plan ran, not a fallback
    np.testing.assert_allclose(results["reduce-overhead"][0], results["eager"][0], rtol=1e-5)
    for got, want in zip(results["reduce-overhead"][1], results["eager"][1]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert len(set(results["eager"][0])) == 4  # the steps did train (and masks differed)


@pytest.mark.parametrize("device", DEVICES)
def test_whole_step_with_graph_safe_adam_replays_and_trains_as_eager(device):
    """zero_grad, forward with dropout, backward and a capturable Adam step, compiled as one: through the plan
    (no fallback) once Adam's state exists, with eager's losses and weights."""
    results = {}
    for mode in ("eager", "reduce-overhead"):
        model = _mlp(device)
        opt = ember.optim.Adam(model.parameters(), lr=1e-2, capturable=True, foreach=True)

        def step(x, y):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss
        run = step if mode == "eager" else ember.compile(step, mode="reduce-overhead")
        ember.manual_seed(7)
        losses = [run(x, y).item() for x, y in _batches(device, 5)]
        results[mode] = losses, [p.detach().cpu().numpy() for p in model.parameters()]
        if mode != "eager":
            entries = list(run._ember_compiled.entries.values())
            assert entries and all(isinstance(e, ReplayedPlainEntry) for e in entries), \
                [getattr(e, "cudagraph_skips", None) for e in entries]
    np.testing.assert_allclose(results["reduce-overhead"][0], results["eager"][0], rtol=1e-5)
    for got, want in zip(results["reduce-overhead"][1], results["eager"][1]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_gpt_step_matches_eager():
    """The GPT-like whole step (zero_grad, forward, loss, backward, AdamW), compiled as one: eager's losses."""
    workload = WORKLOADS["gpt"]
    losses = {}
    for mode in ("eager", "reduce-overhead"):
        model = workload.build("cpu")
        opt = workload.optimizer(model)

        def step(x, y):
            opt.zero_grad()
            loss = workload.loss(model, x, y)
            loss.backward()
            opt.step()
            return loss
        run = step if mode == "eager" else ember.compile(step, mode="reduce-overhead")
        losses[mode] = [run(*workload.tensors("cpu", seed)).item() for seed in (0, 1, 2, 0)]
    np.testing.assert_allclose(losses["reduce-overhead"], losses["eager"], rtol=1e-5)


def test_fresh_inputs_are_copied_into_static_buffers():
    f = ember.compile(lambda x, y: x * 2 + y, mode="reduce-overhead")
    xs = [ember.tensor(np.arange(4, dtype=np.float32) + k) for k in range(3)]
    y = ember.ones(4)
    f(xs[0], y)  # the capture
    f(xs[1], y)
    graph = _entry(f).program
    buffers = [b for b in graph.static]
    assert all(b is not None for b in buffers)  # both arguments are copied
    out = f(xs[2], y)
    assert [b is a for a, b in zip(buffers, graph.static)] == [True, True]  # the same buffers every replay
    np.testing.assert_array_equal(graph.static[0], xs[2].numpy())  # holding the latest call's values
    assert graph.static[0] is not xs[2]._data  # copies: the caller's tensor is not the buffer
    np.testing.assert_array_equal(out.numpy(), xs[2].numpy() * 2 + 1)


def test_parameters_are_read_in_place():
    lin = nn.Linear(3, 2)
    f = ember.compile(lin, mode="reduce-overhead")
    x = ember.ones(1, 3)
    with ember.no_grad():
        f(x)
        f(x)
        graph = _entry(f._compiled_call).program
        copied = dict(zip((i.kind for i in _entry(f._compiled_call).graph.inputs), graph.copied))
        assert copied == {"arg": True, "object": False}
        lin.weight.add_(1.0)  # in place: the next replay reads the new values
        np.testing.assert_allclose(f(x).numpy(), lin(x).numpy(), rtol=1e-6)


def test_outputs_of_a_call_are_not_overwritten_by_the_next():
    f = ember.compile(lambda x: (x + 1).sum(0), mode="reduce-overhead")
    first = f(ember.ones(3, 2))
    second = f(ember.ones(3, 2))
    third = f(ember.zeros(3, 2))
    np.testing.assert_array_equal(second.numpy(), [6.0, 6.0])  # still the second call's values
    np.testing.assert_array_equal(third.numpy(), [3.0, 3.0])
    assert first._data is not second._data is not third._data


def test_in_place_writes_to_arguments_reach_the_caller():
    def bump(x):
        x.add_(1)
        return x * 2
    f = ember.compile(bump, mode="reduce-overhead")
    for k in range(3):
        x = ember.zeros(2)
        out = f(x)
        np.testing.assert_array_equal(x.numpy(), [1.0, 1.0])  # the static buffer's write went back to x
        np.testing.assert_array_equal(out.numpy(), [2.0, 2.0])


def test_host_read_falls_back_with_the_reason_in_explain():
    model = nn.Linear(4, 1)

    def step(x):
        loss = model(x).pow(2).mean()
        if loss.item() > 1e9:  # a host read: the capture breaks here, in every mode
            loss = loss * 0
        return loss
    compiled = ember.compile(step, mode="reduce-overhead")
    explanation = ember._dynamo.explain(compiled)(ember.ones(2, 4))
    assert any(".item()" in str(r) or "item" in str(r) for r in explanation.break_reasons), explanation
    x = ember.ones(2, 4)
    assert compiled(x).item() == pytest.approx(step(x).item())


class _UnsafeSGD(ember.optim.SGD):
    def _graph_safe(self) -> bool:
        return False


class _SafeSGD(ember.optim.SGD):
    """A stand-in for an optimizer whose step counts live on the device: SGD without momentum keeps none."""

    def _graph_safe(self) -> bool:
        return True


@pytest.mark.parametrize("optimizer, replayed", [(_UnsafeSGD, False), (_SafeSGD, True)])
def test_an_eager_optimizer_step_that_is_not_graph_safe_falls_back(optimizer, replayed):
    model = nn.Linear(4, 2)
    opt = optimizer(model.parameters(), lr=0.1)

    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss
    compiled = ember.compile(step, mode="reduce-overhead")
    x, y = ember.ones(3, 4), ember.zeros(3, 2)
    explanation = ember._dynamo.explain(compiled)(x, y)
    reasons = [str(r) for r in explanation.break_reasons]
    assert any("not graph safe" in r for r in reasons) is not replayed, reasons
    losses = [compiled(x, y).item() for _ in range(3)]
    assert losses[0] > losses[1] > losses[2]  # the step ran (in place, through the plan or eagerly)
    assert isinstance(_entry(compiled), ReplayedPlainEntry) is replayed


def test_value_checks_run_at_every_replay():
    """An index range check runs at every call of a replayed entry: on a backend without device graphs (cpu) the
    program runs as Python, checks and all, so nothing falls back; where graphs are captured the checks are
    queued on the device (``deferred_checks``) and the capture collects them for every replay."""
    emb = nn.Embedding(5, 3)
    compiled = ember.compile(lambda i: emb(i).sum(), mode="reduce-overhead")
    explanation = ember._dynamo.explain(compiled)(ember.tensor([1, 2]))
    reasons = [str(r) for r in explanation.break_reasons]
    for i in ([1, 2], [0, 4], [3, 3]):
        compiled(ember.tensor(i))
    with pytest.raises(IndexError):  # the check still runs at every call
        compiled(ember.tensor([5, 0]))
    assert isinstance(_entry(compiled), (ReplayedPlainEntry, ReplayedDifferentiableEntry)), _entry(compiled)
    assert not any("checks its operands' values" in r for r in reasons), reasons


def test_a_differentiable_forward_replays_with_its_backward():
    """Backward outside the compiled region: forward and backward each through their own static plan."""
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    compiled = ember.compile(model, mode="reduce-overhead")
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = ember.tensor(rng.standard_normal((2, 3), dtype=np.float32))
        model.zero_grad()
        compiled(x).sum().backward()
        got = [p.grad.numpy().copy() for p in model.parameters()]
        model.zero_grad()
        model(x).sum().backward()
        for g, want in zip(got, (p.grad.numpy() for p in model.parameters())):
            np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)
    assert isinstance(_entry(compiled._compiled_call), ReplayedDifferentiableEntry)


def _numpy_allocations(fn, calls: int) -> int:
    """NumPy data allocations made by ``calls`` calls of ``fn`` (NumPy reports them to tracemalloc)."""
    domain = np.lib.tracemalloc_domain
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for _ in range(calls):
            fn()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    filters = [tracemalloc.DomainFilter(True, domain)]
    stats = after.filter_traces(filters).compare_to(before.filter_traces(filters), "filename")
    return sum(s.count_diff for s in stats)


def test_the_plan_allocates_nothing_per_replay():
    """The plan's buffers are made once; a replay copies into them and adds no allocation of its own (the
    kernels' results are the backend's: on CUDA the graph's pool holds them, here NumPy makes them)."""
    x = ember.ones(64, 32)
    w = ember.ones(32, 32)

    def f(x):
        return (x @ w).relu()
    compiled = ember.compile(f, mode="reduce-overhead")
    default = ember.compile(f)
    for _ in range(3):
        compiled(x)
        default(x)
    graph = _entry(compiled).program
    buffers = list(graph.static)
    results = []
    plan = _numpy_allocations(lambda: results.append(compiled(x)), 20)
    plain = _numpy_allocations(lambda: results.append(default(x)), 20)
    assert all(a is b for a, b in zip(buffers, graph.static))
    assert plan <= plain, (plan, plain)  # static inputs are filled in place: no allocation beyond the kernels'
    assert graph.allocations() is None  # cpu has no private pool: nothing counted there


# -- on a GPU only: capture and replay for real (skipped where CUDA cannot run) --------------------------------

CUDA = pytest.mark.skipif(not ember.cuda.is_available(), reason=f"needs CUDA: {ember.cuda.unavailable_reason()}")


@CUDA
def test_cuda_replays_one_graph_that_allocates_nothing():
    results = {}
    for mode in ("eager", "reduce-overhead"):
        ember.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3)).to("cuda")
        opt = ember.optim.Adam(model.parameters(), lr=1e-2)
        run = _loss_and_grads(model, mode)
        losses = []
        for x, y in _batches("cuda", 6):
            opt.zero_grad()
            losses.append(run(x, y))  # kept: a later replay must not overwrite an earlier result
            opt.step()
        results[mode] = [loss.item() for loss in losses]
        if mode != "eager":
            graph = _entry(run).program
            assert graph.captured, graph.failures
            before = graph.allocations()
            opt.zero_grad()
            run(*_batches("cuda", 1)[0])
            assert graph.allocations() == before  # the replay took nothing from the pool
    np.testing.assert_allclose(results["reduce-overhead"], results["eager"], rtol=1e-5)


@CUDA
def test_cuda_replays_draw_new_dropout_masks():
    f = ember.compile(lambda x: F.dropout(x, 0.5, training=True), mode="reduce-overhead")
    x = ember.ones(4096, device="cuda")
    masks = [(f(x) == 0).cpu().numpy() for _ in range(6)]
    assert _entry(f).program.captured
    assert not (masks[-1] == masks[-2]).all()
    assert 0.4 < masks[-1].mean() < 0.6
