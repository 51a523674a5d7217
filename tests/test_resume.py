"""Save, kill, resume: a training run killed part-way and resumed from its last checkpoint ends bit-identical
to a run that was never interrupted.

Three fresh processes run the training program below (this file doubles as it, see ``main``):

1. an uninterrupted run of ``STEPS`` optimizer steps;
2. the same run, checkpointing model, optimizer, scheduler and step count with ``ember.save`` every
   ``EVERY`` steps, which SIGKILLs itself in the middle of step ``DIE_AT`` (gradients computed, update not
   yet applied): no ``finally``, no atexit, nothing flushed;
3. a run that resumes from whatever checkpoint the killed one left and trains on to ``STEPS``.

The final parameters, optimizer state and scheduler state of runs 1 and 3 must be equal bit for bit.

Checkpoints fall mid-epoch, so a resumed run must also replay the data order: shuffling draws from a
generator reseeded from the epoch number at every epoch start, and the resumed epoch skips the batches
already consumed. Dropout masks draw from the default generator, reseeded from the step number before every
step, so a step's mask does not depend on which process runs it. (Saving the generators' states in the
checkpoint instead is not possible yet: ``Generator.get_state()`` returns the backend's raw state, which
``ember.save`` refuses.)
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from itertools import islice

import numpy as np

import ember
from ember import nn
from ember.utils.data import DataLoader, TensorDataset

SEED = 1234
SAMPLES, BATCH = 80, 16  # five batches an epoch
STEPS, EVERY, DIE_AT = 18, 4, 11  # checkpoints at 4, 8 (mid-epoch), ...; killed during step 11, resumed from 8


# -- the training program ------------------------------------------------------------------------------------

def make_model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),  # 4 x 4 x 4
        nn.Flatten(), nn.Dropout(0.2), nn.Linear(64, 3))


def make_data() -> TensorDataset:
    """Synthetic 8x8 images in three classes, by where their values are larger (top or bottom, left half)."""
    g = ember.Generator().manual_seed(SEED)
    images = ember.randn(SAMPLES, 1, 8, 8, generator=g)
    labels = (images[:, 0, :4].sum(dim=(1, 2)) > images[:, 0, 4:].sum(dim=(1, 2))).long() + \
        (images[:, 0, :, :4].sum(dim=(1, 2)) > 0).long()
    return TensorDataset(images, labels)


def train(checkpoint: str, out: str | None, every: int | None, die_at: int | None, resume: bool) -> None:
    ember.manual_seed(SEED)
    model = make_model()
    optimizer = ember.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.05)
    scheduler = ember.optim.lr_scheduler.StepLR(optimizer, step_size=5, gamma=0.5)  # steps per optimizer step
    shuffle = ember.Generator()
    loader = DataLoader(make_data(), batch_size=BATCH, shuffle=True, generator=shuffle)
    loss_fn = nn.CrossEntropyLoss()

    step = 0
    if resume:
        state = ember.load(checkpoint)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        step = state["step"]
        print(f"resumed at step {step}", flush=True)

    while step < STEPS:
        epoch, done = divmod(step, len(loader))
        shuffle.manual_seed(SEED * 1000 + epoch)  # the epoch's order, whichever process trains it
        for images, labels in islice(loader, done, None):
            ember.manual_seed(SEED * 100_003 + step)  # this step's dropout mask
            optimizer.zero_grad()
            loss = loss_fn(model(images), labels)
            loss.backward()
            step += 1
            if step == die_at:
                print(f"killing myself in step {step}", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
            optimizer.step()
            scheduler.step()
            if every and step % every == 0:
                ember.save(_state(model, optimizer, scheduler, step), checkpoint)
                print(f"checkpoint at step {step}", flush=True)
            if step == STEPS:
                break
    if out:
        ember.save(_state(model, optimizer, scheduler, step), out)


def _state(model, optimizer, scheduler, step: int) -> dict:
    return {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(), "step": step}


def main() -> None:
    parser = argparse.ArgumentParser(description="the training program of tests/test_resume.py")
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--out")
    parser.add_argument("--every", type=int)
    parser.add_argument("--die-at", type=int)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()
    train(args.checkpoint, args.out, args.every, args.die_at, args.resume)


# -- the test ------------------------------------------------------------------------------------------------

def _start(*args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finish(process: subprocess.Popen, timeout: float = 60) -> tuple[int, str]:
    stdout, stderr = process.communicate(timeout=timeout)
    return process.returncode, stdout + stderr


def _assert_bit_identical(got, expected, where: str = "state") -> None:
    """Nested checkpoint contents equal: same keys and values, tensors of the same dtype, shape and bytes."""
    if isinstance(expected, ember.Tensor):
        assert isinstance(got, ember.Tensor), f"{where}: {type(got).__name__}, expected a tensor"
        assert got.dtype is expected.dtype and tuple(got.shape) == tuple(expected.shape), where
        a, b = got.numpy(force=True), expected.numpy(force=True)
        same = a.tobytes() == b.tobytes()
        assert same, \
            f"{where} differs in {int(np.sum(a != b))} of {a.size} values (largest difference " \
            f"{float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))):.3g})"
    elif isinstance(expected, dict):
        assert isinstance(got, dict) and got.keys() == expected.keys(), f"{where}: keys differ"
        for key in expected:
            _assert_bit_identical(got[key], expected[key], f"{where}[{key!r}]")
    elif isinstance(expected, (list, tuple)):
        assert type(got) is type(expected) and len(got) == len(expected), f"{where}: {got!r} != {expected!r}"
        for i, (g, e) in enumerate(zip(got, expected)):
            _assert_bit_identical(g, e, f"{where}[{i}]")
    else:
        assert got == expected, f"{where}: {got!r} != {expected!r}"


def test_killed_run_resumes_bit_identical(tmp_path):
    reference, checkpoint, final = tmp_path / "reference.ckpt", tmp_path / "run.ckpt", tmp_path / "final.ckpt"
    uninterrupted = _start("--checkpoint", tmp_path / "unused.ckpt", "--out", reference)
    killed = _start("--checkpoint", checkpoint, "--every", EVERY, "--die-at", DIE_AT)

    code, output = _finish(killed)
    last = DIE_AT - 1 - (DIE_AT - 1) % EVERY  # the last checkpoint before the kill
    assert code == -signal.SIGKILL, f"the run was meant to SIGKILL itself, it exited with {code}:\n{output}"
    assert f"checkpoint at step {last}" in output and f"killing myself in step {DIE_AT}" in output, output
    assert ember.load(checkpoint)["step"] == last

    code, output = _finish(_start("--checkpoint", checkpoint, "--out", final, "--resume"))
    assert code == 0, output
    assert f"resumed at step {last}" in output, output
    code, output = _finish(uninterrupted)
    assert code == 0, output

    expected, got = ember.load(reference), ember.load(final)
    assert expected["step"] == got["step"] == STEPS
    _assert_bit_identical(got, expected)
    # the comparison means something: the resumed run trained on, its parameters moved since the checkpoint
    for name, value in ember.load(checkpoint)["model"].items():
        if value.is_floating_point():
            assert not np.array_equal(value.numpy(), got["model"][name].numpy()), f"{name} did not change"


if __name__ == "__main__":
    main()
