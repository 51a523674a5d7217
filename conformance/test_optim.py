"""Optimizers on the device under test follow the CPU backend's trajectory, and their checkpoints move between devices.

- ``test_optimizer_parity[config-dtype]``: a small MLP built on the CPU from a fixed seed and a copy on the
  device train for ``STEPS`` steps on the same batches; after every step the parameters must match, and at
  the end every piece of optimizer state (momentum buffers, moment estimates, step counts) and every
  hyperparameter too.
- ``test_optimizer_checkpoint_round_trip[config-dtype]``: a CPU run checkpointed half-way with
  ``ember.save`` is loaded onto the device (``ember.load(map_location=device)``) into a fresh model and
  optimizer; the state arrives bit for bit and on the device, and the device run then continues as the
  uninterrupted CPU run does. The device's own checkpoint loads back onto the CPU bit for bit as well.

The optimizers are core code written in Ember ops, so what this checks on a backend is that their update
arithmetic (sqrt, division, lerp-like blends, in-place ``copy_`` into parameters under ``no_grad``) and the
state they keep behave as on the CPU, step after step.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np
import pytest

import ember
from ember import nn, optim
from ember.conformance.cases import target_dtypes
from ember.conformance.oracle import host
from ember.conformance.parity import CPU, assert_matches, assert_values_match, parity_dtypes, to_device
from ember.conformance.plugin import count

SEED = 7
STEPS = 5
BATCH, FEATURES, HIDDEN, CLASSES = 8, 4, 6, 3

#: Each step's gradients come from a forward and backward pass through the network, and each update feeds
#: the next step's forward pass: after five steps the summation-order differences of all of them have
#: compounded (Adam and RMSprop also divide by running roots of squared gradients), as in the recurrent
#: module cases of ``test_modules``. Calibrated the same way: every run passes with all kernel outputs of the
#: device run perturbed by 64 random ulps, and every one but plain float32 SGD fails with one kernel off by
#: a relative 1e-4 (the displacement check below is what makes that visible).
SCALE = 10.0


@dataclass(frozen=True)
class Config:
    id: str
    optimizer: type
    options: dict = field(default_factory=dict)
    groups: bool = False  # two param groups (the second with its own lr), to exercise state indexing


CONFIGS = [
    Config("SGD", optim.SGD, dict(lr=0.1)),
    Config("SGD-momentum-dampening", optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.2)),
    Config("SGD-nesterov-weight_decay", optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    Config("Adam", optim.Adam, dict(lr=0.01)),
    Config("Adam-amsgrad-weight_decay", optim.Adam, dict(lr=0.01, betas=(0.8, 0.95), weight_decay=0.05,
                                                           amsgrad=True)),
    Config("AdamW", optim.AdamW, dict(lr=0.01, weight_decay=0.1)),
    Config("AdamW-amsgrad-groups", optim.AdamW, dict(lr=0.01, amsgrad=True), groups=True),
    Config("RMSprop", optim.RMSprop, dict(lr=0.01)),
    Config("RMSprop-centered-momentum", optim.RMSprop, dict(lr=0.01, alpha=0.9, momentum=0.8, centered=True,
                                                            weight_decay=0.01)),
    Config("Adagrad", optim.Adagrad, dict(lr=0.1)),
    Config("Adagrad-lr_decay-weight_decay", optim.Adagrad, dict(lr=0.1, lr_decay=0.01, weight_decay=0.05,
                                                                initial_accumulator_value=0.1)),
    Config("NAdam-decoupled_weight_decay", optim.NAdam, dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    Config("RAdam-weight_decay", optim.RAdam, dict(lr=0.01, betas=(0.9, 0.9), weight_decay=0.05)),
    Config("Adamax", optim.Adamax, dict(lr=0.01, weight_decay=0.01)),
    Config("Adadelta", optim.Adadelta, dict(lr=1.0, rho=0.8)),
    Config("ASGD", optim.ASGD, dict(lr=0.05, t0=2, lambd=1e-2)),
    Config("Rprop", optim.Rprop, dict(lr=0.01)),
    Config("Adafactor-groups", optim.Adafactor, dict(lr=0.05, weight_decay=0.01), groups=True),
]


def pytest_generate_tests(metafunc) -> None:
    if "config" in metafunc.fixturenames:
        dtypes = parity_dtypes(target_dtypes(metafunc.config))
        metafunc.parametrize("config,dtype", [pytest.param(c, dt, id=f"{c.id}-{dt.name}")
                                              for c in CONFIGS for dt in dtypes])


def test_config_ids_are_unique():
    ids = [c.id for c in CONFIGS]
    assert len(ids) == len(set(ids))


# -- one training run ---------------------------------------------------------------------------------------

def build_mlp(dtype):
    ember.manual_seed(SEED)
    return nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, CLASSES)).to(dtype)


def make_optimizer(config: Config, model):
    if not config.groups:
        return config.optimizer(model.parameters(), **config.options)
    first, second = model[0], model[2]
    return config.optimizer([{"params": first.parameters()},
                             {"params": second.parameters(), "lr": config.options["lr"] / 2}], **config.options)


def batches(config: Config, count_: int = STEPS) -> list:
    """Host values of the inputs and class labels, the same for every device and dtype."""
    rng = np.random.default_rng(zlib.crc32(config.id.encode()))
    return [(rng.standard_normal((BATCH, FEATURES)), rng.integers(0, CLASSES, BATCH)) for _ in range(count_)]


def train_step(model, optimizer, batch, dtype, device) -> None:
    x, y = batch
    loss = nn.functional.cross_entropy(model(ember.tensor(x, dtype=dtype, device=device)),
                                       ember.tensor(y, dtype=ember.int64, device=device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


# -- comparisons --------------------------------------------------------------------------------------------

def snapshot(model) -> dict:
    """The parameters' values on the host, in float64: where the updates are measured from."""
    return {name: host(p).astype(np.float64) for name, p in model.named_parameters()}


def assert_same_parameters(model, reference, device, what: str, start: dict | None = None,
                           scale: float = SCALE) -> int:
    """The parameters of ``model`` (on ``device``) match ``reference``'s (on the CPU); how many compared.

    With ``start`` (a ``snapshot`` both runs began from), the displacements ``p - start`` must match too, to
    the tolerance relative to their own size: a parameter moves by about ``lr`` per step, so an update that
    is off by a small fraction hides in the parameter's value but not in its displacement.
    """
    params = dict(model.named_parameters())
    for name, expected in reference.named_parameters():
        assert_matches(params[name], expected, f"{what}: parameter {name!r}", device, scale)
        if start is not None:
            assert_values_match(host(params[name]).astype(np.float64) - start[name],
                                host(expected).astype(np.float64) - start[name], expected.dtype,
                                f"{what}: displacement of parameter {name!r}", device, scale)
    return len(params) * (1 if start is None else 2)


def assert_same_state(state: dict, expected: dict, device, what: str, scale: float = SCALE) -> int:
    """Two ``Optimizer.state_dict()``s agree: the same hyperparameters and, per parameter, the same state
    entries (tensors on ``device`` within tolerance, other values equal). ``scale=0`` asks for bit-for-bit
    equality (a checkpoint round trip copies values, it computes nothing). Returns how many tensors compared."""
    assert state["param_groups"] == expected["param_groups"], f"{what}: hyperparameters differ"
    assert state["state"].keys() == expected["state"].keys(), f"{what}: state for other parameters"
    compared = 0
    for index, entries in expected["state"].items():
        assert state["state"][index].keys() == entries.keys(), f"{what}: state entries of parameter {index} differ"
        for key, value in entries.items():
            got = state["state"][index][key]
            where = f"{what}: state[{index}][{key!r}]"
            if isinstance(value, ember.Tensor):
                assert isinstance(got, ember.Tensor), f"{where} is {type(got).__name__}, on cpu a tensor"
                assert_matches(got, value, where, device, scale)
                compared += 1
            else:
                assert got == value, f"{where} is {got!r}, on cpu {value!r}"
    return compared


# -- tests --------------------------------------------------------------------------------------------------

def test_optimizer_parity(config, dtype, device, request):
    reference = build_mlp(dtype)
    model = to_device(reference, device)
    ref_opt, opt = make_optimizer(config, reference), make_optimizer(config, model)
    start = snapshot(reference)
    compared = 0
    for step, batch in enumerate(batches(config), 1):
        train_step(reference, ref_opt, batch, dtype, CPU)
        train_step(model, opt, batch, dtype, device)
        compared += assert_same_parameters(model, reference, device, f"{config.id} after step {step}", start)
    compared += assert_same_state(opt.state_dict(), ref_opt.state_dict(), device, f"{config.id} after {STEPS} steps")
    count(request.config, "optimizer parity checks (configuration and dtype)")
    count(request.config, "optimizer parity tensor comparisons", compared)


def test_optimizer_checkpoint_round_trip(config, dtype, device, tmp_path, request):
    half = STEPS // 2
    data = batches(config, STEPS + 1)
    reference = build_mlp(dtype)
    ref_opt = make_optimizer(config, reference)
    for batch in data[:half]:
        train_step(reference, ref_opt, batch, dtype, CPU)
    ember.save({"model": reference.state_dict(), "optimizer": ref_opt.state_dict(), "step": half},
               tmp_path / "cpu.ckpt")
    saved_state = ref_opt.state_dict()

    # a fresh model and optimizer on the device resume from the CPU checkpoint
    checkpoint = ember.load(tmp_path / "cpu.ckpt", map_location=device)
    assert checkpoint["step"] == half
    model = build_mlp(dtype).to(device)
    opt = make_optimizer(config, model)
    model.load_state_dict(checkpoint["model"])
    opt.load_state_dict(checkpoint["optimizer"])
    assert_same_parameters(model, reference, device, f"{config.id} as loaded", scale=0.0)
    assert_same_state(opt.state_dict(), saved_state, device, f"{config.id} as loaded onto {device}", scale=0.0)
    start = snapshot(reference)

    for step, batch in enumerate(data[half:STEPS], half + 1):
        train_step(reference, ref_opt, batch, dtype, CPU)
        train_step(model, opt, batch, dtype, device)
        assert_same_parameters(model, reference, device, f"{config.id} resumed on {device}, step {step}", start)
    assert_same_state(opt.state_dict(), ref_opt.state_dict(), device, f"{config.id} resumed on {device}")

    # and back: the device's checkpoint loads onto the CPU unchanged, and training goes on there as on the device
    ember.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, tmp_path / "device.ckpt")
    back = ember.load(tmp_path / "device.ckpt", map_location="cpu")
    cpu_model = build_mlp(dtype)
    cpu_opt = make_optimizer(config, cpu_model)
    cpu_model.load_state_dict(back["model"])
    cpu_opt.load_state_dict(back["optimizer"])
    assert_same_parameters(cpu_model, model, CPU, f"{config.id} loaded back from {device}", scale=0.0)
    assert_same_state(cpu_opt.state_dict(), opt.state_dict(), CPU, f"{config.id} loaded back from {device}",
                      scale=0.0)
    start = snapshot(cpu_model)
    train_step(cpu_model, cpu_opt, data[STEPS], dtype, CPU)
    train_step(model, opt, data[STEPS], dtype, device)
    assert_same_parameters(model, cpu_model, device, f"{config.id}: one more step after the trip back", start)
    count(request.config, "optimizer checkpoint round trips (configuration and dtype)")
