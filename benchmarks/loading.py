"""DataLoader throughput in batches per second: a shuffled pass over an MNIST-sized TensorDataset.

60000 × 784 float32 samples with int64 labels, batch 128, loaded in this process (0 workers) and by
2 worker processes. Both frameworks wrap the same NumPy arrays without copying, and each timed call
is one pass from a fresh iterator, so worker start-up is part of what is measured, as in training.
"""
from __future__ import annotations

import itertools

import numpy as np

from harness import Case, Section, Timing
from sides import Lineup

SAMPLES, FEATURES, BATCH = 60000, 784, 128
TIMING = {True: Timing(rounds=3, budget_s=0.0, settle_s=0.15),
          False: Timing(rounds=5, budget_s=0.0, settle_s=0.15)}
QUICK_BATCHES = 100


def _data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.standard_normal((SAMPLES, FEATURES), dtype=np.float32), rng.integers(0, 10, SAMPLES)


def _passes(workers: int, batches: int | None, data):
    def build(sides):
        calls = []
        for side in sides:
            data_module = side.lib.utils.data
            dataset = data_module.TensorDataset(side.lib.from_numpy(data[0]), side.lib.from_numpy(data[1]))

            def one_pass(data_module=data_module, dataset=dataset):
                loader = data_module.DataLoader(dataset, batch_size=BATCH, shuffle=True, num_workers=workers)
                for _ in itertools.islice(loader, batches):
                    pass
            calls.append(one_pass)
        return calls, ""
    return build


def section(lineup: Lineup, quick: bool) -> Section | None:
    if lineup.device != "cpu":
        return None
    batches = QUICK_BATCHES if quick else None
    per_pass = batches or -(-SAMPLES // BATCH)
    data = _data()
    cases = [Case(f"loader{w}", f"DataLoader, {w} workers, {per_pass} batches of {BATCH}", _passes(w, batches, data),
                  work=per_pass) for w in (0, 2)]
    return Section("loading", "DataLoader throughput", lineup.sides(), cases, TIMING[quick], unit="batches/s",
                   note=f"TensorDataset {SAMPLES}×{FEATURES} float32 + int64 labels, shuffle=True; each call is "
                        "one pass from a fresh iterator, worker start-up included.")
