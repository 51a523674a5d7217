"""Random calls of PyTorch's ops on both frameworks: the differential fuzzer.

Where ``forms`` changes one thing of a base call PyTorch accepts, the fuzzer changes several at once, at
random (seeded): tensors of other shapes and dtypes, other numbers, hostile values (None, a string, a huge
int, a nested list), optional arguments added, positional or by keyword. Each call runs on both frameworks,
and ``tally`` counts the four outcomes: both accept, both reject, Ember accepts what PyTorch rejects, and
PyTorch accepts what Ember rejects. The last must stay at zero outside the reviewed list: that is a call
ported code makes that Ember would refuse.
"""
from __future__ import annotations

import random
import zlib
from collections import Counter
from dataclasses import dataclass

from .candidates import candidates
from .exceptions import excuse
from .forms import Base, find_base
from .native import Arg
from .outcome import Call, Unbuildable, exists, judge, run
from .values import Value, npy, py, tensor

SHAPES = ((), (1,), (3,), (2, 3), (3, 3), (1, 3), (2, 1, 3), (0,), (2, 0), (1, 2, 4, 4))
DTYPES = ("float32", "float64", "int64", "int32", "bool", "float16", "uint8")
#: Values of the wrong kind or range. No large sizes: PyTorch itself runs some for hours (max_pool1d with a
#: kernel of 2**62, combinations with r=10**4); Ember's own fuzzer (ember.conformance.fuzzing) tries those on Ember.
HOSTILE = (py(None), py("text"), py(7), py(-1), py(0), py(1.5), py(True), Value("list", (py(1), py("x"))),
           Value("tuple", ()), npy(3, "int64"))


@dataclass(frozen=True)
class Outcome:
    """One fuzzed call and how the two frameworks answered it."""
    call: Call
    direction: str  # "both accept", "both reject", "Ember accepts", "PyTorch accepts"
    mismatch: str | None


def _tensor_variant(value: Value, rng: random.Random) -> Value:
    shape = value.shape if rng.random() < 0.4 else rng.choice(SHAPES)
    dtype = value.dtype if rng.random() < 0.5 else rng.choice(DTYPES)
    fill = value.fill if dtype == value.dtype else None
    return tensor(shape, dtype, fill)


def _variant(arg: Arg, value: Value, base: Base, rng: random.Random) -> Value:
    """Another value for ``arg``: mostly of its kind, sometimes anything."""
    roll = rng.random()
    if roll < 0.3:
        return value
    if roll < 0.45:
        return rng.choice(HOSTILE)
    if value.kind == "tensor":
        return _tensor_variant(value, rng)
    if value.kind == "list" and value.data and all(v.kind == "tensor" for v in value.data):
        return Value("list", tuple(_tensor_variant(v, rng) for v in value.data))
    pool = candidates(arg, base.profile)
    if value.kind == "python" and isinstance(value.data, (int, float)) and not isinstance(value.data, bool):
        pool = pool + [py(value.data * rng.choice((-1, 2, 3))), npy(value.data, "float64"), tensor((), "int64")]
    return rng.choice(pool) if pool else value


def fuzzed_calls(base: Base, seed: int, count: int) -> list[Call]:
    """``count`` random variants of ``base``: every required argument redrawn, some optional ones added."""
    rng = random.Random(seed)
    optional = [a for a in base.overload.args if a.default is not None and not a.mutated]
    surfaces = base.op.surfaces(base.overload)
    calls = []
    for _ in range(count):
        surface = rng.choice(surfaces)
        replaced = {a.name: _variant(a, base.values[a.name], base, rng) for a in base.required()}
        keywords = {a.name for a in base.required() if rng.random() < 0.3
                    and not (surface == "method" and a.name == "self")}
        extra = {}
        for arg in rng.sample(optional, min(len(optional), rng.randint(0, 2))):
            pool = candidates(arg, base.profile) + [rng.choice(HOSTILE)]
            extra[arg.name] = rng.choice(pool)
        calls.append(base.call("fuzzed", surface, replaced=replaced, keywords=keywords, extra=extra))
    return calls


def outcome(torch, ember, op_id: str, call: Call, device: str | None = None) -> Outcome | None:
    """How both frameworks answer ``call`` (PyTorch on its CPU, Ember on ``device``); None where either lacks
    the function or cannot hold a value."""
    if not (exists(torch, call) and exists(ember, call)):
        return None
    try:
        theirs, ours = run(torch, call), run(ember, call, device)
    except Unbuildable:
        return None
    if theirs.accepted and ours.accepted:
        direction = "both accept"
    elif not theirs.accepted and not ours.accepted:
        direction = "both reject"
    else:
        direction = "Ember accepts" if ours.accepted else "PyTorch accepts"
    mismatch = judge(theirs, ours, values=not call.random, unique_outputs=call.unique_outputs)
    return Outcome(call, direction, mismatch)


def tally(outcomes: list[Outcome], op_id: str) -> Counter:
    """Counts by direction, and of the mismatches no reviewed entry excuses (``unexcused <direction>``)."""
    counts: Counter = Counter()
    for o in outcomes:
        counts[o.direction] += 1
        if o.mismatch is not None and excuse(op_id, "fuzzed", str(o.call), o.mismatch) is None:
            counts[f"unexcused {o.direction}"] += 1
    return counts


def op_outcomes(torch, ember, op, calls_per_overload: int, seed: int | None = None,
                device: str | None = None) -> list[Outcome]:
    """The outcomes of ``calls_per_overload`` fuzzed calls of each overload of ``op`` that has a base call
    PyTorch accepts; the calls are drawn from ``seed`` (a fixed stream per overload where None)."""
    found = []
    for position, overload in enumerate(op.overloads):
        base = None if overload.is_out else find_base(torch, op, overload)
        if base is None:
            continue
        stream = f"{op.id}.{position}" if seed is None else f"{seed}:{op.id}.{position}"
        for call in fuzzed_calls(base, zlib.crc32(stream.encode()), calls_per_overload):
            answered = outcome(torch, ember, op.id, call, device)
            if answered is not None:
                found.append(answered)
    return found
