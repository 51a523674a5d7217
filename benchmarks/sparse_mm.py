"""Sparse @ dense (``sparse.mm``) at the GCN shape: Ember against PyTorch, the same code on both.

A 2,708-node graph with about 10,000 random edges (seeded; Cora's size) times 2,708 × 1,433 float32
features: the first layer of a graph convolutional network. Ember's CPU backend hands the product to
SciPy's CSR kernel; PyTorch uses its own. Cases: the forward product of a coalesced COO adjacency and of
its CSR form, and forward + backward (gradient to the features) of the COO one.
"""
from __future__ import annotations

import warnings

import numpy as np

from harness import Case, Section, Timing
from sides import Lineup

NODES, EDGES, FEATURES = 2708, 10_000, 1433
TIMING = {True: Timing(rounds=3, budget_s=0.05, settle_s=0.1), False: Timing(rounds=11, budget_s=0.2, settle_s=0.1)}


def _graph():
    rng = np.random.default_rng(2708)
    edges = np.stack([rng.integers(0, NODES, EDGES), rng.integers(0, NODES, EDGES)])
    weights = rng.random(EDGES, dtype=np.float32)
    features = rng.standard_normal((NODES, FEATURES), dtype=np.float32)
    return edges, weights, features


def _adjacency(side, edges, weights, layout: str):
    lib = side.lib
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's beta warnings for sparse tensors
        adj = lib.sparse_coo_tensor(side.tensor(edges), side.tensor(weights), (NODES, NODES)).coalesce()
        return adj.to_sparse_csr() if layout == "csr" else adj


def _forward(layout: str):
    def build(sides):
        edges, weights, features = _graph()
        calls, outputs = [], []
        for side in sides:
            adj, x = _adjacency(side, edges, weights, layout), side.tensor(features)
            calls.append(lambda side=side, adj=adj, x=x: side.lib.sparse.mm(adj, x))
            outputs.append(np.asarray(calls[-1]().cpu().numpy()))
        same = all(np.allclose(o, outputs[0], rtol=1e-4, atol=1e-4) for o in outputs)
        return calls, "" if same else "outputs differ between sides"
    return build


def _forward_backward(sides):
    edges, weights, features = _graph()
    calls = []
    for side in sides:
        adj, x = _adjacency(side, edges, weights, "coo"), side.tensor(features, requires_grad=True)

        def step(side=side, adj=adj, x=x):
            x.grad = None
            side.lib.sparse.mm(adj, x).sum().backward()
            return x.grad
        calls.append(step)
    return calls, ""


def section(lineup: Lineup, quick: bool) -> Section:
    """Only where PyTorch is the reference (NumPy has no sparse tensors)."""
    cases = [Case("spmm_coo", "sparse.mm COO 2708² (10k nnz) @ 2708×1433", _forward("coo")),
             Case("spmm_csr", "sparse.mm CSR 2708² (10k nnz) @ 2708×1433", _forward("csr")),
             Case("spmm_backward", "sparse.mm COO forward + backward (grad to the features)", _forward_backward)]
    return Section("sparse", "Sparse products (GCN shape)", lineup.sides(), cases, TIMING[quick],
                   note="Each framework in its own processes; ratio = Ember time / PyTorch time.")
