"""Which parameters a forward pass did not use: those whose gradient sink its outputs cannot reach.

DDP with ``find_unused_parameters=True`` walks the autograd graph back from the forward's outputs; a
parameter it does not reach will get no gradient in backward, so DDP marks it ready itself.
"""
from __future__ import annotations

from ...autograd.graph import AccumulateGrad
from ...tensor import Tensor


def find_tensors(obj) -> list:
    """The tensors inside a forward's output: nested tuples, lists, dicts and namedtuples."""
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for item in obj for t in find_tensors(item)]
    if isinstance(obj, dict):
        return [t for item in obj.values() for t in find_tensors(item)]
    return []


def reached_leaves(outputs: list) -> set:
    """The ids of the leaf tensors whose gradient sinks the graph of ``outputs`` leads to."""
    stack, seen, leaves = [], set(), set()
    for t in outputs:
        if t.grad_fn is not None:
            stack.append(t.grad_fn)
        elif t.requires_grad:
            leaves.add(id(t))  # an output that is itself a leaf (a parameter returned as is)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if node.__class__ is AccumulateGrad:
            leaf = node.variable
            if leaf is not None:
                leaves.add(id(leaf))
            continue
        stack.extend(edge[0] for edge in node.next_edges if edge is not None)
    return leaves


def unused_parameters(params: list, outputs) -> list[int]:
    """Indices of ``params`` that the autograd graph of ``outputs`` does not reach."""
    reached = reached_leaves(find_tensors(outputs))
    return [i for i, p in enumerate(params) if id(p) not in reached]
