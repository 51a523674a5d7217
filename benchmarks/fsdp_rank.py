"""What ``benchmarks/fsdp.py`` runs on every rank: memory, communication and step time of one GPT trained
through DDP and through FSDP's strategies, on the job's ranks.

Every mode trains the same model (``examples/gpt.py``'s GPT, one FSDP unit per block plus the root) from the
same initial weights on the same per-rank batches with AdamW, so the modes differ only in how they keep and
exchange the parameters, gradients and optimizer state.

Every mode first runs a couple of steps unmeasured, so that the process's one-time costs (compiled kernels,
caches: tens of MiB) land in no mode's figures. Then memory, mode by mode (one model alive at a time), with
``tracemalloc`` (NumPy reports its array buffers to it), above a baseline taken before the model is built:
``steady``, what is still held after the warm-up steps (between two steps: parameters, gradients, optimizer
state and whatever the framework keeps); the high-water marks of one more step's forward and backward
(``peak_backward``: adds activations, gathered parameters, unsharded gradients) and of its optimizer step
(``peak_optimizer``), ``peak`` being the larger; ``retained``, what remains once the model and optimizer are
dropped (leaks). Then one more step with the collectives counted. Step time: all modes alive at once, steps
interleaved mode by mode, each started together on every rank (barrier), without tracemalloc.
"""
from __future__ import annotations

import gc
import pathlib
import sys
import time
import tracemalloc
from dataclasses import dataclass

from collective_bytes import counting_collectives

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "examples"))
from gpt import GPTConfig, gpt  # noqa: E402

MODES = ("DDP", "FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD")
PRIMING_STEPS = 2  # the first step builds the optimizer state and DDP's buckets; the second runs as all later ones


@dataclass(frozen=True)
class Job:
    """The model's width and depth, the sequences per rank, and how many steps to warm up and to time."""

    width: int
    layers: int
    batch: int
    warmup: int
    steps: int

    def config(self) -> GPTConfig:
        return GPTConfig(n_layer=self.layers, n_head=max(1, self.width // 64), n_embd=self.width)


class Trainer:
    """One mode's model, AdamW optimizer and this rank's batch."""

    def __init__(self, job: Job, mode: str) -> None:
        import ember

        ember.manual_seed(0)  # the same initial weights in every mode and on every rank
        self.model = wrap(gpt(ember, job.config()), mode)
        self.optimizer = ember.optim.AdamW(self.model.parameters(), lr=1e-3)
        config = job.config()
        generator = ember.Generator().manual_seed(1 + ember.distributed.get_rank())
        tokens = ember.randint(0, config.vocab_size, (job.batch, config.block_size + 1), generator=generator)
        self.inputs, self.targets = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def step(self) -> float:
        loss = self.forward_backward()
        self.optimizer.step()
        return loss

    def forward_backward(self) -> float:
        self.optimizer.zero_grad()
        _, loss = self.model(self.inputs, self.targets)
        loss.backward()
        return loss.item()


def wrap(model, mode: str):
    """``model`` in DDP, or in FSDP with ``mode``'s strategy and one unit per transformer block."""
    from ember.distributed.fsdp import FullyShardedDataParallel, ShardingStrategy
    from ember.distributed.fsdp.wrap import ModuleWrapPolicy
    from ember.nn.parallel import DistributedDataParallel

    if mode == "DDP":
        return DistributedDataParallel(model)
    return FullyShardedDataParallel(model, sharding_strategy=ShardingStrategy[mode],
                                    auto_wrap_policy=ModuleWrapPolicy({type(model.h[0])}))


def measure_memory(job: Job, mode: str) -> dict:
    """This rank's steady, peak and retained bytes of ``mode``, its loss after the warm-up steps and one
    measured step, and the bytes it gave each collective in one further step."""
    gc.collect()
    tracemalloc.start()
    try:
        baseline = _held()
        trainer = Trainer(job, mode)
        for _ in range(job.warmup):
            trainer.step()
        gc.collect()
        steady = _held() - baseline
        tracemalloc.reset_peak()
        loss = trainer.forward_backward()
        peak_backward = tracemalloc.get_traced_memory()[1] - baseline
        tracemalloc.reset_peak()
        trainer.optimizer.step()
        peak_optimizer = tracemalloc.get_traced_memory()[1] - baseline
        with counting_collectives() as counts:
            trainer.step()
        del trainer
        gc.collect()
        retained = _held() - baseline
    finally:
        tracemalloc.stop()
    return {"steady": steady, "peak": max(peak_backward, peak_optimizer), "peak_backward": peak_backward,
            "peak_optimizer": peak_optimizer, "retained": retained, "loss": loss, "comm": counts.as_dict()}


def _held() -> int:
    return tracemalloc.get_traced_memory()[0]


def time_steps(job: Job) -> dict[str, list[float]]:
    """Seconds of each timed step of every mode on this rank (modes interleaved, ranks started together)."""
    import ember.distributed as dist

    trainers = {mode: Trainer(job, mode) for mode in MODES}
    for _ in range(job.warmup):
        for trainer in trainers.values():
            trainer.step()
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    for _ in range(job.steps):
        for mode, trainer in trainers.items():
            dist.barrier()
            start = time.perf_counter()
            trainer.step()
            times[mode].append(time.perf_counter() - start)
    return times


def run(job: Job, time_them: bool) -> dict | None:
    """Every measurement of this job, gathered on rank 0 (None elsewhere): per mode, each rank's memory and
    collectives; with ``time_them``, each step's time on the slowest rank."""
    import ember
    import ember.distributed as dist

    for mode in MODES:  # pay the process's one-time costs (compiled kernels, caches) outside the measurements
        prime = Trainer(job, mode)
        for _ in range(PRIMING_STEPS):
            prime.step()
        del prime
    memory = {mode: measure_memory(job, mode) for mode in MODES}
    times = time_steps(job) if time_them else {}
    everyone: list = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, (memory, times))
    if dist.get_rank() != 0:
        return None
    model = gpt(ember, job.config())
    return {
        "ranks": len(everyone),
        "parameters": sum(p.numel() for p in model.parameters()),
        "memory": {mode: [rank_memory[mode] for rank_memory, _ in everyone] for mode in MODES},
        "step_s": {mode: [max(steps) for steps in zip(*(rank_times[mode] for _, rank_times in everyone))]
                   for mode in times},
    }
