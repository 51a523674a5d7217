"""ember.library's custom ops are ops of the schema: they dispatch by device, record one autograd node (with
double backward), run inside ember.compile as one node, show in the profiler by name, follow autocast, vmap and
forward AD, write into their arguments only as declared, and refuse what they cannot do with errors naming the
op. On cpu and opencl (PoCL), for real; tests/test_library_api.py covers the Library API, the schema language
and opcheck, tests/test_library_package.py the example package."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember import Tensor
from ember.autograd import gradcheck, gradgradcheck
from ember.dispatch.schema import OPS, builtin_ops, composites, primitives
from ember.dispatch.schema.errors import BackendError, EmberError
from ember.utils._python_dispatch import TorchDispatchMode

import library_ops
from library_ops import define_sin, host

device = library_ops.device  # the fixtures every test here uses
leaves_ops_as_found = library_ops.leaves_ops_as_found


def test_a_custom_op_is_an_op_of_the_schema():
    sin = define_sin("testlib::sin_schema")
    op = OPS["testlib::sin_schema"]
    assert sin.op is op and op.category == "custom" and op.kind == "primitive" and not op.method
    assert op not in builtin_ops() and op not in primitives() and op not in composites()
    assert sin._schema == "(Tensor x, float scale=1.0) -> Tensor"
    assert repr(sin) == "<CustomOpDef(testlib::sin_schema)>"
    assert ember.ops.testlib.sin_schema.op is op and ember.ops.testlib.sin_schema.default.op is op
    assert "sin_schema" in dir(ember.ops.testlib) and "testlib" in dir(ember.ops)
    assert op.source[0] == __file__.replace("test_library.py", "library_ops.py")
    x = ember.randn(3)
    np.testing.assert_allclose(host(ember.ops.testlib.sin_schema(x, 2.0)), np.sin(host(x)) * 2, rtol=1e-6)
    sin._destroy()
    assert "testlib::sin_schema" not in OPS
    with pytest.raises(AttributeError, match="no op or namespace 'testlib'"):
        ember.ops.testlib


def test_it_runs_the_kernel_registered_for_the_device(device):
    calls = []
    sin = define_sin("testlib::sin_device", calls)
    x = ember.randn(4, 3, device=device)
    y = sin(x, 3.0)
    assert y.device == x.device and y.dtype is ember.float32 and tuple(y.shape) == (4, 3)
    np.testing.assert_allclose(host(y), np.sin(host(x)) * 3, rtol=1e-5, atol=1e-6)
    kernel = "numpy" if device == "cpu" else device
    assert calls == [kernel]  # the fake gave shapes, the device's own kernel ran once
    sin(x, 3.0)
    assert calls == [kernel, kernel]


def test_gradients_double_backward_and_inner_calls_unrecorded(device):
    sin = define_sin("testlib::sin_grad")
    x = ember.randn(5, device=device, requires_grad=True)
    y = sin(x, 2.0)
    assert type(y.grad_fn).__name__ == "OpNode" and y.grad_fn.name() == "TestlibSinGradBackward"
    # one node: its edge goes straight to x's accumulator, none of the kernel's inner ops recorded
    assert [type(n).__name__ for n, _ in y.grad_fn.next_functions] == ["AccumulateGrad"]
    g, = ember.autograd.grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(host(g), 2 * np.cos(host(x)), rtol=1e-5, atol=1e-6)
    gg, = ember.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(host(gg), -2 * np.sin(host(x)), rtol=1e-5, atol=1e-6)


def test_gradcheck_and_gradgradcheck_in_float64():
    sin = define_sin("testlib::sin_check")
    x = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda t: sin(t, 0.5), (x,))
    assert gradgradcheck(lambda t: sin(t, 0.5), (x,))


def test_without_an_autograd_formula_the_forward_works_and_backward_raises():
    sin = define_sin("testlib::sin_nograd", autograd=False)
    x = ember.randn(3, requires_grad=True)
    y = sin(x)
    assert y.requires_grad
    with pytest.raises(RuntimeError, match="backward through testlib::sin_nograd but no autograd formula"):
        y.sum().backward()


def test_forward_ad_derives_from_the_backward(device):
    sin = define_sin("testlib::sin_jvp")
    x = ember.randn(4, device=device)
    out, tangent = ember.func.jvp(lambda t: sin(t, 2.0), (x,), (ember.ones_like(x),))
    np.testing.assert_allclose(host(tangent), 2 * np.cos(host(x)), rtol=1e-5, atol=1e-6)


def test_compile_captures_it_whole_as_one_node(device):
    calls = []
    sin = define_sin("testlib::sin_compiled", calls)  # the cpu kernel reads values through NumPy

    def program(x):
        return sin(x, 2.0).exp() + 1

    x = ember.randn(3, 4, device=device)
    report = ember.compiler.explain(program)(x)
    assert report.graph_break_count == 0 and report.ops_per_graph == [["testlib::sin_compiled", "exp", "add"]]
    compiled = ember.compile(program, fullgraph=True)
    first = compiled(x)
    calls.clear()
    again = compiled(x)  # a replay of the program: the kernel, no validation, no fake
    assert calls == ["numpy" if device == "cpu" else device]
    np.testing.assert_allclose(host(first), host(program(x)), rtol=1e-5)
    np.testing.assert_allclose(host(again), host(first), rtol=1e-6)


def test_compiled_gradients_flow_through_it(device):
    sin = define_sin("testlib::sin_compiled_grad")
    compiled = ember.compile(lambda x: (sin(x, 3.0) * x).sum(), fullgraph=True)
    for _ in range(2):  # capture, then replay
        x = ember.randn(5, device=device, requires_grad=True)
        compiled(x).backward()
        np.testing.assert_allclose(host(x.grad), 3 * (np.cos(host(x)) * host(x) + np.sin(host(x))), rtol=1e-5,
                                   atol=1e-6)


def test_the_profiler_shows_the_op_by_its_name(device):
    sin = define_sin("testlib::sin_profiled")
    x = ember.randn(8, device=device, requires_grad=True)
    with ember.profiler.profile() as prof:
        sin(x).sum().backward()
    names = [e.name for e in prof.events()]
    assert names.count("testlib::sin_profiled") == 1
    assert "TestlibSinProfiledBackward" in names


def _recording_dtypes(name: str, seen: list):
    @ember.library.custom_op(name, mutates_args=())
    def twice(x: Tensor, y: Tensor) -> Tensor:
        seen.append((x.dtype, y.dtype))
        return x * 2 + y

    twice.register_fake(lambda x, y: ember.empty_like(x))
    return twice


def test_autocast_casts_by_the_registered_dtype_or_category():
    seen = []
    op = _recording_dtypes("testlib::autocast_dtype", seen)
    x, y = ember.randn(3), ember.randn(3)
    with ember.autocast("cpu"):
        assert op(x, y).dtype is ember.float32  # no registration: as called
    op.register_autocast("cpu", ember.bfloat16)
    with ember.autocast("cpu"):
        out = op(x, y)
    assert out.dtype is ember.bfloat16 and seen[-1] == (ember.bfloat16, ember.bfloat16)
    assert op(x, y).dtype is ember.float32  # outside the region
    ember.library.register_autocast("testlib::autocast_dtype", "cpu", "promote")  # one of Ember's categories
    with ember.autocast("cpu"):
        assert op(x.to(ember.bfloat16), y).dtype is ember.float32 and seen[-1] == (ember.float32, ember.float32)


def test_autocast_of_one_device_type_leaves_the_others():
    seen = []
    op = _recording_dtypes("testlib::autocast_cuda_only", seen)
    op.register_autocast("cuda", ember.float16)
    with ember.autocast("cpu"):
        assert op(ember.randn(3), ember.randn(3)).dtype is ember.float32
    with pytest.raises(ValueError, match="must be a floating dtype"):
        op.register_autocast("cpu", ember.int64)


def test_vmap_uses_the_registered_rule(device):
    rule_calls = []
    sin = define_sin("testlib::sin_vmap_rule")

    @sin.register_vmap
    def _(info, in_dims, x, scale):
        rule_calls.append((info.batch_size, in_dims))
        return sin(x, scale), in_dims[0]

    x = ember.randn(4, 3, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no loop fallback warning
        out = ember.vmap(lambda t: sin(t, 2.0))(x)
    assert rule_calls == [(4, (0, None))]
    np.testing.assert_allclose(host(out), 2 * np.sin(host(x)), rtol=1e-5, atol=1e-6)


def test_vmap_without_a_rule_loops_with_a_warning(device):
    sin = define_sin(f"testlib::sin_vmap_loop_{device}")  # (vmap warns once per op name)
    x = ember.randn(4, 3, device=device)
    with pytest.warns(UserWarning, match=f"batching rule for testlib::sin_vmap_loop_{device}"):
        out = ember.vmap(lambda t: sin(t, 2.0))(x)
    np.testing.assert_allclose(host(out), 2 * np.sin(host(x)), rtol=1e-5, atol=1e-6)


def _add_into(name: str):
    @ember.library.custom_op(name, mutates_args=("out",))
    def add_into(out: Tensor, x: Tensor) -> None:
        out.copy_(out + x)
    return add_into


def test_mutates_args_writes_in_place_and_counts_the_version(device):
    add_into = _add_into("testlib::add_into")
    assert add_into._schema == "(Tensor(a0!) out, Tensor x) -> ()"
    out, x = ember.zeros(3, device=device), ember.ones(3, device=device)
    version = out._version[0]
    assert add_into(out, x) is None
    assert host(out).tolist() == [1, 1, 1] and host(x).tolist() == [1, 1, 1]
    assert out._version[0] == version + 1 and OPS["testlib::add_into"].mutates == ("out",)
    leaf = ember.zeros(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        add_into(leaf, x)


def test_a_mutating_op_replays_its_writes_under_compile(device):
    add_into = _add_into("testlib::add_into_compiled")

    def step(acc, x):
        add_into(acc, x * 2)
        return acc + 0

    compiled = ember.compile(step, fullgraph=True)
    acc = ember.zeros(3, device=device)
    compiled(acc, ember.ones(3, device=device))
    result = compiled(acc, ember.ones(3, device=device))
    assert host(acc).tolist() == [4, 4, 4] and host(result).tolist() == [4, 4, 4]


def test_a_torch_dispatch_rule_handles_the_op_for_one_mode_class():
    sin = define_sin("testlib::sin_dispatch_rule")
    seen = []

    class Watch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func.__name__)
            return func(*args, **(kwargs or {}))

    @sin.register_torch_dispatch(Watch)
    def _(mode, func, types, args, kwargs):
        seen.append(f"rule {type(mode).__name__}")
        return ember.zeros(3)

    x = ember.ones(3)
    with Watch():
        out = sin(x)
        x + 1
    assert seen == ["rule Watch", "add"] and host(out).tolist() == [0, 0, 0]
    with pytest.raises(ValueError, match="TorchDispatchMode subclass"):
        ember.library.register_torch_dispatch(sin, int, lambda *a: None)


def test_a_plugin_may_bring_a_native_kernel_under_the_op_name():
    if ember.backends.available().get("template") != "available":
        pytest.skip("the template plugin is not installed")
    sin = define_sin("testlib::sin_native")
    backend = ember.dispatch.registry.get_backend("template")
    backend.kernels["testlib::sin_native"] = lambda native, scale: np.cos(native) * scale  # on NumPy arrays
    ember.dispatch.clear_plans()
    try:
        x = ember.randn(3, device="template")
        np.testing.assert_allclose(host(sin(x, 2.0)), np.cos(host(x)) * 2, rtol=1e-6)
    finally:
        del backend.kernels["testlib::sin_native"]
        ember.dispatch.clear_plans()


# -- errors name the op ------------------------------------------------------------------------------------------

def test_names_and_redefinitions_are_checked():
    with pytest.raises(ValueError, match="not a qualified op name"):
        ember.library.custom_op("nonamespace", lambda x: x, mutates_args=())
    with pytest.raises(ValueError, match="namespace 'aten' is reserved"):
        ember.library.custom_op("aten::mine", mutates_args=())(lambda x: x)
    with pytest.raises(ValueError, match="name of one of Ember's ops"):
        define_sin("sum::mine")
    first = define_sin("testlib::again")
    second = define_sin("testlib::again")  # custom_op again replaces the op, as in PyTorch
    assert OPS["testlib::again"] is second.op and first.op is not second.op
    lib = ember.library.Library("testlib2", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="testlib2::twice is already defined"):
        lib.define("twice(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="already defined by a Library"):
        define_sin("testlib2::twice")
    lib._destroy()


def test_kernels_are_checked_for_device_types():
    sin = define_sin("testlib::sin_devices")
    with pytest.raises(ValueError, match="unknown device type 'xla'"):
        sin.register_kernel("xla", lambda x, scale=1.0: x)

    @ember.library.custom_op("testlib::cpu_only", mutates_args=(), device_types="cpu")
    def cpu_only(x: Tensor) -> Tensor:
        return x + 1
    cpu_only.register_fake(lambda x: ember.empty_like(x))
    if ember.backends.available().get("opencl") == "available":
        with pytest.raises(BackendError, match=r"testlib::cpu_only: no kernel for device type 'opencl' \(kernels "
                                               r"are registered for: cpu\)"):
            cpu_only(ember.ones(2, device="opencl"))


def test_type_hints_must_be_schema_types():
    with pytest.raises(ValueError, match="Parameter x must have a type annotation"):
        ember.library.custom_op("testlib::no_hint", mutates_args=())(lambda x: x)

    def f(x: np.ndarray) -> Tensor:
        return x
    with pytest.raises(ValueError, match="Parameter x has unsupported type"):
        ember.library.custom_op("testlib::bad_hint", f, mutates_args=())

    def g(x: Tensor) -> int:
        return 1
    with pytest.raises(ValueError, match="return a Tensor, a tuple of Tensors"):
        ember.library.custom_op("testlib::int_result", g, mutates_args=())

    def h(x: Tensor, grad: Tensor) -> Tensor:
        return x
    with pytest.raises(ValueError, match="may not be named 'grad'"):
        ember.library.custom_op("testlib::reserved_name", h, mutates_args=())


def test_calls_are_checked_against_the_schema():
    sin = define_sin("testlib::sin_calls")
    with pytest.raises(TypeError, match="testlib::sin_calls\\(\\): argument 'x' must be a Tensor, not float"):
        sin(1.5)
    with pytest.raises(TypeError, match="must be float, not str"):
        sin(ember.ones(2), "large")


def test_kernels_and_fakes_that_break_the_contract_are_named():
    @ember.library.custom_op("testlib::wrong", mutates_args=())
    def wrong(x: Tensor) -> Tensor:
        return x  # an input given back

    wrong.register_fake(lambda x: ember.empty_like(x))
    with pytest.raises(EmberError, match="testlib::wrong: its cpu kernel returned an input"):
        wrong(ember.ones(2))
    wrong.register_kernel("cpu", lambda x: (x + 1).to(ember.float64))
    with pytest.raises(EmberError, match="returned .*float64.* validated to return a float32"):
        wrong(ember.ones(2))
    wrong.register_fake(lambda x: 3)
    with pytest.raises(EmberError, match=r"fake function of testlib::wrong \(register_fake\) returned int, but "
                                         r"testlib::wrong returns Tensor"):
        wrong(ember.ones(2))
    wrong.register_fake(lambda x: ember.empty_like(x) if x.sum().item() > -1 else x)
    with pytest.raises(ember.library.FakeValueError, match="fake function of testlib::wrong .* never their values"):
        wrong(ember.ones(2))


def test_backward_results_are_checked():
    sin = define_sin("testlib::sin_backward")
    sin.register_autograd(lambda ctx, grad: grad)  # one gradient for two inputs
    x = ember.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"testlib::sin_backward: backward returned 1 gradient\(s\), but the op "
                                           r"has 2 input\(s\) \(x, scale\)"):
        sin(x).sum().backward()
    sin.register_autograd(lambda ctx, grad: (grad, grad))
    with pytest.raises(RuntimeError, match="gradient for input 'scale' \\(index 1\\), which is not a tensor"):
        sin(x).sum().backward()
    sin.register_autograd(lambda ctx, grad: (grad[:2], None))
    with pytest.raises(RuntimeError, match=r"a gradient of shape \(2,\) for input 'x' \(index 0\) of shape \(3,\)"):
        sin(x).sum().backward()
    with pytest.raises(RuntimeError, match="Cannot register autograd formula for non-functional operator"):
        _add_into("testlib::add_into_autograd").register_autograd(lambda ctx, grad: grad)


def test_without_a_fake_it_learns_its_outputs_by_running_its_kernel():
    calls = []
    sin = define_sin("testlib::sin_nofake", calls, fake=False)
    x = ember.randn(3)
    np.testing.assert_allclose(host(sin(x)), np.sin(host(x)), rtol=1e-6)
    assert calls == ["numpy", "numpy"]  # once to learn the output's shape and dtype, once to compute it
    sin(x)
    assert calls == ["numpy", "numpy", "numpy"]  # the plan is cached: one run per call from then on


def test_set_kernel_enabled_falls_back_to_the_function_the_op_was_made_from():
    calls = []
    sin = define_sin("testlib::sin_enabled", calls)
    x = ember.randn(3)
    with sin.set_kernel_enabled("cpu", False):
        sin(x)
        assert calls == ["cpu"] and sin.op.kernels["cpu"] is sin._init_fn  # custom_op's own function ran
    sin(x)
    assert calls == ["cpu", "numpy"]  # the cpu kernel again


def test_custom_ops_stay_out_of_embers_own_op_lists():
    from ember import stubgen
    from ember.conformance.cases import op_params
    stubs = stubgen.generate()
    define_sin("testlib::listed")
    assert "testlib::listed" in OPS and all(p.values[0].category != "custom" for p in op_params())
    assert stubgen.generate() == stubs


def test_onnx_export_takes_the_registered_lowering():
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    import io

    @ember.library.custom_op("testlib::negate", mutates_args=())
    def negate(x: Tensor) -> Tensor:
        return -x
    negate.register_fake(lambda x: ember.empty_like(x))

    class Model(ember.nn.Module):
        def forward(self, x):
            return negate(x) * 2

    x = ember.randn(2, 3)
    with pytest.raises(Exception, match="testlib::negate"):
        ember.onnx.export(Model(), (x,), io.BytesIO())
    negate.register_onnx("Neg")
    buffer = io.BytesIO()
    ember.onnx.export(Model(), (x,), buffer)
    session = ort.InferenceSession(buffer.getvalue())
    np.testing.assert_allclose(session.run(None, {session.get_inputs()[0].name: host(x)})[0], -2 * host(x))
