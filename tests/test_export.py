"""``ember.export.export``: capture, dynamic dimensions and their guards, the signature, decompositions, and
what export leaves untouched; checked against ``torch.export`` on the same calls where PyTorch is installed."""
from __future__ import annotations

import re

import numpy as np
import pytest

import ember
from ember import nn
from ember.export import Dim, ExportError, export

DEVICES = [pytest.param(name, marks=pytest.mark.skipif(ember.backends.available().get(name) != "available",
                                                       reason=f"{name} is not available here"))
           for name in ("cpu", "opencl")]


def _small_class(lib):
    """One architecture, written for ``lib`` (ember or torch)."""
    class Small(lib.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = lib.nn.Linear(4, 3)
            self.register_buffer("b", lib.ones(3))

        def forward(self, x):
            return self.proj(x).relu() + self.b
    return Small


Small = _small_class(ember)


def _close(a, b, tol=1e-5) -> None:
    np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("device", DEVICES)
def test_module_runs_at_other_batch_sizes_on_each_backend(device):
    ember.manual_seed(0)
    model = Small().to(device)
    ep = export(model, (ember.randn(5, 4, device=device),), dynamic_shapes={"x": {0: Dim("batch", min=2, max=16)}})
    module = ep.module()
    for batch in (2, 7, 16):
        x = ember.randn(batch, 4, device=device)
        _close(module(x), model(x))


def test_gradients_flow_through_the_exported_module():
    ember.manual_seed(0)
    model = Small()
    ep = export(model, (ember.randn(5, 4),), dynamic_shapes=({0: Dim("batch")},))
    x = ember.randn(3, 4)
    ep.module()(x).sum().backward()
    exported_grad = model.proj.weight.grad.clone()
    model.zero_grad()
    model(x).sum().backward()
    _close(exported_grad, model.proj.weight.grad)


def test_signature_names_parameters_buffers_and_inputs():
    ep = export(Small(), (ember.randn(5, 4),))
    signature = ep.graph_signature
    assert signature.parameters == ["proj.weight", "proj.bias"]
    assert signature.buffers == ["b"]
    assert signature.user_inputs == ["x"]
    assert signature.inputs_to_parameters == {"p_proj_weight": "proj.weight", "p_proj_bias": "proj.bias"}
    assert sorted(ep.state_dict) == ["b", "proj.bias", "proj.weight"]
    text = str(ep)
    assert text.startswith("ExportedProgram:") and "Graph signature" in text and "Range constraints" in text
    readable = ep.graph_module.print_readable(print_output=False)
    assert 'x: "f32[5, 4]"' in readable and "ember.ops.linear(x, p_proj_weight, p_proj_bias)" in readable


def test_an_exported_program_is_not_called_directly():
    ep = export(Small(), (ember.randn(5, 4),))
    with pytest.raises(RuntimeError, match="Unable to call ExportedProgram directly"):
        ep(ember.randn(5, 4))


def test_guards_name_the_input_and_dimension():
    ep = export(Small(), (ember.randn(5, 4),), dynamic_shapes={"x": {0: Dim("batch", min=2, max=16)}})
    module = ep.module()
    cases = {(20, 4): "Guard failed: x.size()[0] <= 16", (1, 4): "Guard failed: x.size()[0] >= 2",
             (5, 5): "Guard failed: x.size()[1] == 4", (5, 4, 1): "Guard failed: x.dim() == 2"}
    for shape, message in cases.items():
        with pytest.raises(AssertionError, match=re.escape(message)):
            module(ember.randn(*shape))


def test_inputs_sharing_a_dim_must_agree():
    class Add(nn.Module):
        def forward(self, a, b):
            return a + b

    batch = Dim("batch")
    ep = export(Add(), (ember.randn(4, 2), ember.randn(4, 2)), dynamic_shapes=({0: batch}, {0: batch}))
    assert tuple(ep.module()(ember.randn(6, 2), ember.randn(6, 2)).shape) == (6, 2)
    with pytest.raises(AssertionError, match="Dim 'batch' is 6 in an earlier input and 5"):
        ep.module()(ember.randn(6, 2), ember.randn(5, 2))


def test_sizes_computed_from_dynamic_dimensions_follow_them():
    class Flatten(nn.Module):
        def forward(self, x):
            b, t, c = x.shape
            return x.reshape(b * t, c)[: t - 1]

    ep = export(Flatten(), (ember.randn(3, 5, 2),), dynamic_shapes=({0: Dim("b"), 1: Dim("t")},))
    x = ember.randn(4, 7, 2)
    _close(ep.module()(x), x.reshape(28, 2)[:6])


def test_value_dependent_control_flow_is_an_error_naming_the_line():
    class Branchy(nn.Module):
        def forward(self, x):
            if x.sum() > 0:  # the line the error names
                return x * 2
            return x

    with pytest.raises(ExportError, match=r"test_export\.py:\d+ \(if x\.sum\(\) > 0"):
        export(Branchy(), (ember.randn(3),))


def test_a_dim_the_program_fixes_is_an_error_and_auto_leaves_it_fixed():
    model = Small()
    with pytest.raises(ExportError, match="other sizes"):
        export(model, (ember.randn(5, 4),), dynamic_shapes=({1: Dim("features")},))
    ep = export(model, (ember.randn(5, 4),), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},))
    shape = ep.graph.metas[ep.graph.user_inputs()[0].slot].shape
    assert isinstance(shape[1], int) and shape[1] == 4 and not isinstance(shape[0], int)


def test_export_leaves_the_model_inputs_and_generator_as_they_were():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Dropout(0.5)).train()
    x = ember.randn(6, 4)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    state = ember.get_rng_state()
    ep = export(model, (x,), dynamic_shapes=({0: Dim("batch")},))
    assert all(bool((model.state_dict()[k] == v).all()) for k, v in before.items())
    assert bool((ember.get_rng_state() == state).all())
    assert "BUFFER_MUTATION" in str(ep.graph_signature)
    ep.module()(x)  # training mode: the running statistics move, as they do eagerly
    assert not bool((model.state_dict()["1.running_mean"] == before["1.running_mean"]).all())


def test_tied_weights_stay_tied():
    class Tied(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(7, 4)
            self.out = nn.Linear(4, 7, bias=False)
            self.out.weight = self.embed.weight

        def forward(self, tokens):
            return self.out(self.embed(tokens))

    model = Tied()
    ep = export(model, (ember.randint(0, 7, (2, 3)),))
    module = ep.module()
    assert module.embed.weight is module.out.weight
    assert set(ep.state_dict) == {"embed.weight", "out.weight"}


def test_keyword_and_constant_inputs():
    class Scaled(nn.Module):
        def forward(self, x, *, scale, mask=None):
            return x * scale if mask is None else (x * scale).masked_fill(mask, 0.0)

    x = ember.randn(2, 3)
    mask = ember.tensor([[True, False, False], [False, True, False]])
    ep = export(Scaled(), (x,), {"scale": 2.0, "mask": mask})
    _close(ep.module()(x, scale=2.0, mask=mask), (x * 2).masked_fill(mask, 0.0))
    with pytest.raises(ValueError, match="exported with 2.0 here"):
        ep.module()(x, scale=3.0, mask=mask)
    with pytest.raises(TypeError, match="positional argument"):
        ep.module()(x, x, scale=2.0, mask=mask)


def test_constants_made_in_forward_are_lifted():
    class WithConstant(nn.Module):
        def forward(self, x):
            return x + ember.tensor([1.0, 2.0, 3.0])

    ep = export(WithConstant(), (ember.zeros(2, 3),))
    assert ep.graph_signature.lifted_tensor_constants == ["lifted_tensor_0"]
    _close(ep.module()(ember.zeros(2, 3)), ember.tensor([[1.0, 2.0, 3.0]] * 2))


def test_run_decompositions_leaves_primitives_and_the_same_values():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8), nn.Softmax(dim=-1))
    ep = export(model, (ember.randn(3, 4),), dynamic_shapes=({0: Dim("batch")},))
    core = ep.run_decompositions()
    assert {node.target for node in core.graph.nodes} <= {op.name for op in ember.dispatch.schema.OPS.values()
                                                          if op.kind == "primitive"}
    x = ember.randn(5, 4)
    _close(core.module()(x), model(x))
    table = ember.export.default_decompositions()
    del table[ember.nn.functional.linear.__name__]
    assert "linear" in {node.target for node in ep.run_decompositions(table).graph.nodes}


def test_a_decomposition_table_may_replace_an_op():
    table = ember.export.default_decompositions()
    table["relu"] = lambda x: ember.clamp(x, min=0.0) * 1.0
    del table["clamp"]  # kept whole
    ep = export(Small(), (ember.randn(5, 4),)).run_decompositions(table)
    assert "clamp" in {node.target for node in ep.graph.nodes}


def test_errors_for_bad_arguments():
    with pytest.raises(ValueError, match="Expected `mod` to be an instance of `torch.nn.Module`"):
        export(lambda x: x, (ember.randn(2),))
    with pytest.raises(ValueError, match="Expecting `args` to be a tuple"):
        export(Small(), ember.randn(5, 4))
    with pytest.raises(ExportError, match=r"keys must be the argument names \['x'\]"):
        export(Small(), (ember.randn(5, 4),), dynamic_shapes={"y": {0: Dim("b")}})
    with pytest.raises(ExportError, match="outside the range"):
        export(Small(), (ember.randn(5, 4),), dynamic_shapes={"x": {0: Dim("b", max=4)}})
    with pytest.raises(ValueError, match="min <= max"):
        Dim("b", min=5, max=2)


# -- against torch.export ------------------------------------------------------------------------------------

def _torch():
    return pytest.importorskip("torch")


def test_signature_and_output_shapes_match_torch_export():
    torch = _torch()
    ours = export(Small(), (ember.randn(5, 4),), dynamic_shapes={"x": {0: Dim("batch", min=2, max=16)}})
    theirs = torch.export.export(_small_class(torch)(), (torch.randn(5, 4),),
                                 dynamic_shapes={"x": {0: torch.export.Dim("batch", min=2, max=16)}})
    describe = [(s.kind.name, s.target) for s in ours.graph_signature.input_specs]
    assert describe == [(s.kind.name, s.target) for s in theirs.graph_signature.input_specs]
    assert [str(r) for r in ours.range_constraints.values()] == [str(r) for r in theirs.range_constraints.values()]
    for batch in (2, 9, 16):
        assert tuple(ours.module()(ember.randn(batch, 4)).shape) == tuple(theirs.module()(torch.randn(batch, 4)).shape)


@pytest.mark.parametrize("shape", [(20, 4), (5, 5)])
def test_guard_failures_match_torch_export(shape):
    torch = _torch()
    ours = export(Small(), (ember.randn(5, 4),), dynamic_shapes={"x": {0: Dim("batch", min=2, max=16)}})
    theirs = torch.export.export(_small_class(torch)(), (torch.randn(5, 4),),
                                 dynamic_shapes={"x": {0: torch.export.Dim("batch", min=2, max=16)}})
    with pytest.raises(AssertionError) as torch_error:
        theirs.module()(torch.randn(*shape))
    with pytest.raises(AssertionError) as ember_error:
        ours.module()(ember.randn(*shape))
    assert str(ember_error.value).startswith(str(torch_error.value).splitlines()[0])


def test_dynamic_shapes_key_errors_match_torch_export():
    torch = _torch()
    with pytest.raises(Exception) as torch_error:
        torch.export.export(_small_class(torch)(), (torch.randn(5, 4),), dynamic_shapes={"y": {0: None}})
    with pytest.raises(ExportError) as ember_error:
        export(Small(), (ember.randn(5, 4),), dynamic_shapes={"y": {0: None}})
    assert "arg names ['x']" in str(torch_error.value) and "argument names ['x']" in str(ember_error.value)


def test_gpt_example_with_dynamic_batch_and_length():
    from compile_models import gpt

    ember.manual_seed(0)
    model = gpt().eval()
    ep = export(model, (ember.randint(0, 11, (2, 8)),), dynamic_shapes=({0: Dim("batch"), 1: Dim("seq", max=8)},))
    for shape in ((1, 3), (4, 8), (3, 5)):
        tokens = ember.randint(0, 11, shape)
        _close(ep.module()(tokens), model(tokens))
    with pytest.raises(AssertionError, match=r"tokens\.size\(\)\[1\] <= 8|size\(\)\[1\] <= 8"):
        ep.module()(ember.randint(0, 11, (2, 9)))


def test_shapes_collection_and_additional_inputs():
    x = ember.randn(5, 4)
    shapes = ember.export.ShapesCollection()
    shapes[x] = {0: Dim("batch")}
    ep = export(Small(), (x,), dynamic_shapes=shapes)
    assert tuple(ep.module()(ember.randn(9, 4)).shape) == (9, 3)
    more = ember.export.AdditionalInputs()
    more.add((ember.randn(3, 4),))
    more.add((ember.randn(8, 4),))
    ep = export(Small(), (x,), dynamic_shapes=more)
    more.verify(ep)
    with pytest.raises(AssertionError, match=r"x\.size\(\)\[1\] == 4"):
        ep.module()(ember.randn(3, 5))
