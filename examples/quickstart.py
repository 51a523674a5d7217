"""A first look at Ember: create tensors, pick a device, compute.

    python examples/quickstart.py [--device cpu]
"""
from __future__ import annotations

import argparse

import ember


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda, opencl, or any installed backend")
    device = parser.parse_args().device
    print("backends:", ember.backends.available())

    ember.manual_seed(0)
    x = ember.randn(4, 3, device=device)
    w = ember.arange(6.0).view(3, 2).to(device)
    y = (x @ w).relu() if hasattr(ember, "relu") else ember.clamp(x @ w, min=0)
    print("x @ w, clamped at 0:\n", y)
    print("softmax-free stats: mean", y.mean().item(), "max per row", ember.max(y, dim=1).values.tolist())

    # Least squares by the normal equations, written with Ember ops only.
    a = ember.randn(64, 3, device=device)
    true_coef = ember.tensor([[2.0], [-1.0], [0.5]], device=device)
    b = a @ true_coef
    gram = a.T @ a
    # three steps of Richardson iteration on gram @ coef = a.T @ b
    coef = ember.zeros(3, 1, device=device)
    step = 1.0 / ember.norm(gram).item()
    for _ in range(2000):
        coef = coef + step * (a.T @ b - gram @ coef)
    print("recovered coefficients:", [round(c, 3) for c in coef.flatten().tolist()])


if __name__ == "__main__":
    main()
