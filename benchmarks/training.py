"""One full training step (zero_grad, forward, loss, backward, optimizer step) of four small models.

The models are the issue-8 workloads (an MLP with Adam, a small CNN with SGD + momentum and a
2-layer transformer encoder with AdamW) and a small character-level GPT with AdamW in nanoGPT's two
parameter groups (examples/gpt.py); the issue-8 ones also with their forward and loss under
autocast in the device's low-precision dtype (bfloat16 on cpu, float16 elsewhere), keys ending in
``_amp``. Each is declared once against the API the two frameworks share; every side builds its own
copy and loads the same initial weights (PyTorch's initialisation, copied through
``load_state_dict``), so all sides do identical arithmetic. Before timing, the sides' eval-mode
outputs are compared, so a benchmark never times different models. With each framework in its own
processes, the weights and the output to compare with come from the first process that builds the
case (``harness.shared``), whichever framework that is.

The "Ember compiled" side times ``ember.compile(step)`` of the whole float32 step, after warm-up
calls that pay for capture and kernel compilation; its eval output (from ``ember.compile(model)``)
is compared like the others. On a device other than the CPU, "Ember ... reduce-overhead" times
``ember.compile(step, mode="reduce-overhead")``: the step replayed as one device graph (CUDA graphs)
where the backend can capture one, with static input buffers and a private memory pool. Where
ember.compile is missing or fails, that side is reported as not run and the other sides are timed as usual.
"""
from __future__ import annotations

import pathlib
import sys
from contextlib import nullcontext
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Callable

import numpy as np

from harness import Call, Case, Section, Timing, shared
from sides import Lineup, Side, load_numpy_state, numpy_state

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "examples"))
from gpt import GPTConfig, gpt, gpt_optimizer  # noqa: E402

TIMING = {True: Timing(rounds=3, budget_s=0.05, settle_s=0.15),
          False: Timing(rounds=11, budget_s=0.3, settle_s=0.15)}
#: untimed calls of a compiled step before timing: the first captures and compiles; later ones may
#: recompile once (optimizer state appears on the first step), and must not be timed either
COMPILED_WARMUP = 3


def _mlp(nn: ModuleType):
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))


def _cnn(nn: ModuleType):
    """28×28 → conv 16 → pool 14×14 → conv 32 → pool 7×7 → 32·7·7 = 1568 features → 10 classes."""
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(1568, 10))


def _encoder(nn: ModuleType):
    layer = nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, batch_first=True)
    return nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)


@dataclass(frozen=True)
class Workload:
    """A model, its optimizer, its input batch and its loss, independent of the framework.

    ``model`` takes the framework's module (ember or torch), ``optimizer`` the framework and the model.
    """
    key: str
    name: str
    model: Callable[[ModuleType], object]
    optimizer: Callable[[ModuleType, object], object]
    input_shape: tuple[int, ...]
    target_shape: tuple[int, ...] | None  # None: integer class labels of the batch size, cross-entropy
    target: float | None
    autocast: bool = False  # forward and loss in an autocast region of the side's device type
    vocabulary: int | None = None  # a language model: token ids in, next-token cross-entropy at every position

    def batch(self) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(0)
        if self.vocabulary is not None:
            return tuple(rng.integers(0, self.vocabulary, self.input_shape) for _ in range(2))
        x = rng.standard_normal(self.input_shape, dtype=np.float32)
        if self.target_shape is None:
            return x, rng.integers(0, 10, self.input_shape[0])
        return x, rng.standard_normal(self.target_shape, dtype=np.float32)

    def loss(self, side: Side, output, y):
        functional = side.lib.nn.functional
        if self.vocabulary is not None:
            return functional.cross_entropy(output.reshape(-1, self.vocabulary), y.reshape(-1))
        if self.target_shape is None:
            return functional.cross_entropy(output, y)
        return functional.mse_loss(output, y)


ISSUE8_WORKLOADS = [
    Workload("mlp", "MLP 784-256-256-10, Adam, batch 128", lambda lib: _mlp(lib.nn),
             lambda lib, model: lib.optim.Adam(model.parameters(), lr=1e-3), (128, 784), None, target=0.9),
    Workload("cnn", "CNN conv16-conv32-linear, SGD momentum, batch 64×1×28×28", lambda lib: _cnn(lib.nn),
             lambda lib, model: lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9), (64, 1, 28, 28), None,
             target=1.0),
    Workload("transformer", "Transformer encoder 2×(d128, 4 heads, FF 256), AdamW, batch 16×64",
             lambda lib: _encoder(lib.nn), lambda lib, model: lib.optim.AdamW(model.parameters(), lr=1e-3),
             (16, 64, 128), (16, 64, 128), target=1.0),
]
GPT = GPTConfig()
FLOAT32_WORKLOADS = ISSUE8_WORKLOADS + [
    Workload("gpt", f"GPT {GPT.n_layer}×(d{GPT.n_embd}, {GPT.n_head} heads), vocabulary {GPT.vocab_size}, "
                    f"AdamW 2 groups, batch 64×{GPT.block_size}", lambda lib: gpt(lib, GPT), gpt_optimizer,
             (64, GPT.block_size), None, target=1.2, vocabulary=GPT.vocab_size),
]
WORKLOADS = FLOAT32_WORKLOADS + [replace(w, key=f"{w.key}_amp", name=f"{w.name}, autocast", target=None, autocast=True)
                                 for w in ISSUE8_WORKLOADS]


def _region(side: Side, workload: Workload):
    """The autocast region of an ``_amp`` workload on the side's device type; a no-op context otherwise."""
    if not workload.autocast:
        return nullcontext()
    return side.lib.autocast(side.device.split(":")[0])


def new_model(side: Side, workload: Workload, state: dict[str, np.ndarray] | None = None):
    """The workload's model for ``side``, seeded, with ``state`` loaded if given, on the side's device."""
    side.lib.manual_seed(0)
    model = workload.model(side.lib)
    if state is not None:
        load_numpy_state(side, model, state)
    return model.to(side.device)


def training_step(side: Side, workload: Workload, model):
    """The timed call: one optimizer step on the workload's fixed batch."""
    x, y = (side.tensor(a) for a in workload.batch())
    optimizer = workload.optimizer(side.lib, model)

    def step():
        optimizer.zero_grad()
        with _region(side, workload):
            loss = workload.loss(side, model(x), y)
        loss.backward()
        optimizer.step()
    return step


def _eval_output(side: Side, workload: Workload, model) -> np.ndarray:
    x, _ = workload.batch()
    model.eval()
    with side.lib.no_grad(), _region(side, workload):
        out = model(side.tensor(x)).float().cpu().numpy()
    model.train()
    return out


def _compiled(side: Side, workload: Workload, model) -> tuple[Call | None, np.ndarray | None, str]:
    """The compiled side's step, warmed up, and its eval output; or no step and why not.

    Only float32 workloads are compiled. A missing or failing ``compile`` costs this side only.
    """
    if workload.autocast:
        return None, None, ""
    compile = getattr(side.lib, "compile", None)
    if compile is None:
        return None, None, f"{side.label} not run: {side.framework}.compile does not exist"
    try:
        output = _eval_output(side, workload, compile(model))
        step = compile(training_step(side, workload, model), mode=side.compile_mode)
        for _ in range(COMPILED_WARMUP):
            step()
        side.sync()
    except Exception as exc:  # report it in the row; the eager sides are still timed
        return None, None, f"{side.label} not run: {type(exc).__name__}: {exc}"
    return step, output, ""


def _build(workload: Workload):
    def build(sides):
        reference = next((s for s in sides if s.is_torch), sides[0])
        state = shared.get(f"{workload.key}-weights", lambda: numpy_state(new_model(reference, workload)))
        calls, outputs, notes = [], [], []
        for side in sides:
            model = new_model(side, workload, state)
            if side.compiled:
                step, output, why = _compiled(side, workload, model)
                notes += [why] if why else []
            else:
                step, output = training_step(side, workload, model), _eval_output(side, workload, model)
            calls.append(step)
            outputs += [] if output is None else [output]
        first = shared.get(f"{workload.key}-output", lambda: {"output": outputs[0]})["output"]
        worst = max(float(np.max(np.abs(out - first))) for out in outputs)
        tolerance = 5e-2 if workload.autocast else 1e-3  # low-precision products round differently per side
        if worst >= tolerance:
            notes.append(f"eval outputs differ between sides by up to {worst:.2g}")
        return calls, "; ".join(notes)
    return build


def section(lineup: Lineup, quick: bool) -> Section:
    """Ember and PyTorch with their default threads, each limited to one thread where possible, and Ember
    compiled with its default threads and (where Ember has a 1-thread side) with one thread."""
    cases = [Case(w.key, w.name, _build(w), target=w.target) for w in WORKLOADS]
    torch_one, ember_one = lineup.single_thread, lineup.subject_single_thread
    compiled = replace(lineup.subject, label=f"{lineup.subject.label} compiled", compiled=True)
    compiled_one = ember_one and replace(ember_one, label=f"{lineup.subject.label} compiled 1 thread", compiled=True)
    graphed = None
    if lineup.device != "cpu":  # a device graph replaces launches: what reduce-overhead saves is device-side
        graphed = replace(lineup.subject, label=f"{lineup.subject.label} reduce-overhead", compiled=True,
                          compile_mode="reduce-overhead")
    sides = lineup.sides(torch_one, ember_one, compiled, compiled_one, graphed)
    pairs = [(lineup.subject.label, other.label) for other in (lineup.reference, torch_one) if other]
    if torch_one and ember_one:
        pairs.append((ember_one.label, torch_one.label))
    pairs += [(compiled.label, other.label) for other in (lineup.subject, lineup.reference) if other]
    if compiled_one:
        pairs += [(compiled_one.label, other.label) for other in (ember_one, torch_one) if other]
    if graphed:
        pairs += [(graphed.label, other.label) for other in (lineup.subject, lineup.reference) if other]
    return Section("training", "Training step", sides, cases, TIMING[quick], pairs=pairs,
                   note="One step = zero_grad, forward, loss, backward, optimizer step; identical initial "
                        "weights and inputs on every side. The CPU-speed targets (issue 21) compare the default "
                        f"thread settings (first ratio column). {compiled.label} (and 1 thread): ember.compile of the "
                        f"whole step function, float32 workloads only, timed after {COMPILED_WARMUP} untimed calls (so "
                        "compile time is not in the step time; see benchmarks/compile_time.py for it)."
                        + (f" {graphed.label}: the same with mode=\"reduce-overhead\" (one device graph per step "
                           "where the backend captures graphs)." if graphed else ""))
