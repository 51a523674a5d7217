"""The example package of custom ops (examples/custom_op_package): its fused bias-GELU passes opcheck on every
installed backend, runs compiled without a graph break, exports to ONNX and through ember.export, follows
autocast's "promote" category and its own vmap rule, checks its arguments in its fake, and takes a kernel a
plugin ships for its device."""
from __future__ import annotations

import io

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradgradcheck
from ember.library import opcheck

from library_ops import DEVICES, example_package, host, ops_left_as_found


@pytest.fixture(autouse=True)
def _leaves_ops_as_found():
    with ops_left_as_found():
        yield


@pytest.fixture
def fused_ops():
    with example_package() as package:
        yield package


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_bias_gelu_passes_opcheck_on_every_installed_backend(fused_ops, device, approximate):
    x = ember.randn(6, 5, device=device, requires_grad=True)
    bias = ember.randn(5, device=device, requires_grad=True)
    result = opcheck(fused_ops.bias_gelu, (x, bias), {"approximate": approximate})
    assert result == dict.fromkeys(result, "SUCCESS") and len(result) == 6
    expected = F.gelu(x + bias, approximate=approximate)
    np.testing.assert_allclose(host(fused_ops.bias_gelu(x, bias, approximate)), host(expected), rtol=1e-5,
                               atol=1e-6)


def test_bias_gelu_differentiates_twice(fused_ops):
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    bias = ember.randn(4, dtype=ember.float64, requires_grad=True)
    assert gradgradcheck(fused_ops.bias_gelu, (x, bias))


def test_a_model_using_it_compiles_whole(fused_ops, device):
    layer = ember.nn.Linear(5, 8).to(device)

    def forward(x):
        return fused_ops.bias_gelu(F.linear(x, layer.weight), layer.bias).sum()

    x = ember.randn(4, 5, device=device)
    report = ember.compiler.explain(forward)(x)
    forward_ops, backward_ops = report.ops_per_graph  # the layer's parameters require grad: both are captured
    assert report.graph_break_count == 0 and forward_ops[-2:] == ["fused_ops::bias_gelu", "sum"]
    assert forward_ops.count("fused_ops::bias_gelu") == 1 and "erf" in backward_ops  # its derivative's ops
    compiled = ember.compile(forward, fullgraph=True)
    for _ in range(2):
        layer.zero_grad()
        compiled(x).backward()
        got = [host(p.grad) for p in layer.parameters()]
        layer.zero_grad()
        forward(x).backward()
        for g, e in zip(got, [host(p.grad) for p in layer.parameters()]):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opset", [18, 20])
def test_it_exports_to_onnx_through_its_lowering(fused_ops, opset):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    layer = ember.nn.Linear(4, 6)

    class Model(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = layer

        def forward(self, x):
            return fused_ops.bias_gelu(F.linear(x, self.layer.weight), self.layer.bias, "tanh")

    model, x = Model(), ember.randn(3, 4)
    buffer = io.BytesIO()
    ember.onnx.export(model, (x,), buffer, opset_version=opset)
    session = ort.InferenceSession(buffer.getvalue())
    out = session.run(None, {session.get_inputs()[0].name: host(x)})[0]
    np.testing.assert_allclose(out, host(model(x)), rtol=1e-5, atol=1e-6)


def test_it_survives_ember_export(fused_ops):
    layer = ember.nn.Linear(4, 6)

    class Model(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = layer

        def forward(self, x):
            return fused_ops.bias_gelu(F.linear(x, self.layer.weight), self.layer.bias)

    model, x = Model(), ember.randn(3, 4)
    program = ember.export.export(model, (x,))
    assert "fused_ops.bias_gelu" in str(program)
    np.testing.assert_allclose(host(program.module()(x)), host(model(x)), rtol=1e-6)


def test_autocast_promotes_its_inputs_to_the_wider_dtype(fused_ops):
    x, bias = ember.randn(2, 3).to(ember.bfloat16), ember.randn(3)
    with pytest.raises(ember.DtypeError, match="x and bias must be of one floating dtype"):
        fused_ops.bias_gelu(x, bias)
    with ember.autocast("cpu"):
        out = fused_ops.bias_gelu(x, bias)
    assert out.dtype is ember.float32


def test_its_vmap_rule_batches_x_and_bias(fused_ops, device):
    xs = ember.randn(4, 2, 3, device=device)
    biases = ember.randn(4, 3, device=device)
    for in_dims, args in [((0, None), (xs, biases[0])), ((0, 0), (xs, biases)), ((None, 0), (xs[0], biases))]:
        out = ember.vmap(fused_ops.bias_gelu, in_dims=in_dims)(*args)
        looped = [fused_ops.bias_gelu(args[0][b] if in_dims[0] == 0 else args[0],
                                      args[1][b] if in_dims[1] == 0 else args[1]) for b in range(4)]
        np.testing.assert_allclose(host(out), np.stack([host(t) for t in looped]), rtol=1e-5, atol=1e-6)


def test_its_fake_checks_the_arguments(fused_ops):
    with pytest.raises(ember.ShapeError, match=r"bias must have shape \(3,\) .* got x \(2, 3\), bias \(2,\)"):
        fused_ops.bias_gelu(ember.randn(2, 3), ember.randn(2))
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh'"):
        fused_ops.bias_gelu(ember.randn(2, 3), ember.randn(3), "erf")


def test_a_plugin_registers_a_kernel_for_its_device(fused_ops):
    if ember.backends.available().get("template") != "available":
        pytest.skip("the template plugin is not installed")
    x = ember.randn(2, 3, device="template")
    with pytest.raises(ember.BackendError, match="no kernel for device type 'template'"):
        fused_ops.bias_gelu(x, ember.randn(3, device="template"))
    # what a plugin shipping kernels for the op does at import: register one for its device type
    ember.library.register_kernel("fused_ops::bias_gelu", "template", lambda x, bias, approximate="none":
                                  F.gelu(x + bias, approximate=approximate))
    bias = ember.randn(3, device="template")
    np.testing.assert_allclose(host(fused_ops.bias_gelu(x, bias)), host(F.gelu(x + bias)), rtol=1e-6)
    result = opcheck(fused_ops.bias_gelu, (x.cpu(), bias.cpu()), test_utils="test_backends")
    assert result == {"test_backends": "SUCCESS"}
