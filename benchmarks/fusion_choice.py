"""Choosing the CPU JIT for elementwise fusion: NumPy op by op vs numexpr vs numba, on three chains.

Chains: (a) one Adam step over every parameter of the benchmark MLP (784-256-256-10), m, v and the
parameter in one pass per tensor, against the CPU's NumPy ``adam_step`` kernel; (b) GELU (tanh and erf
forms) of ``x + bias`` at (128, 256) and (1024, 512); (c) layer norm's elementwise part
``(x - mean) * rstd * w + b`` at (1024, 128). All float32.

Every (chain, contender) runs in a fresh process, which reports its first call (compile included; for
numba once with an empty disk cache and once with the cache the previous process left) and the median and
spread of the per-call time over rounds. numexpr runs with 1 and 2 threads, numba serial and with
``parallel=True`` (a ``prange`` outer loop on all cores).

    python benchmarks/fusion_choice.py [--rounds 15]            (the table)
    python benchmarks/fusion_choice.py --child CHAIN CONTENDER  (one process; the table starts these)
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

MLP_SHAPES = [(256, 784), (256,), (256, 256), (256,), (10, 256), (10,)]
CHAINS = ["adam", "gelu_tanh (128, 256)", "gelu_tanh (1024, 512)", "gelu_erf (128, 256)", "gelu_erf (1024, 512)",
          "layer_norm (1024, 128)"]
CONTENDERS = ["numpy", "numexpr-1", "numexpr-2", "numba", "numba-parallel"]
ADAM = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8)


# -- the contenders, one chain at a time (run in the child) -------------------------------------------------

def _adam_setup(rng):
    params = [rng.standard_normal(s).astype(np.float32) for s in MLP_SHAPES]
    grads = [rng.standard_normal(s).astype(np.float32) for s in MLP_SHAPES]
    ms = [rng.standard_normal(s).astype(np.float32) * 0.1 for s in MLP_SHAPES]
    vs = [np.abs(rng.standard_normal(s)).astype(np.float32) * 0.01 for s in MLP_SHAPES]
    return params, grads, ms, vs


def _adam(contender, rng, parallel):
    from ember.backends.cpu import optim_kernels
    from ember.dispatch.ops.training.optim import adam_scalars
    params, grads, ms, vs = _adam_setup(rng)
    step = 10
    if contender == "numpy":
        kernel = optim_kernels.numpy_adam_step
        return lambda: [kernel(p, g, m, v, step, ADAM["lr"], ADAM["beta1"], ADAM["beta2"], ADAM["eps"], 0.0,
                               False, False) for p, g, m, v in zip(params, grads, ms, vs)]
    if contender.startswith("numexpr"):
        import numexpr as ne
        step_size, eps_hat = adam_scalars(step, ADAM["lr"], ADAM["beta1"], ADAM["beta2"], ADAM["eps"])
        f32 = np.float32
        consts = dict(b1=f32(ADAM["beta1"]), c1=f32(1 - ADAM["beta1"]), b2=f32(ADAM["beta2"]),
                      c2=f32(1 - ADAM["beta2"]), ss=f32(step_size), eh=f32(eps_hat))

        def run():
            for p, g, m, v in zip(params, grads, ms, vs):
                m2 = ne.evaluate("m * b1 + g * c1", local_dict=dict(consts, m=m, g=g))
                v2 = ne.evaluate("v * b2 + g * g * c2", local_dict=dict(consts, v=v, g=g))
                ne.evaluate("p - m2 * ss / (sqrt(v2) + eh)", local_dict=dict(consts, p=p, m2=m2, v2=v2))
        return run
    kernel = optim_kernels.fused_adam_step(parallel=parallel)
    return lambda: [kernel(p, g, m, v, step, ADAM["lr"], ADAM["beta1"], ADAM["beta2"], ADAM["eps"], 0.0, False,
                           False) for p, g, m, v in zip(params, grads, ms, vs)]


def _program(calls, inputs):
    """An ElementwiseProgram over float32 ``inputs`` (shapes), ``calls`` = [(op, operands, attrs)]."""
    from ember.dispatch import dtypes as d
    from ember.dispatch.fusion import ElementwiseProgram, Step
    from ember.dispatch.schema import OPS
    steps = []
    for name, operands, attrs in calls:
        op = OPS[name]
        values = tuple(attrs.get(op.params[i].name, op.params[i].default) for i in op.attr_positions)
        steps.append(Step(name, tuple(o if isinstance(o, tuple) else ("number", o) for o in operands), values,
                          d.float32, d.float32))
    shape = np.broadcast_shapes(*inputs)
    return ElementwiseProgram(tuple((s, d.float32) for s in inputs), tuple(steps), (len(steps) - 1,), shape)


def _gelu(contender, rng, parallel, shape, form):
    from ember.backends.cpu.kernels import KERNELS
    x = rng.standard_normal(shape).astype(np.float32)
    bias = rng.standard_normal(shape[-1:]).astype(np.float32)
    if contender == "numpy":
        add, gelu = KERNELS["add"], KERNELS["gelu"]
        return lambda: gelu(add(x, bias, 1), form)
    if contender.startswith("numexpr"):
        if form != "tanh":
            return None  # numexpr has no erf
        import numexpr as ne
        expression = f"0.5 * (x + b) * (1 + tanh({math.sqrt(2 / math.pi)!r} * ((x + b) + 0.044715 * (x + b) ** 3)))"
        return lambda: ne.evaluate(expression, local_dict={"x": x, "b": bias})
    from ember.backends.cpu.fusion import fuse_elementwise
    program = _program([("add", (("input", 0), ("input", 1)), {}), ("gelu", (("step", 0),), {"approximate": form})],
                       [x.shape, bias.shape])
    kernel = fuse_elementwise(program, parallel=parallel, slower=frozenset())  # measure every chain
    return lambda: kernel(x, bias)


def _layer_norm(contender, rng, parallel):
    from ember.backends.cpu.kernels import KERNELS
    x = rng.standard_normal((1024, 128)).astype(np.float32)
    mean = x.mean(axis=1, keepdims=True)
    rstd = (1 / np.sqrt(x.var(axis=1, keepdims=True) + 1e-5)).astype(np.float32)
    w, b = (rng.standard_normal(128).astype(np.float32) for _ in range(2))
    if contender == "numpy":
        add, sub, mul = KERNELS["add"], KERNELS["sub"], KERNELS["mul"]
        return lambda: add(mul(mul(sub(x, mean, 1), rstd), w), b, 1)
    if contender.startswith("numexpr"):
        import numexpr as ne
        return lambda: ne.evaluate("(x - mean) * rstd * w + b", local_dict=dict(x=x, mean=mean, rstd=rstd, w=w, b=b))
    from ember.backends.cpu.fusion import fuse_elementwise
    program = _program([("sub", (("input", 0), ("input", 1)), {}), ("mul", (("step", 0), ("input", 2)), {}),
                        ("mul", (("step", 1), ("input", 3)), {}), ("add", (("step", 2), ("input", 4)), {})],
                       [x.shape, mean.shape, rstd.shape, w.shape, b.shape])
    kernel = fuse_elementwise(program, parallel=parallel, slower=frozenset())  # measure every chain
    return lambda: kernel(x, mean, rstd, w, b)


def child(chain: str, contender: str, rounds: int) -> dict:
    started = time.perf_counter()
    import ember  # noqa: F401
    imports = {"ember": time.perf_counter() - started}
    if contender.startswith("numexpr"):
        t = time.perf_counter()
        import numexpr as ne
        imports["numexpr"] = time.perf_counter() - t
        ne.set_num_threads(int(contender[-1]))
    if contender.startswith("numba"):
        t = time.perf_counter()
        import numba  # noqa: F401
        imports["numba"] = time.perf_counter() - t
    rng = np.random.default_rng(0)
    parallel = contender == "numba-parallel"
    first = time.perf_counter()
    name, _, size = chain.partition(" ")
    if name == "adam":
        call = _adam(contender, rng, parallel)
    elif name.startswith("gelu"):
        call = _gelu(contender, rng, parallel, eval(size), name.split("_")[1])
    else:
        call = _layer_norm(contender, rng, parallel)
    if call is None:
        return {"skipped": "not expressible"}
    call()
    first_call = time.perf_counter() - first
    call()
    t = time.perf_counter()
    call()
    once = time.perf_counter() - t
    repeats = max(1, int(0.05 / max(once, 1e-7)))
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(repeats):
            call()
        times.append((time.perf_counter() - t) / repeats)
    return {"imports": imports, "first_call": first_call, "times": times}


# -- the table (run in the parent) -------------------------------------------------------------------------

def _spawn(chain, contender, rounds, cache_dir):
    env = dict(os.environ, EMBER_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, __file__, "--child", chain, contender, "--rounds", str(rounds)], env=env,
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        return {"failed": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _us(seconds):
    return f"{seconds * 1e6:,.0f}"


def main(rounds: int) -> None:
    print(f"{'chain':24} {'contender':15} {'median us':>10} {'spread %':>9} {'first call ms':>14} "
          f"{'cached first ms':>16} {'import ms':>10}")
    for chain in CHAINS:
        for contender in CONTENDERS:
            with tempfile.TemporaryDirectory() as cache:
                result = _spawn(chain, contender, rounds, cache)
                cached = _spawn(chain, contender, rounds, cache) if contender.startswith("numba") else None
            if "skipped" in result or "failed" in result:
                print(f"{chain:24} {contender:15} {result.get('skipped') or result.get('failed')}")
                continue
            times = result["times"]
            median = statistics.median(times)
            spread = (max(times) - min(times)) / median * 100
            imports = sum(v for k, v in result["imports"].items() if k != "ember")
            warm = f"{cached['first_call'] * 1e3:16.1f}" if cached and "first_call" in cached else f"{'':16}"
            print(f"{chain:24} {contender:15} {_us(median):>10} {spread:9.0f} {result['first_call'] * 1e3:14.1f} "
                  f"{warm} {imports * 1e3:10.0f}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=2, metavar=("CHAIN", "CONTENDER"))
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child, args.rounds)))
    else:
        main(args.rounds)
