"""Per-op overhead: small ops on tiny tensors, where dispatch cost dominates the arithmetic.

    python benchmarks/overhead.py [--write benchmarks/results/overhead.md]
"""
from __future__ import annotations

import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import ember  # noqa: E402
from harness import compare, markdown  # noqa: E402


def cases(torch):
    x = ember.tensor(np.linspace(-1, 1, 10, dtype=np.float32))
    m = ember.tensor(np.random.default_rng(0).standard_normal((64, 64), dtype=np.float32))
    tx = torch.from_numpy(x.numpy().copy()) if torch else None
    tm = torch.from_numpy(m.numpy().copy()) if torch else None
    pick = (lambda f: f) if torch else (lambda f: None)
    g = ember.tensor(np.linspace(-1, 1, 10, dtype=np.float32), requires_grad=True)
    tg = torch.linspace(-1, 1, 10, requires_grad=True) if torch else None

    def chain(t):
        return ((t * 2 + 1).tanh() * t).sum()

    def chain_backward(t):
        chain(t).backward()
        t.grad = None
    return [
        ("x + x (10 float32)", lambda: x + x, pick(lambda: tx + tx)),
        ("x * 2.0 (10 float32)", lambda: x * 2.0, pick(lambda: tx * 2.0)),
        ("x.exp() (10 float32)", lambda: x.exp(), pick(lambda: tx.exp())),
        ("x.sum() (10 float32)", lambda: x.sum(), pick(lambda: tx.sum())),
        ("x.view(2, 5) (10 float32)", lambda: x.view(2, 5), pick(lambda: tx.view(2, 5))),
        ("x[2:5] (10 float32)", lambda: x[2:5], pick(lambda: tx[2:5])),
        ("m @ m (64×64 float32)", lambda: m @ m, pick(lambda: tm @ tm)),
        ("m.amax(dim=1) (64×64)", lambda: m.amax(dim=1), pick(lambda: tm.amax(dim=1))),
        ("x + x, requires_grad (10 float32)", lambda: g + g, pick(lambda: tg + tg)),
        ("5-op chain + backward (10 float32)", lambda: chain_backward(g), pick(lambda: chain_backward(tg))),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=pathlib.Path, help="also write the Markdown table to this file")
    args = parser.parse_args()
    try:
        import torch
        torch.set_num_threads(1)
        versions = f"Ember {ember.__version__}, PyTorch {torch.__version__} (1 thread), NumPy {np.__version__}."
    except ImportError:
        torch = None
        versions = f"Ember {ember.__version__}, NumPy {np.__version__}; PyTorch not installed (pip install -e .[bench])."
    results = [compare(name, e, t) for name, e, t in cases(torch)]
    table = markdown(results, "Per-op overhead, CPU backend", versions)
    print(table)
    if args.write:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(table)


if __name__ == "__main__":
    main()
