"""The recurrent layers and cells at one thread: Ember with and without the fused layer kernels, and PyTorch.

Workloads (issue 37): PyTorch's word-language-model example (Embedding -> 2-layer LSTM or GRU, dropout 0.2 ->
tied Linear, bptt 35, batch 20, SGD lr 20 and clip_grad_norm_(0.25), the hidden state detached between steps)
at width 200 and 32, one training step and one evaluation under no_grad; and the time-sequence-prediction
example's two LSTMCells (1 -> 51 -> 51, float64, batch 97, 1000 steps) and Linear(51, 1), one forward and
backward. "Ember loop" is the op-by-op time loop the layers and cells ran before the fused pairs (the fused ops
under ``use_composite``, which routes ``rnn_layer``/``lstm_layer`` and the cells back to it). Rounds interleave
the three sides, each turn after an untimed call; each row gives the median ms per call of wall-clock time and
of this process's CPU time (``time.process_time``: on a machine shared with other jobs, the wall clock also
counts their turns).

``--kernels`` times the CPU's choice instead: the fused pair's kernels with each step's gate arithmetic as the
shared array expressions (what CUDA runs) or as the CPU's numba loops, forward and backward of one layer at the
workloads' shapes.

    python benchmarks/recurrent_kernels.py [--rounds 7] [--only word_lm_LSTM_200_train ...] [--kernels]
"""
from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import time
from contextlib import contextmanager, nullcontext

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from program_models import detached, sine_sequence, word_lm  # noqa: E402

VOCABULARY, BPTT, BATCH = 2000, 35, 20


def word_lm_case(torch, cell: str, width: int, train: bool):
    """One call of the example's ``train()`` inner loop (or of ``evaluate()``'s), on fixed random tokens."""
    torch.manual_seed(0)
    model = word_lm(torch, cell, VOCABULARY, width)
    tokens = torch.randint(0, VOCABULARY, (BPTT + 1, BATCH))
    data, targets = tokens[:-1], tokens[1:].reshape(-1)
    hidden = [model.init_hidden(BATCH)]
    criterion = torch.nn.NLLLoss()
    model.train(train)

    def step():
        hidden[0] = detached(hidden[0])
        if not train:
            with torch.no_grad():
                output, hidden[0] = model(data, hidden[0])
                return criterion(output, targets)
        model.zero_grad()
        output, hidden[0] = model(data, hidden[0])
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(p.grad, alpha=-20)
        return loss
    return step


def sine_case(torch, steps: int = 1000, batch: int = 97):
    """One LBFGS closure's work: forward over ``steps`` inputs, MSE loss, backward."""
    torch.manual_seed(0)
    model = sine_sequence(torch)
    series = torch.rand(batch, steps, dtype=torch.float64)
    target = torch.rand(batch, steps, dtype=torch.float64)

    def step():
        model.zero_grad()
        loss = torch.nn.functional.mse_loss(model(series), target)
        loss.backward()
        return loss
    return step


CASES = {f"word_lm_{cell}_{width}_{'train' if train else 'eval'}":
         (lambda torch, c=cell, w=width, t=train: word_lm_case(torch, c, w, t))
         for cell in ("LSTM", "GRU") for width in (200, 32) for train in (True, False)}
CASES["lstm_cells_sine_float64"] = sine_case


@contextmanager
def composite_loops():
    """The layers and cells as they ran before the fused pairs: their time loops of Ember ops."""
    from ember.dispatch import use_composite
    with use_composite("_lstm_layer_fused"), use_composite("_rnn_layer_fused"):
        yield


def time_call(fn, calls: int) -> tuple[float, float]:
    """(wall-clock, CPU) ms per call."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - wall) / calls * 1e3, (time.process_time() - cpu) / calls * 1e3


def interleaved(fns: dict, rounds: int, calls: int, contexts: dict | None = None) -> dict:
    """{name: [(wall, CPU) ms per call, one per round]}, the functions taking turns within each round. Each turn
    enters its context (``use_composite`` forgets every cached call plan, on entry and exit) and makes one call
    untimed before the timed ones."""
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            with (contexts or {}).get(name, nullcontext)():
                fn()
                times[name].append(time_call(fn, calls))
    return times


def medians(samples: list) -> tuple[float, float]:
    return tuple(statistics.median(column) for column in zip(*samples))


def workloads(args) -> None:
    import ember
    import torch
    torch.set_num_threads(1)
    sides = {"PyTorch": (torch, nullcontext), "Ember loop": (ember, composite_loops),
             "Ember fused": (ember, nullcontext)}
    print(f"{'workload':26} " + " ".join(f"{name:>18}" for name in sides) + "   (median ms per call: wall / CPU)")
    for name, make in CASES.items():
        if args.only and name not in args.only:
            continue
        fns = {side: make(module) for side, (module, _) in sides.items()}
        contexts = {side: context for side, (_, context) in sides.items()}
        times = interleaved(fns, args.rounds, 1 if name.startswith("lstm_cells") else 3, contexts)
        print(f"{name:26} " + " ".join("{:10.1f} /{:6.1f}".format(*medians(t)) for t in times.values()), flush=True)


def kernel_choice(args) -> None:
    """Array expressions against numba loops for the gate arithmetic, inside the fused kernels."""
    import numpy as np
    from ember.backends.arraykernels import recurrent
    from ember.backends.cpu import recurrent_kernels
    from ember.backends.cpu.library import NUMPY
    choices = {"array": recurrent.build(NUMPY), "numba": recurrent_kernels.build(NUMPY)}
    rng = np.random.default_rng(0)
    print(f"{'layer (L, N, H_in, H)':38} {'array fwd':>10} {'numba fwd':>10} {'array bwd':>10} {'numba bwd':>10}"
          "   (median CPU ms per call)")
    for mode, dtype, length, batch, features, hidden in (
            ("LSTM", np.float32, 35, 20, 200, 200), ("GRU", np.float32, 35, 20, 200, 200),
            ("LSTM", np.float32, 35, 20, 32, 32), ("GRU", np.float32, 35, 20, 32, 32),
            ("LSTM", np.float64, 1, 97, 1, 51), ("LSTM", np.float64, 1, 97, 51, 51)):
        rows = recurrent.GATES[mode] * hidden
        x = rng.standard_normal((length, batch, features)).astype(dtype)
        h = rng.standard_normal((batch, hidden)).astype(dtype)
        weights = [(rng.standard_normal(s) * 0.2).astype(dtype) for s in ((rows, features), (rows, hidden), rows, rows)]
        fns = {}
        for name, kernels in choices.items():
            if mode == "LSTM":
                results = kernels["_lstm_layer_fused"](x, h, h, *weights)
                grads = [rng.standard_normal(r.shape).astype(dtype) for r in results]
                fns[name + " fwd"] = lambda k=kernels: k["_lstm_layer_fused"](x, h, h, *weights)
                fns[name + " bwd"] = lambda k=kernels, g=grads, r=results: k["_lstm_layer_fused_backward"](
                    *g, x, h, h, *weights[:2], None, r[0], r[3])
            else:
                results = kernels["_rnn_layer_fused"](x, h, *weights, mode)
                grads = [rng.standard_normal(r.shape).astype(dtype) for r in results]
                fns[name + " fwd"] = lambda k=kernels: k["_rnn_layer_fused"](x, h, *weights, mode)
                fns[name + " bwd"] = lambda k=kernels, g=grads, r=results: k["_rnn_layer_fused_backward"](
                    *g, x, h, *weights[:2], r[0], r[2], mode)
        times = interleaved(fns, args.rounds, 5)
        label = f"{mode} {np.dtype(dtype).name} ({length}, {batch}, {features}, {hidden})"
        columns = ("array fwd", "numba fwd", "array bwd", "numba bwd")
        print(f"{label:38} " + " ".join(f"{medians(times[k])[1]:10.3f}" for k in columns), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--kernels", action="store_true", help="time the gate arithmetic's two implementations")
    args = parser.parse_args()
    for name in ("ember", "torch"):  # their BLAS libraries load first: the limit applies to the loaded ones
        importlib.import_module(name)
    from threadpoolctl import threadpool_limits
    with threadpool_limits(limits=1, user_api="blas"):
        (kernel_choice if args.kernels else workloads)(args)


if __name__ == "__main__":
    main()
