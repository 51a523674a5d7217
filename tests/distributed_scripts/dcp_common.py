"""What the dcp_* scripts and tests/test_distributed_checkpoint.py save and expect, computed the same everywhere.

``state_dict(version, rank, bounds)`` is a model + optimizer state dict whose tensors hold values that depend
only on the key and ``version``; keys named in ``bounds`` are ``ShardedTensor`` pieces ``bounds[key][rank]``
(flat element ranges). ``version=None`` gives zeros and placeholder values: a target to load into.
"""
import numpy as np

import ember
from ember.distributed.sharded_tensor import ShardedTensor

SPECS = {
    "model.w": ((5, 7), "float32"),
    "model.b": ((9,), "float64"),
    "model.h": ((4, 4), "bfloat16"),
    "model.i": ((6,), "int64"),
    "model.mask": ((3, 5), "bool"),
    "optim.state.model.w.exp_avg": ((5, 7), "float32"),
    "optim.state.model.w.step": ((), "float32"),
}

# Saved at 4 ranks: uneven and empty pieces, and exp_avg replicated over two replica groups (HYBRID_SHARD).
BOUNDS_4 = {
    "model.w": [(0, 0), (0, 13), (13, 35), (35, 35)],
    "model.b": [(0, 3), (3, 3), (3, 9), (9, 9)],
    "model.h": [(0, 4), (4, 8), (8, 12), (12, 16)],
    "model.mask": [(0, 15), (15, 15), (15, 15), (15, 15)],
    "optim.state.model.w.exp_avg": [(0, 20), (20, 35), (0, 20), (20, 35)],
}
# Loaded at 2 ranks: other boundaries, an empty piece, overlapping pieces.
BOUNDS_2 = {
    "model.w": [(0, 30), (30, 35)],
    "model.b": [(0, 0), (0, 9)],
    "model.h": [(0, 9), (9, 16)],
    "model.mask": [(0, 7), (7, 15)],
    "optim.state.model.w.exp_avg": [(0, 35), (10, 35)],
}


def full(key, version):
    """The global tensor ``key`` of ``version`` (zeros when version is None)."""
    shape, dtype = SPECS[key]
    if version is None:
        return ember.zeros(shape, dtype=getattr(ember, dtype))
    rng = np.random.default_rng(list(SPECS).index(key) + 100 * version)
    if dtype == "bool":
        values = rng.random(shape) > 0.5
    elif dtype == "int64":
        values = rng.integers(-1000, 1000, shape)
    else:
        values = rng.standard_normal(shape)
    return ember.tensor(values).to(getattr(ember, dtype))


def leaf(key, version, rank, bounds):
    t = full(key, version)
    if key not in bounds:
        return t
    start, stop = bounds[key][rank]
    return ShardedTensor(t.reshape(-1)[start:stop].clone(), t.shape, start)


def state_dict(version, rank=0, bounds=None):
    bounds = bounds or {}

    def get(key):
        return leaf(key, version, rank, bounds)
    return {
        "model": {"w": get("model.w"), "b": get("model.b"), "h": get("model.h"), "i": get("model.i"),
                  "mask": get("model.mask")},
        "optim": {"state": {"model.w": {"exp_avg": get("optim.state.model.w.exp_avg"),
                                        "step": get("optim.state.model.w.step")}},
                  "param_groups": [{"lr": None if version is None else 0.01 * version, "betas": (0.9, 0.999),
                                    "params": [] if version is None else ["model.w", "model.b"]}]},
        "extra": {"epoch": None if version is None else version, "name": "run"},
    }


def leaves(sd):
    """``{flat key: leaf}`` of a state dict built by ``state_dict``."""
    from ember.distributed.checkpoint.flatten import flatten_state_dict
    return flatten_state_dict(sd)[0]


def mismatches(sd, version, rank=0, bounds=None):
    """The keys whose values differ from what ``state_dict(version, rank, bounds)`` holds."""
    expected = leaves(state_dict(version, rank, bounds))
    wrong = []
    for key, value in leaves(sd).items():
        want = expected[key]
        if isinstance(value, ShardedTensor):
            same = value.offset == want.offset and value.to_local().equal(want.to_local())
        elif isinstance(value, ember.Tensor):
            same = value.equal(want)
        else:
            same = value == want
        if not same:
            wrong.append(key)
    return wrong


class Checks:
    """One rank's checks: passes counted, failures named, for the summary line the test reads."""

    def __init__(self) -> None:
        self.passed, self.failed = 0, []

    def check(self, name: str, ok: bool) -> None:
        if ok:
            self.passed += 1
        else:
            self.failed.append(name)

    def raises(self, name: str, kind, text: str, action) -> None:
        try:
            action()
        except kind as exc:
            self.check(name, text in str(exc))
            return
        except Exception as exc:
            self.failed.append(f"{name}: {type(exc).__name__}: {exc}")
            return
        self.failed.append(f"{name}: no error")

    def summary(self, script: str, rank: int) -> str:
        return f"{script} rank {rank}: {self.passed} checks passed, failed: {self.failed}"
