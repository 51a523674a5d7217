"""No host synchronisation inside a training step: every read of device values to the host is counted
(``ember.dispatch.execution.host_reads``), and the benchmark's steps make none after warm-up, on every backend.

Value checks (indices in range, class targets valid) run on the device. Where the backend defers them
(``Backend.defers_value_checks``: opencl here, cuda on a GPU) their errors come at the device's next
synchronisation, clear as ever; on the cpu backend they stay immediate. The models are the compile tests'
small versions of the benchmark's workloads (``compile_models``), each step fed a fresh batch, so fresh
targets, a fresh ``view(-1)`` of them and a fresh ``arange`` of positions every step.
"""
from __future__ import annotations

import gc

import numpy as np
import pytest

import ember
from compile_models import WORKLOADS, training_step
from ember import nn
from ember.dispatch.execution import deferred_checks, host_reads
from ember.nn import functional as F

STATUS = ember.backends.available()


def _device(name: str):
    return pytest.param(name, marks=pytest.mark.skipif(STATUS.get(name) != "available",
                                                       reason=f"{name}: {STATUS.get(name, 'not registered')}"))


DEVICES = [_device(name) for name in ("cpu", "opencl", "template", "cuda")]
DEFERRING = [_device("opencl"), _device("cuda")]  # backends that defer their value checks (opencl runs in CI)


@pytest.mark.parametrize("key", WORKLOADS)
@pytest.mark.parametrize("device", DEVICES)
def test_benchmark_steps_read_nothing_to_the_host(device, key):
    workload = WORKLOADS[key]
    model = workload.build(device)
    step = training_step(workload, model)
    for seed in range(2):  # warm-up: plans, kernels, optimizer state
        step(*workload.tensors(device, seed))
    batches = [workload.tensors(device, seed) for seed in range(2, 5)]
    forced = deferred_checks.forced
    with host_reads.counting() as reads:
        losses = [step(x, y) for x, y in batches]
    assert reads.total == 0, f"{key} on {device}: host reads in 3 steps: {reads.by_type}"
    assert deferred_checks.forced == forced
    with host_reads.counting() as reads:
        values = [loss.item() for loss in losses]
    assert reads.by_type == {device: 3} and all(np.isfinite(values))


class _Tagger(nn.Module):
    """An embedding of tokens plus one of positions (a fresh ``arange``), then class scores per token."""

    def __init__(self, vocabulary: int = 7, width: int = 8, classes: int = 5) -> None:
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocabulary, width), nn.Embedding(16, width)
        self.head = nn.Linear(width, classes)

    def forward(self, idx):
        positions = ember.arange(idx.shape[1], device=idx.device)
        return self.head(self.tokens(idx) + self.positions(positions))


@pytest.mark.parametrize("device", DEVICES)
def test_fresh_targets_and_indices_read_nothing(device):
    ember.manual_seed(0)
    model = _Tagger().to(device)
    optimizer = ember.optim.SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(0)

    def step():
        idx = ember.tensor(rng.integers(0, 7, (3, 4)), device=device)
        target = ember.tensor(rng.integers(0, 5, (3, 4)), device=device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(idx).reshape(-1, 5), target.view(-1))
        loss.backward()
        optimizer.step()
        with ember.no_grad():  # an index op and a gather on fresh indices too
            picked = ember.gather(model.head.weight, 1, target[:, :1].to(ember.int64) % 8)
            return loss + picked.sum() * 0 + model.tokens.weight[idx.view(-1)].sum() * 0

    step()
    with host_reads.counting() as reads:
        losses = [step() for _ in range(3)]
    assert reads.total == 0, reads.by_type
    assert all(np.isfinite(loss.item()) for loss in losses)


@pytest.mark.parametrize("device", DEVICES)
def test_every_kind_of_read_is_counted(device):
    x = ember.arange(6, dtype=ember.float32, device=device).reshape(2, 3)
    reads_of = {"item": lambda: x[0, 1].item(), "tolist": x.tolist, "bool": lambda: bool(x[1, 2] > 0),
                "float": lambda: float(x[0, 0]), "repr": lambda: repr(x), "numpy": lambda: np.asarray(x.cpu())}
    if device == "cpu":
        reads_of["numpy"] = x.numpy  # (x.cpu() is x itself: no read)
    for name, read in reads_of.items():
        with host_reads.counting() as reads:
            read()
        assert reads.by_type.get(device, 0) >= 1, f"{name}() on {device} was not counted: {reads.by_type}"
    with host_reads.counting() as reads:
        y = (x * 2).sum(0)
        del y
    assert reads.total == 0


def test_cpu_errors_are_immediate():
    weight = ember.randn(5, 3)
    with pytest.raises(IndexError, match=r"embedding: index 9 is out of range for 5 embeddings .*\(2,\)"):
        F.embedding(ember.tensor([0, 9]), weight)
    with pytest.raises(IndexError, match=r"cross_entropy.*Target 3 is out of bounds.*0\.\.2"):
        F.cross_entropy(ember.randn(2, 3), ember.tensor([0, 3]))
    with pytest.raises(IndexError, match=r"gather: index 4 is out of bounds for dim 1 with size 3"):
        ember.gather(ember.randn(2, 3), 1, ember.tensor([[4], [0]]))
    assert deferred_checks.pending() == 0


@pytest.mark.parametrize("device", DEFERRING)
def test_deferred_errors_come_at_the_next_sync(device):
    weight = ember.randn(5, 3, device=device)
    out = F.embedding(ember.tensor([[0, 7]], device=device), weight)  # queued, not raised
    assert tuple(out.shape) == (1, 2, 3) and deferred_checks.pending(device) == 1
    with pytest.raises(IndexError, match=r"embedding: index 7 is out of range for 5 embeddings \(indices of shape "
                                         r"\(1, 2\), weight of shape \(5, 3\)\).*next synchronisation"):
        out.sum().item()
    assert deferred_checks.pending(device) == 0
    assert out.sum().item() == out.sum().item()  # reported once; the clamped lookup read no wild memory

    logits = ember.randn(4, 3, device=device)
    loss = F.cross_entropy(logits, ember.tensor([0, 1, -100, 3], device=device))
    with pytest.raises(IndexError, match=r"cross_entropy_indices: Target 3 is out of bounds: expected class "
                                         r"indices in 0\.\.2 or ignore_index=-100 \(tensor\(shape=\(4,\)"):
        ember.synchronize()
    assert np.isfinite(loss.item())  # the ignored target counted as ignored, not as an error


@pytest.mark.parametrize("device", DEFERRING)
def test_a_deferred_error_outlives_its_tensors(device):
    x = ember.randn(3, 4, device=device)
    index = ember.tensor([1, -4, 2], device=device)
    y = x[index]
    del index, y
    gc.collect()
    with host_reads.counting() as reads:
        with pytest.raises(IndexError, match=r"index: index -4 is out of bounds for dim 0 with size 3 \(expected "
                                             r"-3\.\.2; tensor\(shape=\(3,\)"):
            ember.synchronize(device)
    assert reads.total == 0  # synchronize() judges the checks without counting a read of the program's
    ember.gather(x, 1, ember.tensor([[9]], device=device))
    ember.gather(x, 1, ember.tensor([[8]], device=device))
    with pytest.raises(IndexError, match=r"gather: index 9 .*\(1 more deferred checks failed\)"):
        x.tolist()  # any host read on the device judges what is pending there first


@pytest.mark.parametrize("device", DEFERRING)
def test_pending_checks_are_bounded(device, monkeypatch):
    monkeypatch.setattr(deferred_checks, "LIMIT", 3)
    weight = ember.randn(5, 2, device=device)
    forced = deferred_checks.forced
    for i in range(3):
        F.embedding(ember.tensor([i], device=device), weight)
    assert deferred_checks.pending(device) == 3 and deferred_checks.forced == forced
    with host_reads.counting() as reads, pytest.raises(IndexError, match="index 5 is out of range"):
        F.embedding(ember.tensor([5], device=device), weight)  # the fourth: the queue is judged, one sync
    assert deferred_checks.forced == forced + 1 and reads.by_type == {device: 1}
    assert deferred_checks.pending(device) == 0


@pytest.mark.parametrize("device", DEFERRING)
def test_compiled_replay_checks_on_the_device(device):
    ember.compiler.reset()
    model = nn.Embedding(6, 3).to(device)
    compiled = ember.compile(model)
    with ember.no_grad():
        for n in range(2):
            compiled(ember.tensor([n, 5], device=device))
        with host_reads.counting() as reads:
            out = compiled(ember.tensor([1, 2], device=device))
        assert reads.total == 0
        np.testing.assert_allclose(out.cpu().numpy(), model.weight.cpu().numpy()[[1, 2]])
        with host_reads.counting() as reads:
            bad = compiled(ember.tensor([0, 6], device=device))  # queued: raised at the next sync
        assert reads.total == 0 and tuple(bad.shape) == (2, 3)
        with pytest.raises(IndexError, match="index 6 is out of range for 6 embeddings"):
            ember.synchronize()
    ember.compiler.reset()


@pytest.mark.parametrize("device", DEVICES)
def test_batch_norm_cumulative_average_reads_nothing(device):
    norm = nn.BatchNorm1d(3, momentum=None).to(device)
    rng = np.random.default_rng(1)
    batches = [rng.standard_normal((6, 3)).astype(np.float32) * (i + 1) + i for i in range(3)]
    norm(ember.tensor(batches[0], device=device))
    with host_reads.counting() as reads:
        for batch in batches[1:]:
            norm(ember.tensor(batch, device=device))
    assert reads.total == 0
    mean = np.mean([b.mean(0) for b in batches], 0)
    var = np.mean([b.var(0, ddof=1) for b in batches], 0)
    np.testing.assert_allclose(norm.running_mean.cpu().numpy(), mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(norm.running_var.cpu().numpy(), var, rtol=1e-5, atol=1e-6)
    assert norm.num_batches_tracked.item() == 3


def test_peak_statistics_start_tracking_only_when_a_peak_is_read():
    from ember.backends.cuda.memory import Stats
    asked = []
    stats = Stats(100, 400, lambda: asked.append(1) or 250)
    assert stats["allocated_bytes"] == 100 and stats.get("reserved_bytes") == 400 and not asked
    assert stats.get("peak_bytes") == 250 and asked == [1]
    assert Stats(300, 400, lambda: 250)["peak_bytes"] == 300  # never below what is in use
    assert dict(Stats(1, 2, lambda: 0)) == {"allocated_bytes": 1, "peak_bytes": 1, "reserved_bytes": 2}


@pytest.mark.parametrize("device", DEFERRING)
def test_checks_recorded_by_a_graph_capture_are_judged_after_each_replay(device):
    """A device graph being captured collects its calls' checks (their kernels have not run yet) and queues
    copies of them after every replay, so each replay is judged on its own numbers."""
    weight = ember.randn(5, 3, device=device)
    index = ember.tensor([[0, 7]], device=device)
    with deferred_checks.recording() as checks:
        F.embedding(index, weight)
    assert len(checks) == 1 and deferred_checks.pending(device) == 0
    deferred_checks.resubmit(checks)  # after a replay with the bad index
    values, _ = checks[0]
    for v in values:  # the next replay, with good indices, overwrites the graph's own numbers
        v.copy_(ember.zeros_like(v))
    deferred_checks.resubmit(checks)
    assert deferred_checks.pending(device) == 2
    with pytest.raises(IndexError, match=r"index 7 is out of range for 5 embeddings") as raised:
        ember.synchronize(device)
    assert "more deferred checks failed" not in str(raised.value)  # the second replay's copy passed


@pytest.mark.parametrize("device", DEFERRING)
def test_binary_cross_entropy_checks_its_probabilities_on_the_device(device):
    target = ember.tensor([0.0, 1.0, 0.5], device=device)
    with host_reads.counting() as reads:
        loss = F.binary_cross_entropy(ember.tensor([0.2, 0.9, 0.4], device=device), target)
        F.binary_cross_entropy(ember.tensor([0.2, 1.5, 0.4], device=device), target)
    assert reads.total == 0
    with pytest.raises(ember.dispatch.EmberError, match=r"binary_cross_entropy: all elements of input should be "
                                                        r"between 0 and 1, got values from 0\.2.* to 1\.5"):
        ember.synchronize(device)
    assert np.isfinite(loss.item())


@pytest.mark.parametrize("device", DEFERRING)
def test_one_hot_and_margin_targets_are_checked_on_the_device(device):
    with host_reads.counting() as reads:
        F.one_hot(ember.tensor([1, 5], device=device), 4)
    assert reads.total == 0
    with pytest.raises(ember.dispatch.EmberError, match=r"one_hot: class values must be smaller than "
                                                        r"num_classes=4, got 5"):
        ember.synchronize(device)
    with host_reads.counting() as reads:
        F.multi_margin_loss(ember.randn(3, 4, device=device), ember.tensor([0, 3, 9], device=device))
    assert reads.total == 0
    with pytest.raises(IndexError, match=r"multi_margin_loss: target 9 is out of range: expected values in 0\.\.3"):
        ember.synchronize(device)
