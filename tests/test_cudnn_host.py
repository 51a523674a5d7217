"""The host side of the cuDNN path (``ember.backends.cuda.cudnn``), on the CPU with NumPy.

What runs here: the mapping of Ember's convolution arguments to cuDNN's dims (against Ember's own results), the
frontend graphs those dims make (``cudnn.pygraph``, where ``nvidia-cudnn-frontend`` is importable: its graph IR
is plain Python, its validation needs libcudnn), the refusal memory, the fallback kernels, and the kernels'
plumbing around a launch. What does not: the launch itself (``runtime.py``), which needs libcudnn and a GPU
(``scripts/check_cuda.sh`` compares it with the fallback there).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.backends.arraykernels import build_kernels
from ember.backends.cpu.library import NUMPY
from ember.backends.cuda import cudnn as path
from ember.backends.cuda.cudnn import conv, fallback, graphs, specs
from cudnn_frontend import frontend


def tensor(rng, shape, dtype=np.float64):
    return ember.tensor(rng.standard_normal(shape).astype(dtype))


# (input shape, weight shape, stride, padding pairs, dilation, groups)
FORWARD = [
    ((2, 3, 9), (4, 3, 3), (1,), ((1, 1),), (1,), 1),
    ((2, 4, 11), (6, 2, 2), (2,), ((0, 2),), (2,), 2),
    ((3, 10), (5, 3, 4), (3,), ((2, 1),), (1,), 1),  # unbatched
    ((2, 3, 7, 6), (4, 3, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    ((2, 3, 9, 7), (4, 3, 3, 2), (3, 2), ((2, 0), (1, 1)), (1, 1), 1),
    ((1, 4, 8, 9), (4, 1, 3, 3), (2, 1), ((1, 1), (0, 2)), (2, 3), 4),  # depthwise, dilated
    ((4, 5, 6), (6, 4, 2, 3), (1, 2), ((0, 0), (1, 0)), (1, 1), 1),  # unbatched
    ((2, 2, 5, 6, 4), (3, 2, 2, 3, 2), (1, 2, 1), ((1, 1), (0, 1), (1, 0)), (2, 1, 1), 1),
    ((1, 4, 4, 5, 4), (2, 2, 2, 3, 2), (2, 1, 2), ((1, 1),) * 3, (1, 2, 1), 2),
]

# (input shape, weight shape, stride, padding, output_padding, dilation, groups)
TRANSPOSED = [
    ((2, 3, 5), (3, 2, 3), (1,), (0,), (0,), (1,), 1),
    ((1, 4, 4), (4, 3, 2), (2,), (1,), (1,), (1,), 2),
    ((2, 3, 4, 5), (3, 2, 3, 3), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    ((2, 3, 4, 4), (3, 2, 3, 2), (2, 2), (1, 1), (1, 1), (1, 1), 1),
    ((1, 4, 3, 5), (4, 3, 2, 3), (2, 3), (1, 0), (1, 2), (2, 1), 2),
    ((4, 3, 5), (4, 2, 3, 3), (2, 1), (1, 1), (0, 0), (1, 2), 1),  # unbatched
    ((2, 2, 2, 3, 2), (2, 3, 2, 2, 2), (1, 1, 1), (0, 0, 0), (0, 0, 0), (1, 1, 1), 1),
    ((1, 4, 2, 2, 3), (4, 1, 2, 3, 2), (2, 1, 2), (1, 0, 1), (1, 0, 0), (1, 1, 1), 2),
]


def conv_op(n: int, transposed: bool = False):
    return getattr(F, f"conv_transpose{n}d" if transposed else f"conv{n}d")


# -- specs: cuDNN's dims against what Ember computes -------------------------------------------------------

@pytest.mark.parametrize("case", FORWARD, ids=str)
def test_forward_spec_gives_embers_shape(case):
    x_shape, w_shape, stride, padding, dilation, groups = case
    rng = np.random.default_rng(0)
    x, w = tensor(rng, x_shape), tensor(rng, w_shape)
    n = len(w_shape) - 2
    padded = F.pad(x, [v for pair in reversed(padding) for v in pair])  # Ember's convs take symmetric ints
    expected = conv_op(n)(padded, w, None, stride, 0, dilation, groups)
    spec = specs.forward_spec(x_shape, w_shape, padding, stride, dilation, groups, "float32")
    assert spec.shape == tuple(expected.shape)
    assert len(spec.x) == len(spec.w) == len(spec.y) == max(n, 2) + 2
    assert spec.y[:2] == ((x_shape[0] if len(x_shape) == n + 2 else 1), w_shape[0])
    assert np.prod(spec.y) == np.prod(spec.shape) and np.prod(spec.x) == np.prod(x_shape)
    assert spec.x[1] == spec.w[1] * groups
    assert len(spec.pre) == len(spec.post) == len(spec.stride) == len(spec.dilation) == len(spec.x) - 2


@pytest.mark.parametrize("case", TRANSPOSED, ids=str)
def test_transpose_spec_is_a_data_gradient_of_embers_shape(case):
    x_shape, w_shape, stride, padding, output_padding, dilation, groups = case
    rng = np.random.default_rng(1)
    n = len(w_shape) - 2
    expected = conv_op(n, True)(tensor(rng, x_shape), tensor(rng, w_shape), None, stride, padding, output_padding,
                                groups, dilation)
    spec = specs.transpose_spec(x_shape, w_shape, stride, padding, output_padding, groups, dilation, "float16")
    assert spec.kind == "dgrad" and spec.output == "x"
    assert spec.shape == tuple(expected.shape) and np.prod(spec.x) == np.prod(spec.shape)
    # the convolution whose data gradient this is maps the image (the result) back onto the response (x)
    assert np.prod(spec.y) == np.prod(x_shape)
    assert all(specs.windows(*a) == o for a, o in zip(zip(spec.x[2:], spec.pre, spec.post, spec.w[2:], spec.stride,
                                                          spec.dilation), spec.y[2:]))


def test_transpose_spec_refuses_output_padding_past_the_stride():
    # PyTorch allows output_padding below the dilation even when it is not below the stride; cuDNN cannot size it
    why = specs.transpose_spec((1, 2, 4, 3), (2, 3, 2, 3), (1, 1), (0, 0), (1, 0), 1, (2, 2), "float32")
    assert isinstance(why, str) and "output_padding" in why
    assert "float64" not in specs.DATA_TYPES or specs.forward_spec(
        (1, 1, 3, 3), (1, 1, 1, 1), ((0, 0),) * 2, (1, 1), (1, 1), 1, "float64").dtype == "float64"
    assert "int32" in specs.forward_spec((1, 1, 3, 3), (1, 1, 1, 1), ((0, 0),) * 2, (1, 1), (1, 1), 1, "int32")
    assert "empty" in specs.forward_spec((0, 1, 3, 3), (1, 1, 1, 1), ((0, 0),) * 2, (1, 1), (1, 1), 1, "float32")


@pytest.mark.parametrize("case", [
    # (grad shape, input shape, kernel, stride, padding pairs, dilation, groups)
    ((2, 4, 5, 4), (2, 3, 5, 4), (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    ((1, 4, 3, 2), (1, 4, 7, 6), (2, 3), (2, 1), ((1, 0), (0, 1)), (2, 2), 2),
    ((3, 2), (6, 5), (2,), (2,), ((0, 0),), (1,), 3),  # unbatched 1-D, trailing input no window reaches
    ((2, 3, 2, 2), (2, 2, 7, 8), (3, 2), (2, 3), ((1, 2), (2, 2)), (1, 1), 1),  # fewer windows: cut the padding
    ((1, 2, 2, 2, 2), (1, 2, 5, 4, 6), (2, 2, 2), (1, 1, 2), ((0, 0), (1, 0), (0, 1)), (1, 1, 1), 1),
], ids=str)
def test_weight_grad_spec_gives_embers_values(case):
    grad_shape, x_shape, kernel, stride, padding, dilation, groups = case
    rng = np.random.default_rng(2)
    grad, x = tensor(rng, grad_shape), tensor(rng, x_shape)
    expected = ember.convolution_backward_weight(grad, x, kernel, stride, padding, dilation, groups)
    spec, crop = specs.weight_grad_spec(grad_shape, x_shape, kernel, stride, padding, dilation, groups, "float32")
    assert spec.kind == "wgrad" and spec.shape == tuple(expected.shape)
    n = len(kernel)
    assert tuple(spec.x[-n:]) == crop if n > 1 else spec.x[-1:] == crop
    # the cropped input with cuDNN's padding gives the same gradient: nothing the windows read was cut
    cropped = x[(Ellipsis,) + tuple(slice(0, c) for c in crop)]
    lifted = slice(1, None) if n == 1 else slice(None)
    again = ember.convolution_backward_weight(grad, cropped, kernel, stride,
                                              tuple(zip(spec.pre[lifted], spec.post[lifted])), dilation, groups)
    np.testing.assert_allclose(again.numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)


def test_keys_separate_what_a_plan_depends_on():
    spec = specs.forward_spec((2, 3, 8, 8), (4, 3, 3, 3), ((1, 1),) * 2, (1, 1), (1, 1), 1, "float32")
    half = dataclasses.replace(spec, dtype="float16")
    tf32, strict = graphs.Settings(True, False, False), graphs.Settings(False, False, False)
    assert spec.key(0, tf32.for_dtype("float32")) != spec.key(0, strict.for_dtype("float32"))
    assert half.key(0, tf32.for_dtype("float16")) == half.key(0, strict.for_dtype("float16"))  # TF32: float32 only
    assert spec.key(0, strict.for_dtype("float32")) != spec.key(1, strict.for_dtype("float32"))
    assert spec.key(0, ()) != half.key(0, ())
    assert spec.key(0, ())[0][2] == ((192, 64, 8, 1), (27, 9, 3, 1), (256, 64, 8, 1))  # NCHW strides


def test_settings_follow_the_flags():
    cudnn_flags = ember.backends.cudnn
    assert cudnn_flags.allow_tf32 is True  # PyTorch's default for cuDNN convolutions
    with cudnn_flags.flags(enabled=True, allow_tf32=False, deterministic=True, benchmark=True):
        assert graphs.Settings.current() == graphs.Settings(False, True, True)
    assert graphs.Settings.current() == graphs.Settings(True, False, False)
    ember.use_deterministic_algorithms(True)
    try:
        assert graphs.Settings.current().deterministic
    finally:
        ember.use_deterministic_algorithms(False)


# -- frontend graphs (nvidia-cudnn-frontend) -------------------------------------------------------------------

@pytest.mark.parametrize("case", FORWARD, ids=str)
def test_frontend_infers_our_response_dims(case):
    cudnn = frontend()
    x_shape, w_shape, stride, padding, dilation, groups = case
    spec = specs.forward_spec(x_shape, w_shape, padding, stride, dilation, groups, "float32")
    graph, operands = graphs.describe(cudnn, spec)  # raises if the frontend infers other dims than spec.y
    assert operands["y"].get_dim() == list(spec.y)
    assert operands["y"].get_stride() == list(specs.contiguous_strides(spec.y))
    node = graph.inspect()["nodes"][0]
    assert node["type"] == "CONV_FPROP" and node["params"]["pre_padding"] == list(spec.pre)


@pytest.mark.parametrize("case", TRANSPOSED, ids=str)
def test_frontend_graphs_of_data_gradients(case):
    cudnn = frontend()
    x_shape, w_shape, stride, padding, output_padding, dilation, groups = case
    dgrad = specs.transpose_spec(x_shape, w_shape, stride, padding, output_padding, groups, dilation, "float16")
    graph, operands = graphs.describe(cudnn, dgrad)
    assert operands["x"].get_dim() == list(dgrad.x) and graph.inspect()["nodes"][0]["type"] == "CONV_DGRAD"
    assert graph.context.io_data_type == cudnn.data_type.HALF
    assert graph.context.compute_data_type == cudnn.data_type.FLOAT
    graphs.describe(cudnn, dataclasses.replace(dgrad, kind="fprop"))  # its forward maps the image onto y exactly


@pytest.mark.parametrize("case", FORWARD, ids=str)
def test_frontend_graphs_of_weight_gradients(case):
    cudnn = frontend()
    x_shape, w_shape, stride, padding, dilation, groups = case
    forward = specs.forward_spec(x_shape, w_shape, padding, stride, dilation, groups, "float64")
    wgrad, crop = specs.weight_grad_spec(forward.shape, x_shape, w_shape[2:], stride, padding, dilation, groups,
                                         "float64")
    assert wgrad.x == forward.x and wgrad.y == forward.y and wgrad.w == forward.w  # the same convolution
    graph, operands = graphs.describe(cudnn, wgrad)
    assert operands["w"].get_dim() == list(wgrad.w) and graph.inspect()["nodes"][0]["type"] == "CONV_WGRAD"
    assert graph.context.io_data_type == cudnn.data_type.DOUBLE


def test_planner_remembers_what_cudnn_refused():
    """Without libcudnn (this machine) the frontend's validation fails: the key is refused once, with the
    reason, and asked again only under other settings."""
    cudnn = frontend()
    builds = []

    def build(spec, device, settings):
        builds.append(settings)
        graph, operands = graphs.describe(cudnn, spec)
        graphs.finalize(cudnn, graph, settings)
        return graphs.Plan(graph, {name: t.get_uid() for name, t in operands.items()})

    if path.load() is not None:
        pytest.skip("libcudnn is loadable here: the frontend would validate")
    planner = graphs.Planner(build)
    spec = specs.forward_spec((2, 3, 8, 8), (4, 3, 3, 3), ((1, 1),) * 2, (1, 1), (1, 1), 1, "float32")
    assert planner.plan(spec, 0) is None and planner.plan(spec, 0) is None
    assert len(builds) == 1 and len(planner.refused) == 1
    assert next(iter(planner.refused.values()))  # a reason, for diagnostics
    assert planner.plan(spec, 0, graphs.Settings(False, False, False)) is None and len(builds) == 2


def test_overrides_install_nothing_without_libcudnn():
    if path.load() is not None:
        pytest.skip("libcudnn is loadable here")
    assert path.overrides(np, NUMPY, build_kernels(NUMPY)) == {}
    assert path.version() is None and ember.backends.cudnn.version() is None


# -- fallbacks and the kernels around a launch --------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_fallback_kernels_match_embers_cpu(dtype):
    rng = np.random.default_rng(3)
    forward, transposed = fallback.convolution(NUMPY), fallback.transposed_convolution(NUMPY)
    one_d = fallback.transposed_convolution_1d(build_kernels(NUMPY)["conv_transpose2d"])
    tolerance = 1e-10 if dtype == np.float64 else 2e-2
    for x_shape, w_shape, stride, padding, dilation, groups in FORWARD:
        x, w, b = tensor(rng, x_shape, dtype), tensor(rng, w_shape, dtype), tensor(rng, (w_shape[0],), dtype)
        n = len(w_shape) - 2
        padded = F.pad(x, [v for pair in reversed(padding) for v in pair])
        expected = conv_op(n)(padded, w, b, stride, 0, dilation, groups).numpy()
        got = forward(x.numpy(), w.numpy(), b.numpy(), stride, padding, dilation, groups)
        assert got.dtype == dtype and got.flags.c_contiguous
        np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)
    for x_shape, w_shape, stride, padding, output_padding, dilation, groups in TRANSPOSED:
        n = len(w_shape) - 2
        x, w, b = tensor(rng, x_shape, dtype), tensor(rng, w_shape, dtype), tensor(rng, (w_shape[1] * groups,), dtype)
        expected = conv_op(n, True)(x, w, b, stride, padding, output_padding, groups, dilation).numpy()
        kernel = one_d if n == 1 else transposed
        got = kernel(x.numpy(), w.numpy(), b.numpy(), stride, padding, output_padding, groups, dilation)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)


def cudnn_contract(plan, operands, device):
    """What cuDNN computes for a plan, in Ember's CPU ops: the stand-in for the GPU launch, so that the
    kernels' plumbing (operand dims, contiguity, crops, output shapes, bias) is checked here. The plans of
    ``contract_kernels`` hold their spec where a real plan holds its graph."""
    spec = plan.graph
    for name, array in operands.items():
        assert array.shape == getattr(spec, name) and array.flags.c_contiguous, name
    x, w, y = (ember.tensor(operands[k]) if k != spec.output else None for k in "xwy")
    spatial = len(spec.x) - 2
    groups = spec.x[1] // spec.w[1]
    padding = tuple(zip(spec.pre, spec.post))
    if spec.kind == "fprop":
        padded = F.pad(x, [v for pair in reversed(padding) for v in pair])
        out = conv_op(spatial)(padded, w, None, spec.stride, 0, spec.dilation, groups)
    elif spec.kind == "dgrad":
        natural = [(o - 1) * s - 2 * p + d * (k - 1) + 1 for o, s, p, d, k in zip(spec.y[2:], spec.stride, spec.pre,
                                                                                  spec.dilation, spec.w[2:])]
        out = conv_op(spatial, True)(y, w, None, spec.stride, spec.pre, tuple(a - b for a, b in zip(spec.x[2:],
                                     natural)), groups, spec.dilation)
    else:
        out = ember.convolution_backward_weight(y, x, spec.w[2:], spec.stride, padding, spec.dilation, groups)
    operands[spec.output][...] = out.numpy()


def contract_kernels():
    planner = graphs.Planner(lambda spec, device, settings: graphs.Plan(spec, {}))
    shared = build_kernels(NUMPY)
    return conv.kernels(np, planner, cudnn_contract, path.fallbacks(NUMPY, shared), lambda a: 0), planner


def test_kernels_around_a_launch_give_embers_values():
    rng = np.random.default_rng(4)
    table, planner = contract_kernels()
    assert set(table) == set(conv.OPS) == set(path.fallbacks(NUMPY, build_kernels(NUMPY)))
    for x_shape, w_shape, stride, padding, dilation, groups in FORWARD:
        n = len(w_shape) - 2
        x, w, b = tensor(rng, x_shape), tensor(rng, w_shape), tensor(rng, (w_shape[0],))
        x_strided = ember.tensor(np.ascontiguousarray(np.swapaxes(x.numpy(), -1, -2))).transpose(-1, -2)
        expected = conv_op(n)(F.pad(x, [v for pair in reversed(padding) for v in pair]), w, b, stride, 0, dilation,
                              groups)
        got = table[f"conv{n}d"](x_strided.numpy(), w.numpy(), b.numpy(), stride, padding, dilation, groups)
        np.testing.assert_allclose(got, expected.numpy(), rtol=1e-10, atol=1e-10)
    for x_shape, w_shape, stride, padding, output_padding, dilation, groups in TRANSPOSED:
        n = len(w_shape) - 2
        x, w, b = tensor(rng, x_shape), tensor(rng, w_shape), tensor(rng, (w_shape[1] * groups,))
        expected = conv_op(n, True)(x, w, b, stride, padding, output_padding, groups, dilation)
        got = table[f"conv_transpose{n}d"](x.numpy(), w.numpy(), b.numpy(), stride, padding, output_padding, groups,
                                           dilation)
        np.testing.assert_allclose(got, expected.numpy(), rtol=1e-10, atol=1e-10)
    grad, x = tensor(rng, (2, 3, 2, 2)), tensor(rng, (2, 2, 7, 8))
    args = ((3, 2), (2, 3), ((1, 2), (2, 2)), (1, 1), 1)
    got = table["convolution_backward_weight"](grad.numpy(), x.numpy(), *args)
    np.testing.assert_allclose(got, ember.convolution_backward_weight(grad, x, *args).numpy(), rtol=1e-10)
    assert not planner.refused and planner.plans


def test_kernels_take_the_fallback_when_refused_or_switched_off():
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((2, 3, 6, 6)), rng.standard_normal((4, 3, 3, 3))
    expected = build_kernels(NUMPY)["conv2d"](x, w, None, (1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    failing = graphs.Planner(lambda spec, device, settings: graphs.Plan(spec, {}))

    def broken(plan, operands, device):
        raise RuntimeError("CUDNN_STATUS_EXECUTION_FAILED")

    table = conv.kernels(np, failing, broken, path.fallbacks(NUMPY, build_kernels(NUMPY)), lambda a: 0)
    with pytest.warns(RuntimeWarning, match="EXECUTION_FAILED"):
        got = table["conv2d"](x, w, None, (1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    np.testing.assert_allclose(got, expected)
    assert list(failing.refused.values()) == ["RuntimeError: CUDNN_STATUS_EXECUTION_FAILED"]
    table["conv2d"](x, w, None, (1, 1), ((1, 1), (1, 1)), (1, 1), 1)  # remembered: no second try, no warning
    contract, planner = contract_kernels()
    with ember.backends.cudnn.flags(enabled=False):
        np.testing.assert_allclose(contract["conv2d"](x, w, None, (1, 1), ((1, 1), (1, 1)), (1, 1), 1), expected)
    assert not planner.plans  # switched off: cuDNN was not asked
