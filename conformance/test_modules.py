"""nn layers on the device under test give what they give on the CPU backend: ``test_module_parity[case-dtype]``.

Each case builds one module on the CPU from a fixed seed, deep-copies it to the device (``Module.to``), runs
both copies on the same input values, backpropagates the same random output weights through both, and
compares the outputs, the gradient of every differentiable input, the gradient of every parameter, and
every buffer afterwards (BatchNorm's running statistics and batch count). This is what the per-op checks
cannot see: that a layer's ops compose the same way on the device (layouts of views, broadcasting, in-place
buffer updates, integer and mask inputs), and that everything a module holds follows it to the device.

On ``--backend cpu`` both sides run on the CPU: the test then checks that the machinery works and that
the layers are deterministic. Tolerances and the reference are explained in ``parity``; cases that loosen
them (``scale``) say why beside the case.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

import ember
from ember import nn
from ember.conformance.cases import target_dtypes
from ember.conformance.parity import assert_matches, pair, parity_dtypes, to_device
from ember.conformance.plugin import count

SEED = 20240611  # the modules' parameters are drawn from ember's default generator, seeded with this

#: Recurrent layers, attention and transformer layers chain several matmuls, softmaxes and normalizations
#: (an RNN's gradient runs back through every time step of both layers): summation-order differences of
#: each stage feed the next, so their results drift further than a single layer's. Calibration (perturbing
#: every floating kernel output of the "device" run by random ulps): at scale 1 every case passes 16 ulps,
#: and at 32 ulps seven of the nine cases that fail are these chains; at scale 10 they pass 64 ulps, while a
#: single kernel off by a relative 1e-4 still fails (nearly) every one of them.
CHAIN = 10.0


# -- inputs -------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Arg:
    """One input of a case: how to draw its values, its kind, and whether it is differentiated.

    ``kind`` is "float" (the dtype under test), "int64" (class indices, token ids) or "bool" (masks).
    """

    draw: Callable[[np.random.Generator], np.ndarray]
    kind: str = "float"
    grad: bool = True


def floats(*shape, low: float = -2.0, high: float = 2.0, grad: bool = True) -> Arg:
    return Arg(lambda rng: rng.uniform(low, high, shape), "float", grad)


def ints(*shape, high: int, low: int = 0, at: dict | None = None) -> Arg:
    """Integers in [low, high); ``at`` forces entries ({index: value}), e.g. an ignore_index or a padding_idx."""
    def draw(rng):
        values = rng.integers(low, high, shape)
        for index, value in (at or {}).items():
            values[index] = value
        return values
    return Arg(draw, "int64", False)


def mask(array) -> Arg:
    """A fixed bool mask (True: may not attend)."""
    return Arg(lambda rng: np.array(array, dtype=bool), "bool", False)


def causal(n: int) -> Arg:
    return mask(np.triu(np.ones((n, n), bool), k=1))


# -- cases --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    """``build()`` makes the module (on the CPU, float32, seeded); ``call(module, *inputs)`` runs it."""

    id: str
    build: Callable[[], nn.Module]
    args: tuple
    call: Callable | None = None  # default: module(*inputs)
    train: bool = True
    scale: float = 1.0  # tolerance multiplier (see CHAIN)


def warmed(module: nn.Module, *shape) -> nn.Module:
    """``module`` after one training-mode forward pass, then in eval mode: its running statistics are no
    longer the initial zeros and ones, so evaluation with them tests something."""
    with ember.no_grad():
        module(ember.randn(*shape) * 2 + 0.5)
    return module.eval()


def _classes(n: int):
    return ember.tensor(np.linspace(0.5, 2.0, n), dtype=ember.float32)


def _self_attention(m, x, attn_mask):
    return m(x, x, x, attn_mask=attn_mask)


CASES = [
    # linear
    Case("Linear", lambda: nn.Linear(5, 4), (floats(3, 5),)),
    Case("Linear-nobias-3d", lambda: nn.Linear(5, 4, bias=False), (floats(2, 3, 5),)),
    Case("Bilinear", lambda: nn.Bilinear(3, 4, 5), (floats(6, 3), floats(6, 4))),
    # convolutions
    Case("Conv1d", lambda: nn.Conv1d(3, 4, 3), (floats(2, 3, 9),)),
    Case("Conv1d-stride2-padding2-dilation2-groups2",
         lambda: nn.Conv1d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2), (floats(2, 4, 11),)),
    Case("Conv2d", lambda: nn.Conv2d(3, 4, 3), (floats(2, 3, 7, 7),)),
    Case("Conv2d-stride2", lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1), (floats(2, 3, 8, 8),)),
    Case("Conv2d-padding2-dilation2-groups2", lambda: nn.Conv2d(4, 6, 3, padding=2, dilation=2, groups=2),
         (floats(2, 4, 7, 6),)),
    Case("Conv2d-depthwise-nobias", lambda: nn.Conv2d(4, 4, 3, groups=4, bias=False), (floats(2, 4, 6, 6),)),
    Case("Conv2d-same-reflect", lambda: nn.Conv2d(2, 3, (3, 2), padding="same", padding_mode="reflect"),
         (floats(2, 2, 5, 6),)),
    Case("ConvTranspose2d", lambda: nn.ConvTranspose2d(3, 2, 3), (floats(2, 3, 4, 4),)),
    Case("ConvTranspose2d-stride2-output_padding1-groups2",
         lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
         (floats(2, 4, 4, 5),)),
    # pooling
    Case("MaxPool2d", lambda: nn.MaxPool2d(2), (floats(2, 3, 6, 6),)),
    Case("MaxPool2d-stride2-padding1", lambda: nn.MaxPool2d(3, stride=2, padding=1), (floats(2, 2, 7, 7),)),
    Case("MaxPool2d-dilation2-ceil_mode", lambda: nn.MaxPool2d(2, stride=2, dilation=2, ceil_mode=True),
         (floats(1, 2, 7, 7),)),
    Case("AvgPool2d", lambda: nn.AvgPool2d(2), (floats(2, 3, 6, 6),)),
    Case("AvgPool2d-padding1-exclude_pad", lambda: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
         (floats(2, 2, 7, 6),)),
    Case("AdaptiveAvgPool2d", lambda: nn.AdaptiveAvgPool2d((3, 2)), (floats(2, 3, 7, 5),)),
    # normalization
    Case("BatchNorm1d-train", lambda: nn.BatchNorm1d(4), (floats(6, 4),)),
    Case("BatchNorm1d-train-3d", lambda: nn.BatchNorm1d(3), (floats(4, 3, 5),)),
    Case("BatchNorm1d-eval", lambda: warmed(nn.BatchNorm1d(4), 8, 4), (floats(6, 4),), train=False),
    Case("BatchNorm2d-train", lambda: nn.BatchNorm2d(3), (floats(4, 3, 5, 5),)),
    Case("BatchNorm2d-train-cumulative", lambda: nn.BatchNorm2d(3, momentum=None), (floats(4, 3, 5, 5),)),
    Case("BatchNorm2d-eval", lambda: warmed(nn.BatchNorm2d(3), 4, 3, 5, 5), (floats(4, 3, 5, 5),), train=False),
    Case("LayerNorm", lambda: nn.LayerNorm((4, 5)), (floats(3, 4, 5),)),
    Case("LayerNorm-noaffine", lambda: nn.LayerNorm(6, elementwise_affine=False), (floats(4, 6),)),
    Case("GroupNorm", lambda: nn.GroupNorm(2, 6), (floats(3, 6, 4, 4),)),
    # embedding and dropout
    Case("Embedding-padding_idx", lambda: nn.Embedding(10, 4, padding_idx=0),
         (ints(3, 5, high=10, at={(0, 0): 0, (1, 3): 0, (2, 4): 9}),)),
    Case("Dropout-eval", lambda: nn.Dropout(0.5), (floats(4, 5),), train=False),
    Case("Dropout-p0-train", lambda: nn.Dropout(0.0), (floats(4, 5),)),
    # activations
    Case("ReLU", nn.ReLU, (floats(3, 4, 5),)),
    Case("LeakyReLU", lambda: nn.LeakyReLU(0.2), (floats(3, 4, 5),)),
    Case("ELU", nn.ELU, (floats(3, 4, 5),)),
    Case("GELU", nn.GELU, (floats(3, 4, 5),)),
    Case("GELU-tanh", lambda: nn.GELU(approximate="tanh"), (floats(3, 4, 5),)),
    Case("SiLU", nn.SiLU, (floats(3, 4, 5),)),
    Case("Mish", nn.Mish, (floats(3, 4, 5),)),
    Case("Softplus-beta2", lambda: nn.Softplus(beta=2.0), (floats(3, 4, 5),)),
    Case("Tanh", nn.Tanh, (floats(3, 4, 5),)),
    Case("Sigmoid", nn.Sigmoid, (floats(3, 4, 5),)),
    Case("Hardtanh", nn.Hardtanh, (floats(3, 4, 5),)),
    Case("Softmax-dim1", lambda: nn.Softmax(dim=1), (floats(3, 4, 5, low=-4, high=4),)),
    Case("LogSoftmax", lambda: nn.LogSoftmax(dim=-1), (floats(3, 4, 5, low=-4, high=4),)),
    # recurrent layers: (output, h_n) / (output, (h_n, c_n)), from given initial states
    Case("RNN-2layers-bidirectional-batch_first",
         lambda: nn.RNN(3, 4, num_layers=2, bidirectional=True, batch_first=True),
         (floats(2, 5, 3), floats(4, 2, 4)), scale=CHAIN),
    Case("RNN-relu", lambda: nn.RNN(3, 4, nonlinearity="relu"), (floats(5, 2, 3),), scale=CHAIN),
    Case("LSTM-2layers-bidirectional-batch_first",
         lambda: nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True),
         (floats(2, 5, 3), floats(4, 2, 4), floats(4, 2, 4)), call=lambda m, x, h, c: m(x, (h, c)), scale=CHAIN),
    Case("LSTM-proj_size", lambda: nn.LSTM(3, 5, proj_size=2), (floats(4, 2, 3),), scale=CHAIN),
    Case("GRU-2layers-bidirectional", lambda: nn.GRU(3, 4, num_layers=2, bidirectional=True),
         (floats(5, 2, 3), floats(4, 2, 4)), scale=CHAIN),
    Case("GRU-batch_first", lambda: nn.GRU(3, 4, batch_first=True), (floats(2, 6, 3),), scale=CHAIN),
    # attention: (output, averaged or per-head weights)
    Case("MultiheadAttention-causal_mask", lambda: nn.MultiheadAttention(8, 2, batch_first=True),
         (floats(2, 5, 8), causal(5)), call=_self_attention, scale=CHAIN),
    Case("MultiheadAttention-float_mask-per_head", lambda: nn.MultiheadAttention(8, 4),
         (floats(5, 2, 8), floats(5, 5, low=-3, high=0, grad=False)),
         call=lambda m, x, bias: m(x, x, x, attn_mask=bias, average_attn_weights=False), scale=CHAIN),
    Case("MultiheadAttention-kdim_vdim-key_padding_mask", lambda: nn.MultiheadAttention(8, 2, kdim=6, vdim=4),
         (floats(4, 2, 8), floats(6, 2, 6), floats(6, 2, 4), mask([[0, 0, 0, 1, 1, 0], [1, 0, 0, 0, 0, 0]])),
         call=lambda m, q, k, v, pad: m(q, k, v, key_padding_mask=pad), scale=CHAIN),
    Case("TransformerEncoderLayer-causal",
         lambda: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True),
         (floats(2, 5, 8), causal(5)), call=lambda m, x, c: m(x, src_mask=c), scale=CHAIN),
    Case("TransformerEncoderLayer-norm_first-gelu-eval",
         lambda: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, activation="gelu", norm_first=True),
         (floats(5, 2, 8),), train=False, scale=CHAIN),
    Case("TransformerDecoderLayer",
         lambda: nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0),
         (floats(4, 2, 8), floats(6, 2, 8), causal(4), mask([[0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 0, 0]])),
         call=lambda m, t, mem, c, pad: m(t, mem, tgt_mask=c, memory_key_padding_mask=pad), scale=CHAIN),
    # losses: module(input, target)
    Case("CrossEntropyLoss-weight-ignore_index-label_smoothing",
         lambda: nn.CrossEntropyLoss(weight=_classes(5), ignore_index=-1, label_smoothing=0.1),
         (floats(6, 5), ints(6, high=5, at={1: -1, 4: -1}))),
    Case("CrossEntropyLoss-4d-sum", lambda: nn.CrossEntropyLoss(reduction="sum"),
         (floats(2, 4, 3, 3), ints(2, 3, 3, high=4))),
    Case("CrossEntropyLoss-probabilities-label_smoothing", lambda: nn.CrossEntropyLoss(label_smoothing=0.2),
         (floats(6, 5), floats(6, 5, grad=False)), call=lambda m, x, t: m(x, t.softmax(-1))),
    Case("NLLLoss-weight-ignore_index", lambda: nn.NLLLoss(weight=_classes(5), ignore_index=2),
         (floats(6, 5), ints(6, high=5, at={0: 2})), call=lambda m, x, t: m(x.log_softmax(-1), t)),
    Case("MSELoss", nn.MSELoss, (floats(4, 5), floats(4, 5))),
    Case("MSELoss-sum", lambda: nn.MSELoss(reduction="sum"), (floats(4, 5), floats(4, 5))),
    Case("BCEWithLogitsLoss-pos_weight", lambda: nn.BCEWithLogitsLoss(pos_weight=_classes(4)),
         (floats(3, 4, low=-6, high=6), floats(3, 4, low=0, high=1, grad=False))),
    Case("BCEWithLogitsLoss-weight-none", lambda: nn.BCEWithLogitsLoss(weight=_classes(4), reduction="none"),
         (floats(3, 4, low=-6, high=6), floats(3, 4, low=0, high=1, grad=False))),
    Case("KLDivLoss-batchmean", lambda: nn.KLDivLoss(reduction="batchmean"), (floats(4, 5), floats(4, 5)),
         call=lambda m, x, t: m(x.log_softmax(-1), t.softmax(-1))),
    Case("KLDivLoss-log_target", lambda: nn.KLDivLoss(reduction="sum", log_target=True),
         (floats(4, 5), floats(4, 5)), call=lambda m, x, t: m(x.log_softmax(-1), t.log_softmax(-1))),
    Case("SmoothL1Loss-beta0.5", lambda: nn.SmoothL1Loss(beta=0.5), (floats(4, 5), floats(4, 5))),
    Case("L1Loss", nn.L1Loss, (floats(4, 5), floats(4, 5))),
    # a small network, as trained by examples/train_digits.py
    Case("Sequential-CNN", lambda: nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(64, 10), nn.LogSoftmax(dim=1)), (floats(3, 1, 8, 8),), scale=CHAIN),
]


def pytest_generate_tests(metafunc) -> None:
    if metafunc.definition.name == "test_module_parity":
        dtypes = parity_dtypes(target_dtypes(metafunc.config))
        metafunc.parametrize("case,dtype", [pytest.param(case, dt, id=f"{case.id}-{dt.name}")
                                            for case in CASES for dt in dtypes])


def test_case_ids_are_unique():
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


# -- the check ----------------------------------------------------------------------------------------------

def _flat(result) -> list:
    """A module's result as a flat list of tensors (LSTM: output, h_n, c_n; attention: output, weights)."""
    if result is None:
        return []
    if isinstance(result, (tuple, list)):
        return [t for item in result for t in _flat(item)]
    return [result]


def _inputs(case: Case, dtype, device, rng) -> tuple[list, list]:
    """The case's inputs on the CPU and on the device: the same values, leaves requiring grad where asked."""
    kinds = {"float": dtype, "int64": ember.int64, "bool": ember.bool}
    cpu, dev = [], []
    for arg in case.args:
        on_cpu, on_device = pair(arg.draw(rng), kinds[arg.kind], device, requires_grad=arg.grad)
        cpu.append(on_cpu)
        dev.append(on_device)
    return cpu, dev


def _run(case: Case, module, inputs, rng_seed: int) -> list:
    """Forward, then backward of ``sum(output_i * w_i)`` with seeded standard-normal weights ``w_i``."""
    outputs = _flat(case.call(module, *inputs) if case.call else module(*inputs))
    differentiable = [o for o in outputs if o.requires_grad]
    if differentiable:
        rng = np.random.default_rng(rng_seed)
        weights = [ember.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype, device=o.device)
                   for o in differentiable]
        ember.autograd.backward(differentiable, weights)
    return outputs


def test_module_parity(case, dtype, device, backend, request):
    others = {ember.int64 for a in case.args if a.kind == "int64"} | {ember.bool for a in case.args if a.kind == "bool"}
    if not backend.supports(*others):
        pytest.skip(f"{backend.name} lacks {', '.join(sorted(d.name for d in others))}, which the case's inputs need")
    ember.manual_seed(SEED)
    reference = case.build().to(dtype).train(case.train)
    module = to_device(reference, device)
    seed = zlib.crc32(case.id.encode())  # the same values for every dtype and backend
    cpu_inputs, device_inputs = _inputs(case, dtype, device, np.random.default_rng(seed))

    expected = _run(case, reference, cpu_inputs, seed)
    actual = _run(case, module, device_inputs, seed)

    assert len(actual) == len(expected), f"{len(actual)} outputs on {device}, {len(expected)} on cpu"
    checks = [(f"output {i}", a, e) for i, (a, e) in enumerate(zip(actual, expected))]
    checks += [(f"gradient of input {i}", a.grad, e.grad)
               for i, (a, e) in enumerate(zip(device_inputs, cpu_inputs)) if e.requires_grad]
    params, ref_params = dict(module.named_parameters()), dict(reference.named_parameters())
    assert params.keys() == ref_params.keys()
    checks += [(f"gradient of parameter {name!r}", params[name].grad, ref_params[name].grad) for name in ref_params]
    checks += [(f"parameter {name!r} (as copied)", params[name], ref_params[name]) for name in ref_params]
    buffers, ref_buffers = dict(module.named_buffers()), dict(reference.named_buffers())
    assert buffers.keys() == ref_buffers.keys()
    checks += [(f"buffer {name!r} after the step", buffers[name], ref_buffers[name]) for name in ref_buffers]
    assert any(e is not None and e.requires_grad for e in cpu_inputs) or ref_params, \
        f"{case.id}: nothing to differentiate"

    for what, a, e in checks:
        assert_matches(a, e, f"{case.id}: {what}", device, case.scale)
    count(request.config, "module parity checks (layer and dtype)")
    count(request.config, "module parity tensor comparisons", len(checks))
