"""FFT speed: ``ember.fft`` on cpu (pocketfft) and on opencl (Ember's own Stockham/Bluestein kernels) against
``torch.fft`` on cpu, each side in its own fresh processes, taking turns.

Cases (issue 39): a 1-d complex64 FFT of 4096 points, a 2-d complex64 FFT of 512 x 512, and a batched float32
rfft of 64 x 16384. Every process imports only its own framework, checks its result against ``np.fft`` once,
then times rounds of calls (a device sync after each call on opencl: a transform is done when its data is).
The table gives, per case and side, the median over processes of each process's median per-call time, the
10th-90th percentiles over all rounds, the ratios to torch.fft and to Ember's cpu backend, and the median CPU
time a call took over all the process's threads (``time.process_time``: PoCL's and pocketfft's worker threads
included; on a machine shared with other jobs, the wall clock also counts their turns).

    python benchmarks/fft.py [--processes 3] [--rounds 15] [--sides ember-cpu,ember-opencl,torch-cpu]
    python benchmarks/fft.py --child SIDE --rounds N      (one process; the table starts these)
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np

SIDES = ["ember-cpu", "ember-opencl", "torch-cpu"]
CASES = {  # key -> (description, shape, transform)
    "fft_4096": ("fft, complex64, 4096", (4096,), "fft"),
    "fft2_512": ("fft2, complex64, 512 x 512", (512, 512), "fft2"),
    "rfft_64x16384": ("rfft, float32, 64 x 16384 (batched)", (64, 16384), "rfft"),
}
ROUND_SECONDS = 0.05  # the time a round of calls aims at
REFERENCE = {"fft": np.fft.fft, "fft2": np.fft.fft2, "rfft": np.fft.rfft}


def _sample(shape: tuple, transform: str) -> np.ndarray:
    rng = np.random.default_rng(0)
    real = rng.standard_normal(shape).astype(np.float32)
    if transform == "rfft":
        return real
    return (real + 1j * rng.standard_normal(shape).astype(np.float32)).astype(np.complex64)


# -- one side (run in a child process) -----------------------------------------------------------------------

def _call(side: str, data: np.ndarray, transform: str):
    """The timed call (transform and wait for it) and a function copying its result to the host."""
    framework, device = side.split("-")
    if framework == "torch":
        import torch
        x = torch.from_numpy(data)
        function = getattr(torch.fft, transform)
        return (lambda: function(x)), (lambda: function(x).numpy())
    import ember
    x = ember.tensor(data, device=device)
    function = getattr(ember.fft, transform)

    def synced():
        out = function(x)
        ember.synchronize(device)
        return out
    return synced, (lambda: function(x).cpu().numpy())


def child(side: str, rounds: int) -> dict:
    results = {}
    for key, (_, shape, transform) in CASES.items():
        data = _sample(shape, transform)
        call, result = _call(side, data, transform)
        expected = REFERENCE[transform](data.astype(np.float64 if transform == "rfft" else np.complex128))
        error = float(np.abs(result() - expected).max() / np.abs(expected).max())
        call()
        started = time.perf_counter()
        call()
        repeats = max(1, int(ROUND_SECONDS / max(time.perf_counter() - started, 1e-7)))
        times, cpu_times = [], []
        for _ in range(rounds):
            started, cpu_started = time.perf_counter(), time.process_time()
            for _ in range(repeats):
                call()
            times.append((time.perf_counter() - started) / repeats)
            cpu_times.append((time.process_time() - cpu_started) / repeats)
        results[key] = {"times": times, "cpu_times": cpu_times, "error": error}
    loaded = [name for name in ("ember", "torch") if name in sys.modules]
    return {"side": side, "loaded": loaded, "cases": results}


# -- the table (run in the parent) ----------------------------------------------------------------------------

def _spawn(side: str, rounds: int) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", side, "--rounds", str(rounds)],
                          capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return {"side": side, "failed": last}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}"


def _ratio(value: float, reference: float | None) -> str:
    return f"{value / reference:.2f}x" if reference else "-"


def main(sides: list[str], processes: int, rounds: int) -> None:
    turns: dict[str, list[dict]] = {side: [] for side in sides}
    for index in range(processes):
        for side in sides:
            print(f"# {side}: process {index + 1}/{processes}", file=sys.stderr, flush=True)
            turns[side].append(_spawn(side, rounds))
    failed = {side: runs[0]["failed"] for side, runs in turns.items() if any("failed" in run for run in runs)}
    for side, reason in failed.items():
        print(f"{side}: failed ({reason})")
    working = [side for side in sides if side not in failed]
    print(f"{'case':40} {'side':13} {'median ms':>10} {'p10-p90 ms':>17} {'/ torch':>8} {'/ ember-cpu':>11} "
          f"{'cpu ms':>8} {'max rel err':>11}")
    for key, (description, _, _) in CASES.items():
        medians, spans, errors, cpu = {}, {}, {}, {}
        for side in working:
            runs = [run["cases"][key] for run in turns[side]]
            every = [t for run in runs for t in run["times"]]
            medians[side] = statistics.median(statistics.median(run["times"]) for run in runs)
            spans[side] = (float(np.percentile(every, 10)), float(np.percentile(every, 90)))
            errors[side] = max(run["error"] for run in runs)
            cpu[side] = statistics.median(statistics.median(run["cpu_times"]) for run in runs)
        for side in working:
            low, high = spans[side]
            print(f"{description:40} {side:13} {_ms(medians[side]):>10} {_ms(low) + '-' + _ms(high):>17} "
                  f"{_ratio(medians[side], medians.get('torch-cpu')):>8} "
                  f"{_ratio(medians[side], medians.get('ember-cpu')):>11} {_ms(cpu[side]):>8} {errors[side]:11.1e}")
    loaded = {side: sorted({name for run in turns[side] for name in run["loaded"]}) for side in working}
    print(f"\n{processes} fresh process(es) per side, taking turns; each value is the median over processes of each "
          f"process's median over {rounds} rounds; frameworks each side's processes imported: {loaded}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", choices=SIDES)
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--sides", type=lambda text: text.split(","), default=SIDES)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.rounds)))
    else:
        main(args.sides, args.processes, args.rounds)
