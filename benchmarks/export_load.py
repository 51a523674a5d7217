"""Loading a saved exported program (``ember.export.load`` against ``torch.export.load``), the same model on both
sides: examples/gpt.py's GPT, exported with a dynamic batch and sequence length, saved once per side; a timed call
is ``load(path).module()``, what a server does at start-up. The note gives each side's file size.
"""
from __future__ import annotations

import importlib.util
import os
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from harness import Case, Section, Timing
from sides import Lineup

TIMING = {True: Timing(rounds=3, budget_s=0.2, settle_s=0.1), False: Timing(rounds=9, budget_s=0.5, settle_s=0.1)}
GPT = Path(__file__).resolve().parent.parent / "examples" / "gpt.py"
_FOLDER = tempfile.mkdtemp(prefix="ember-bench-export-")


def _gpt_module():
    spec = importlib.util.spec_from_file_location("ember_bench_gpt", GPT)
    module = importlib.util.module_from_spec(spec)
    import sys
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _load_gpt(layers: int, width: int):
    def build(sides):
        example = _gpt_module()
        config = replace(example.GPTConfig(), n_layer=layers, n_embd=width, n_head=4)
        tokens = np.random.default_rng(0).integers(0, config.vocab_size, (2, 16))
        calls, sizes = [], []
        for side in sides:
            lib = side.lib
            lib.manual_seed(0)
            model = example.gpt(lib, config).eval()
            dims = ({0: lib.export.Dim("batch"), 1: lib.export.Dim("seq", max=config.block_size)},)
            program = lib.export.export(model, (lib.tensor(tokens),), dynamic_shapes=dims)
            path = os.path.join(_FOLDER, f"gpt-{layers}-{width}-{side.label}.pt2".replace(" ", "_"))
            lib.export.save(program, path)
            sizes.append(f"{side.label} {os.path.getsize(path) / 1024:.0f} KiB")
            calls.append(lambda lib=lib, path=path: lib.export.load(path).module())
        return calls, "file sizes: " + ", ".join(sizes)
    return build


def section(lineup: Lineup, quick: bool) -> Section | None:
    """Ember and PyTorch on the CPU (loading is host work)."""
    if lineup.device != "cpu":
        return None
    sides = [side for side in lineup.sides() if not side.is_numpy]
    cases = [Case("load_gpt_small", "load + module(): GPT, 3 layers x 48 (examples/gpt.py's size)", _load_gpt(3, 48)),
             Case("load_gpt_wide", "load + module(): GPT, 6 layers x 256", _load_gpt(6, 256))]
    return Section("export", "Loading an exported program (torch.export.load)", sides, cases, TIMING[quick],
                   note="Each framework in its own processes; ratio = Ember time / PyTorch time.")
