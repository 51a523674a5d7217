"""Small versions of the benchmark's training workloads (MLP, CNN, transformer encoder, GPT), for the compile tests.

Each is a model, its optimizer, a batch and a loss, built on a device with weights fixed by a seed, so
that two builds (one to compile, one to run eagerly) start from the same weights. The GPT is
examples/gpt.py's, the model the benchmark times, at a smaller size; the others are the benchmark's
architectures, narrowed. None has dropout unless asked, so compiled and eager runs do the same arithmetic.
"""
from __future__ import annotations

import importlib.util
import pathlib
import sys
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

import ember
from ember import nn
from ember.nn import functional as F

GPT_EXAMPLE = pathlib.Path(__file__).resolve().parent.parent / "examples" / "gpt.py"


def _load_gpt_example():
    spec = importlib.util.spec_from_file_location("ember_example_gpt", GPT_EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


gpt_example = _load_gpt_example()
GPT_CONFIG = gpt_example.GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16)
#: Adam's eps, above the rounding noise (~1e-9) that stands in for the exactly-zero gradient of attention's
#: key bias: Adam moves a weight by about lr·g/(|g| + eps), so with the default 1e-8 that noise alone
#: moves the key bias by a sizeable part of lr, differently for each order of summation, and compiled
#: and eager weights could not be compared within 1e-5. Real gradients here are far above 1e-6.
ADAM_EPS = 1e-6


@dataclass(frozen=True)
class Workload:
    """``loss(model, x, y)`` is the training loss; ``model(x)`` is the output the forward tests compare."""
    key: str
    model: Callable[[], nn.Module]
    optimizer: Callable[[nn.Module], ember.optim.Optimizer]
    batch: Callable[[np.random.Generator], tuple[np.ndarray, np.ndarray]]
    loss: Callable[[nn.Module, ember.Tensor, ember.Tensor], ember.Tensor]

    def build(self, device: str, seed: int = 0) -> nn.Module:
        ember.manual_seed(seed)
        return self.model().to(device)

    def tensors(self, device: str, seed: int = 0) -> tuple[ember.Tensor, ember.Tensor]:
        return tuple(ember.tensor(a, device=device) for a in self.batch(np.random.default_rng(seed)))


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4))


def _cnn() -> nn.Module:
    """8×8 → conv 4 → pool 4×4 → conv 8 → pool 2×2 → 32 features → 3 classes."""
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32, 3))


def _encoder(dropout: float = 0.0) -> nn.Module:
    layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=dropout, batch_first=True)
    return nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)


def gpt(dropout: float = 0.0) -> nn.Module:
    return gpt_example.gpt(ember, replace(GPT_CONFIG, dropout=dropout))


def _classes(shape: tuple[int, ...], classes: int):
    return lambda rng: (rng.standard_normal(shape, dtype=np.float32), rng.integers(0, classes, shape[0]))


def _tokens(rng: np.random.Generator):
    shape = (3, GPT_CONFIG.block_size)
    return rng.integers(0, GPT_CONFIG.vocab_size, shape), rng.integers(0, GPT_CONFIG.vocab_size, shape)


WORKLOADS = {w.key: w for w in [
    Workload("mlp", _mlp, lambda m: ember.optim.Adam(m.parameters(), lr=1e-3, eps=ADAM_EPS), _classes((8, 12), 4),
             lambda m, x, y: F.cross_entropy(m(x), y)),
    Workload("cnn", _cnn, lambda m: ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9),
             _classes((4, 1, 8, 8), 3), lambda m, x, y: F.cross_entropy(m(x), y)),
    Workload("transformer", _encoder, lambda m: ember.optim.AdamW(m.parameters(), lr=1e-3, eps=ADAM_EPS),
             lambda rng: tuple(rng.standard_normal((2, 5, 16), dtype=np.float32) for _ in range(2)),
             lambda m, x, y: F.mse_loss(m(x), y)),
    Workload("gpt", gpt, lambda m: gpt_example.gpt_optimizer(ember, m, lr=1e-3, eps=ADAM_EPS), _tokens,
             lambda m, x, y: m(x, y)[1]),
]}


def training_step(workload: Workload, model, optimizer=None):
    """One step as a user writes it: zero_grad, forward, loss, backward, optimizer step; returns the loss."""
    optimizer = optimizer or workload.optimizer(model)

    def step(x, y):
        optimizer.zero_grad()
        loss = workload.loss(model, x, y)
        loss.backward()
        optimizer.step()
        return loss
    return step
