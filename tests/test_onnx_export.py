"""``ember.onnx.export`` itself: names, parameters, files, modes, folding and its errors."""
from __future__ import annotations

import io
import os

import numpy as np
import pytest

import ember
from ember import nn
from ember.onnx import OnnxExporterError, SymbolicValueError, UnsupportedOperatorError

from onnx_check import export_bytes, onnx, run_onnx


def _mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def _model(data: bytes):
    return onnx.load_from_string(data)


def test_parameters_are_initializers_named_by_state_dict_keys():
    model = _mlp()
    proto = _model(export_bytes(model, (ember.randn(3, 4),), input_names=["x"], do_constant_folding=False))
    names = {i.name for i in proto.graph.initializer}
    assert names == set(model.state_dict())
    arrays = {i.name: onnx.numpy_helper.to_array(i) for i in proto.graph.initializer}
    np.testing.assert_array_equal(arrays["0.weight"], model[0].weight.detach().numpy())
    assert [i.name for i in proto.graph.input] == ["x"]


def test_export_params_false_makes_parameters_inputs():
    model = _mlp()
    x = ember.randn(3, 4)
    data = export_bytes(model, (x,), input_names=["x"], export_params=False)
    proto = _model(data)
    assert not proto.graph.initializer
    assert {i.name for i in proto.graph.input} == {"x"} | set(model.state_dict())
    feeds = {"x": x, **{k: v for k, v in model.state_dict().items()}}
    np.testing.assert_allclose(run_onnx(data, feeds)[0], model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_keep_initializers_as_inputs_lists_parameters_as_overridable_inputs():
    model = _mlp()
    proto = _model(export_bytes(model, (ember.randn(3, 4),), input_names=["x"], keep_initializers_as_inputs=True,
                                do_constant_folding=False))
    assert {i.name for i in proto.graph.input} == {"x"} | set(model.state_dict())
    assert {i.name for i in proto.graph.initializer} == set(model.state_dict())


def test_constant_folding_keeps_the_result_and_removes_weight_transposes():
    ember.manual_seed(0)
    model = nn.Linear(4, 3)
    x = ember.randn(2, 5, 4)  # 3-d input: MatMul with the transposed weight
    folded = export_bytes(model, (x,), input_names=["x"])
    unfolded = export_bytes(model, (x,), input_names=["x"], do_constant_folding=False)
    assert "Transpose" not in {n.op_type for n in _model(folded).graph.node}
    assert "Transpose" in {n.op_type for n in _model(unfolded).graph.node}
    np.testing.assert_allclose(run_onnx(folded, {"x": x})[0], run_onnx(unfolded, {"x": x})[0], rtol=1e-6)


def test_output_names_and_dynamic_axes_labels():
    model = _mlp()
    proto = _model(export_bytes(model, (ember.randn(3, 4),), input_names=["x"], output_names=["scores"],
                                dynamic_axes={"x": [0], "scores": {0: "rows"}}))
    x_dims = [d.dim_param or d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim]
    out_dims = [d.dim_param or d.dim_value for d in proto.graph.output[0].type.tensor_type.shape.dim]
    assert x_dims == ["x_dynamic_axes_1", 4]
    assert proto.graph.output[0].name == "scores" and out_dims == ["rows", 2]


def test_f_none_returns_the_model_and_file_objects_get_the_bytes(tmp_path):
    model, x = _mlp(), ember.randn(2, 4)
    proto = ember.onnx.export(model, x, None)
    assert isinstance(proto, onnx.ModelProto)
    buffer = io.BytesIO()
    assert ember.onnx.export(model, x, buffer) is None
    assert buffer.getvalue() == proto.SerializeToString()
    path = tmp_path / "mlp.onnx"
    ember.onnx.export(model, (x,), str(path))
    onnx.checker.check_model(str(path), full_check=True)
    assert [p for p in os.listdir(tmp_path) if p.endswith(".tmp")] == []


class _Noisy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(3, 3)

    def forward(self, x):
        return self.inner(x) + ember.randn_like(x)


def test_an_op_without_lowering_names_the_op_and_module_and_leaves_the_file(tmp_path):
    path = tmp_path / "model.onnx"
    path.write_bytes(b"previous")
    model = nn.Sequential(_Noisy())
    with pytest.raises(UnsupportedOperatorError, match=r"op 'rand_normal'.*module '0'"):
        ember.onnx.export(model, (ember.randn(2, 3),), str(path))
    assert path.read_bytes() == b"previous"


def test_a_python_read_of_tensor_values_is_a_clear_error():
    class Branchy(nn.Module):
        def forward(self, x):
            return x * 2 if x.sum().item() > 0 else x

    with pytest.raises(OnnxExporterError, match=r"item\(\)"):
        ember.onnx.export(Branchy(), (ember.ones(3),), io.BytesIO())


def test_a_python_loop_over_a_dynamic_axis_is_a_clear_error():
    class Loop(nn.Module):
        def forward(self, x):
            total = x[:, 0]
            for t in range(1, x.shape[1]):
                total = total + x[:, t]
            return total

    x = ember.randn(2, 5)
    with pytest.raises(SymbolicValueError, match="different ops"):
        ember.onnx.export(Loop(), (x,), io.BytesIO(), input_names=["x"], dynamic_axes={"x": {1: "time"}})
    export_bytes(Loop(), (x,), input_names=["x"], dynamic_axes={"x": {0: "batch"}})  # the batch axis is fine


def test_dynamic_axes_errors():
    model, x = _mlp(), ember.randn(3, 4)
    with pytest.raises(SymbolicValueError, match="does not exist"):
        ember.onnx.export(model, (x,), io.BytesIO(), input_names=["x"], dynamic_axes={"x": {2: "b"}})
    with pytest.warns(UserWarning, match="neither an input"):
        ember.onnx.export(model, (x,), io.BytesIO(), input_names=["x"], dynamic_axes={"y": {0: "b"}})
    with pytest.raises(ValueError, match="opset_version 9"):
        ember.onnx.export(model, (x,), io.BytesIO(), opset_version=9)


def test_model_mode_is_restored_and_export_is_visible_inside_forward():
    seen = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append((self.training, ember.onnx.is_in_onnx_export()))
            return x + 1

    model = Probe().train()
    ember.onnx.export(model, (ember.ones(2),), io.BytesIO())
    assert seen == [(False, True)] and model.training and not ember.onnx.is_in_onnx_export()
    seen.clear()
    ember.onnx.export(model, (ember.ones(2),), io.BytesIO(), training=ember.onnx.TrainingMode.PRESERVE)
    assert seen == [(True, True)]


def test_keyword_arguments_from_a_trailing_dict():
    class Scaled(nn.Module):
        def forward(self, x, scale=None):
            return x if scale is None else x * scale

    x, scale = ember.randn(2, 3), ember.rand(2, 1)
    data = export_bytes(Scaled(), (x, {"scale": scale}), input_names=["x", "scale"])
    np.testing.assert_allclose(run_onnx(data, {"x": x, "scale": scale})[0], (x * scale).numpy(), rtol=1e-6)


def test_returning_an_input_and_the_same_value_twice():
    class Twice(nn.Module):
        def forward(self, x):
            y = x * 3
            return x, y, y

    x = ember.randn(2, 2)
    got = run_onnx(export_bytes(Twice(), (x,), input_names=["x"]), {"x": x})
    np.testing.assert_array_equal(got[0], x.numpy())
    np.testing.assert_allclose(got[1], (x * 3).numpy())
    np.testing.assert_allclose(got[2], (x * 3).numpy())
