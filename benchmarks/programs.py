"""The work of well-known public PyTorch programs that the four training steps do not have.

Recurrent language models (PyTorch's word-language-model example, LSTM and GRU: a training step with
``clip_grad_norm_`` and the example's hand-written SGD, and its evaluation loop), two stacked ``LSTMCell`` over
1,000 steps in float64 with ``LBFGS`` (the time-sequence-prediction example), makemore's character-level MLP (a
training step with its random minibatch, an evaluation on 20k rows, and its dataset's ``__getitem__``),
minGPT/nanoGPT's autoregressive sampling and greedy addition decoding (many tiny forward passes under
``no_grad``), and small GPTs trained at one thread with two AdamW groups and ``clip_grad_norm_``.

Each case is built per side from the same code (benchmarks/program_models.py) and the same weights (the first
process to build a case stores them; the others load them), and the sides' outputs on a fixed input are compared
before timing. Cases that draw random numbers (dropout, minibatches, sampling) draw them from each framework's
own generator: the same amount of work, not the same numbers.
"""
from __future__ import annotations

import pathlib
import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np

from harness import Call, Case, Section, Timing, shared
from program_models import add_digits, char_example, char_mlp, detached, generate, sine_sequence, word_lm
from sides import Lineup, Side, load_numpy_state, numpy_state

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "examples"))
from gpt import GPTConfig, gpt, gpt_optimizer  # noqa: E402

TIMING = {True: Timing(rounds=3, budget_s=0.05, settle_s=0.15),
          False: Timing(rounds=7, budget_s=0.3, settle_s=0.15)}

LM_VOCABULARY, LM_BPTT, LM_BATCH, LM_EVAL_BATCH, LM_EVAL_CHUNKS = 1000, 35, 20, 10, 4
SINE_STEPS, SINE_BATCH, LBFGS_ITERATIONS = 1000, 97, 1
CHAR_BLOCK, CHAR_EMBEDDING, CHAR_HIDDEN, CHAR_BATCH, CHAR_ROWS, CHAR_EVAL_ROWS = 3, 16, 200, 32, 180_000, 20_000
WORD_LENGTH = 15
SAMPLE_TOKENS = 100
ADDER = GPTConfig(vocab_size=10, block_size=6, n_layer=3, n_head=3, n_embd=48)
NANOGPT = GPTConfig(vocab_size=65, block_size=64, n_layer=2, n_head=4, n_embd=64)


@dataclass(frozen=True)
class Program:
    """One case: ``build(side)`` returns the timed call and an output on a fixed input that every side must agree on."""
    key: str
    name: str
    build: Callable[[Side], tuple[Call, np.ndarray]]
    tolerance: float = 1e-4
    rounds: int | None = None  # fewer rounds than the section's, for a call that takes seconds


def _same_weights(side: Side, key: str, model):
    """``model`` with the case's shared initial weights (made by whichever process builds the case first)."""
    state = shared.get(f"{key}-weights", lambda: numpy_state(model))
    load_numpy_state(side, model, state)
    return model.to(side.device)


def _evaluated(side: Side, model, *inputs) -> np.ndarray:
    """The model's eval-mode output on ``inputs``, as float64 NumPy; the model is left in training mode."""
    model.eval()
    with side.lib.no_grad():
        out = model(*inputs)
    model.train()
    out = out[0] if isinstance(out, tuple) else out
    return out.detach().cpu().double().numpy()


# -- the word-language-model example ----------------------------------------------------------------------------

def _word_lm(cell: str, width: int, training: bool) -> Callable[[Side], tuple[Call, np.ndarray]]:
    def build(side: Side):
        lib = side.lib
        lib.manual_seed(0)
        model = _same_weights(side, f"{cell.lower()}{width}", word_lm(lib, cell, LM_VOCABULARY, width))
        rng = np.random.default_rng(0)
        batch = LM_BATCH if training else LM_EVAL_BATCH
        chunks = 1 if training else LM_EVAL_CHUNKS
        source = side.tensor(rng.integers(0, LM_VOCABULARY, (LM_BPTT * chunks + 1, batch)))
        criterion = lib.nn.NLLLoss()
        check = _evaluated(side, model, source[:LM_BPTT], model.init_hidden(batch))
        hidden = model.init_hidden(batch)

        def train_step():
            nonlocal hidden
            data, targets = source[:LM_BPTT], source[1:LM_BPTT + 1].reshape(-1)
            hidden = detached(hidden)
            model.zero_grad()
            output, hidden = model(data, hidden)
            criterion(output, targets).backward()
            lib.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-20.0)

        def evaluate():
            model.eval()
            total, state = 0.0, model.init_hidden(batch)
            with lib.no_grad():
                for i in range(0, source.size(0) - 1, LM_BPTT):
                    data, targets = source[i:i + LM_BPTT], source[i + 1:i + 1 + LM_BPTT].reshape(-1)
                    output, state = model(data, state)
                    state = detached(state)
                    total += len(data) * criterion(output, targets).item()
            return total

        return (train_step if training else evaluate), check
    return build


# -- the time-sequence-prediction example -----------------------------------------------------------------------

def _sine_lbfgs(side: Side):
    lib = side.lib
    lib.manual_seed(0)
    model = _same_weights(side, "sine", sine_sequence(lib))
    rng = np.random.default_rng(2)
    waves = np.sin((np.arange(SINE_STEPS + 1) + rng.integers(-80, 80, (SINE_BATCH, 1))) / 20.0)
    series, target = side.tensor(waves[:, :-1]), side.tensor(waves[:, 1:])
    criterion = lib.nn.MSELoss()
    optimizer = lib.optim.LBFGS(model.parameters(), lr=0.8, max_iter=LBFGS_ITERATIONS)

    def closure():
        optimizer.zero_grad()
        loss = criterion(model(series), target)
        loss.backward()
        return loss

    check = _evaluated(side, model, series[:4, :50])
    return (lambda: optimizer.step(closure)), check


# -- makemore -----------------------------------------------------------------------------------------------------

def _char_rows(rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 27, (rows, CHAR_BLOCK)), rng.integers(0, 27, rows)


def _char_model(side: Side):
    side.lib.manual_seed(0)
    return _same_weights(side, "char_mlp", char_mlp(side.lib, CHAR_BLOCK, CHAR_EMBEDDING, CHAR_HIDDEN))


def _char_mlp_step(side: Side):
    lib, model = side.lib, _char_model(side)
    xs, ys = (side.tensor(a) for a in _char_rows(CHAR_ROWS, 0))
    optimizer = lib.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01, betas=(0.9, 0.99), eps=1e-8)
    F = lib.nn.functional

    def step():
        ix = lib.randint(0, xs.shape[0], (CHAR_BATCH,))
        loss = F.cross_entropy(model(xs[ix]), ys[ix])
        model.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step, _evaluated(side, model, xs[:64])


def _char_mlp_eval(side: Side):
    lib, model = side.lib, _char_model(side)
    xs, ys = (side.tensor(a) for a in _char_rows(CHAR_EVAL_ROWS, 1))
    model.eval()

    def evaluate():
        with lib.no_grad():
            return lib.nn.functional.cross_entropy(model(xs), ys).item()

    return evaluate, _evaluated(side, model, xs[:64])


def _char_batch(side: Side):
    rng = np.random.default_rng(3)
    words = [rng.integers(1, 27, rng.integers(2, WORD_LENGTH + 1)).tolist() for _ in range(CHAR_BATCH)]
    lib = side.lib

    def batch():
        xs, ys = zip(*(char_example(lib, word, WORD_LENGTH) for word in words))
        return lib.stack(xs), lib.stack(ys)

    return batch, np.concatenate([t.numpy() for t in batch()]).astype(np.float64)


# -- minGPT / nanoGPT -----------------------------------------------------------------------------------------------

def _gpt_model(side: Side, key: str, config: GPTConfig):
    side.lib.manual_seed(0)
    return _same_weights(side, key, gpt(side.lib, config))


def _sampling(batch: int):
    def build(side: Side):
        lib = side.lib
        model = _gpt_model(side, "gpt_sampler", GPTConfig())
        prompt = side.tensor(np.zeros((batch, 1), np.int64))
        model.eval()

        def sample():
            with lib.no_grad():
                return generate(lib, model, prompt, SAMPLE_TOKENS, GPTConfig.block_size, temperature=0.8, top_k=10)

        return sample, _evaluated(side, model, prompt)
    return build


def _addition_problems(count: int) -> np.ndarray:
    """Rows of minGPT's adder dataset: the digits of a and b, then a + b's three digits reversed."""
    def digits(n: int, width: int) -> list[int]:
        return [(n // 10 ** i) % 10 for i in reversed(range(width))]

    rng = np.random.default_rng(4)
    a, b = rng.integers(0, 100, count), rng.integers(0, 100, count)
    return np.array([digits(x, 2) + digits(y, 2) + digits(x + y, 3)[::-1] for x, y in zip(a, b)], np.int64)


def _addition_eval(side: Side):
    lib = side.lib
    model = _gpt_model(side, "adder", ADDER)
    problems = side.tensor(_addition_problems(500))
    model.eval()

    def evaluate():
        with lib.no_grad():
            return add_digits(lib, model, problems, 2, 100)

    return evaluate, _evaluated(side, model, problems[:16, :6])


def _gpt_step(key: str, config: GPTConfig, batch: int, masked_inputs: int = 0, **adamw):
    """One nanoGPT/minGPT training step: loss, backward, ``clip_grad_norm_(1.0)``, AdamW in two groups, zero_grad.
    ``masked_inputs`` leading target positions are -1 (minGPT's adder masks the question so only the answer is
    learnt) and ignored by the loss."""
    def build(side: Side):
        lib = side.lib
        model = _gpt_model(side, key, config)
        rng = np.random.default_rng(5)
        tokens = rng.integers(0, config.vocab_size, (batch, config.block_size + 1))
        targets = tokens[:, 1:].copy()
        targets[:, :masked_inputs] = -1
        x, y = side.tensor(tokens[:, :-1]), side.tensor(targets)
        optimizer = gpt_optimizer(lib, model, **adamw)
        F = lib.nn.functional

        def step():
            logits = model(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1), ignore_index=-1)
            loss.backward()
            lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        return step, _evaluated(side, model, x[:4])
    return build


PROGRAMS = [
    Program("lstm_lm", f"Word LM: LSTM 2×200, vocabulary {LM_VOCABULARY}, bptt {LM_BPTT}×{LM_BATCH}, clip, SGD step",
            _word_lm("LSTM", 200, True)),
    Program("gru_lm", f"Word LM: GRU 2×200, vocabulary {LM_VOCABULARY}, bptt {LM_BPTT}×{LM_BATCH}, clip, SGD step",
            _word_lm("GRU", 200, True)),
    Program("lstm_lm_small", "Word LM: LSTM 2×32, same recipe", _word_lm("LSTM", 32, True)),
    Program("gru_lm_small", "Word LM: GRU 2×32, same recipe", _word_lm("GRU", 32, True)),
    Program("lstm_lm_eval", f"Word LM evaluation: LSTM 2×200, {LM_EVAL_CHUNKS}×{LM_BPTT} tokens × batch "
            f"{LM_EVAL_BATCH}, no_grad", _word_lm("LSTM", 200, False)),
    Program("gru_lm_eval", f"Word LM evaluation: GRU 2×200, {LM_EVAL_CHUNKS}×{LM_BPTT} tokens × batch "
            f"{LM_EVAL_BATCH}, no_grad", _word_lm("GRU", 200, False)),
    Program("sine_lbfgs", f"2 LSTMCell(51) × {SINE_STEPS} steps, float64, batch {SINE_BATCH}: one LBFGS step "
            f"(max_iter {LBFGS_ITERATIONS})", _sine_lbfgs, tolerance=1e-8, rounds=2),
    Program("char_mlp", f"makemore MLP (block {CHAR_BLOCK}, embedding {CHAR_EMBEDDING}, hidden {CHAR_HIDDEN}): "
            f"minibatch {CHAR_BATCH} + AdamW step", _char_mlp_step),
    Program("char_mlp_eval", f"makemore MLP: cross-entropy of {CHAR_EVAL_ROWS // 1000}k rows, no_grad",
            _char_mlp_eval),
    Program("char_data", f"makemore CharDataset: {CHAR_BATCH} × __getitem__ (slice assignments) + stack",
            _char_batch, tolerance=0.0),
    Program("sample_1", f"GPT 3×d48 sampling {SAMPLE_TOKENS} tokens, batch 1 (top-k, softmax, multinomial)",
            _sampling(1)),
    Program("sample_64", f"GPT 3×d48 sampling {SAMPLE_TOKENS} tokens, batch 64", _sampling(64), rounds=3),
    Program("adder_eval", "minGPT adder: greedy decoding of 500 2-digit additions in batches of 100",
            _addition_eval),
    Program("nanogpt", f"nanoGPT {NANOGPT.n_layer}×d{NANOGPT.n_embd}, block {NANOGPT.block_size}, batch 12: "
            "step with clip, AdamW 2 groups", _gpt_step("nanogpt", NANOGPT, 12)),
    Program("mingpt_adder", f"minGPT adder {ADDER.n_layer}×d{ADDER.n_embd}, batch 64: step with clip, "
            "AdamW 2 groups", _gpt_step("mingpt_adder", ADDER, 64, masked_inputs=3, lr=5e-4)),
]


def _case(program: Program) -> Case:
    def build(sides):
        calls, outputs = [], []
        for side in sides:
            call, output = program.build(side)
            calls.append(call)
            outputs.append(output)
        first = shared.get(f"{program.key}-output", lambda: {"output": outputs[0]})["output"]
        worst = max(float(np.max(np.abs(out - first), initial=0.0)) for out in outputs)
        note = f"outputs differ between sides by up to {worst:.2g}" if worst > program.tolerance else ""
        return calls, note
    return Case(program.key, program.name, build, target=1.0, rounds=program.rounds)


def section(lineup: Lineup, quick: bool) -> Section | None:
    """Ember and PyTorch with default threads and with one thread each; the CPU only (the programs' own device)."""
    if lineup.device != "cpu":
        return None
    torch_one, ember_one = lineup.single_thread, lineup.subject_single_thread
    sides = lineup.sides(torch_one, ember_one)
    pairs = [(lineup.subject.label, lineup.reference.label)] if lineup.reference else []
    if torch_one and ember_one:
        pairs.append((ember_one.label, torch_one.label))
    return Section("programs", "Real programs' work", sides, [_case(p) for p in PROGRAMS], TIMING[quick],
                   pairs=pairs, note="Each call is the unit of work named (a training step, an evaluation, a "
                   "batch of examples, a sampled sequence). Targets (issue 37): ≤ 1.0× PyTorch with default "
                   "threads and at one thread each.")
