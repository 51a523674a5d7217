"""ember.library's API beside custom_op: the schema language and infer_schema (against PyTorch's, where torch is
installed), the Library API with its dispatch keys, and opcheck passing on a good op and reporting each kind of
bad registration."""
from __future__ import annotations

import gc
import re
import typing
from typing import Optional, Sequence, Union

import numpy as np
import pytest

import ember
from ember import Tensor
from ember.dispatch.schema import OPS
from ember.dispatch.schema.errors import BackendError
from ember.library import Library, OpCheckError, opcheck
from ember.library.schema import parse

import library_ops
from library_ops import define_sin, host

device = library_ops.device  # the fixtures every test here uses
leaves_ops_as_found = library_ops.leaves_ops_as_found


# -- the schema language, against PyTorch's -----------------------------------------------------------------------

#: functions written once for both frameworks (T is ember or torch), with what they mutate
SIGNATURES = [
    ("def f(x: T.Tensor, y: Optional[T.Tensor], n: int, a: float = 1.0, *, flag: bool = False) -> T.Tensor", ()),
    ("def f(xs: list[T.Tensor], dims: list[int], scale: Optional[float] = None) -> tuple[T.Tensor, T.Tensor]", ()),
    ("def f(x: T.Tensor, dt: T.dtype = T.float32, mode: str = 'mean', d: Optional[T.device] = None) "
     "-> list[T.Tensor]", ()),
    ("def f(out: T.Tensor, x: T.Tensor, steps: Sequence[int], k: Optional[Sequence[int]] = None) -> None",
     ("out",)),
    ("def f(x: T.Tensor, s: Union[int, float, bool] = 2, ws: Optional[list[float]] = None) -> tuple[T.Tensor]", ()),
    ("def f(xs: list[Optional[T.Tensor]], b: list[bool], ks: Optional[list[int]] = None) -> T.Tensor", ()),
    ("def f(x: T.Tensor, y: T.Tensor) -> None", "unknown"),
]


def _function(source: str, T):
    namespace = {"T": T, "Optional": Optional, "Sequence": Sequence, "Union": Union, "typing": typing}
    exec(source + ": pass", namespace)  # noqa: S102  (the test's own source)
    return namespace["f"]


@pytest.mark.parametrize("source,mutates", SIGNATURES, ids=[str(i) for i in range(len(SIGNATURES))])
def test_infer_schema_writes_what_pytorch_writes(source, mutates):
    torch = pytest.importorskip("torch")
    ours = ember.library.infer_schema(_function(source, ember), mutates_args=mutates)
    theirs = torch.library.infer_schema(_function(source, torch), mutates_args=mutates)
    assert ours == theirs
    assert ember.library.infer_schema(_function(source, ember), mutates_args=mutates, op_name="op") == "op" + theirs


def test_infer_schema_refuses_what_pytorch_refuses():
    torch = pytest.importorskip("torch")
    for source, mutates in [("def f(x: T.Tensor, *args: int) -> T.Tensor", ()),
                            ("def f(x: T.Tensor, n: int) -> T.Tensor", ("n",)),
                            ("def f(x: T.Tensor) -> T.Tensor", ("y",)),
                            ("def f(x: T.Tensor, t: tuple[int, int]) -> T.Tensor", ())]:
        for T, infer in ((ember, ember.library.infer_schema), (torch, torch.library.infer_schema)):
            with pytest.raises(ValueError, match="infer_schema"):
                infer(_function(source, T), mutates_args=mutates)


#: schema strings in PyTorch's language that custom ops declare
SCHEMAS = [
    "op(Tensor x, Tensor? y=None, int[] dims=[], float a=1.0, *, bool keepdim=False) -> Tensor",
    "op(Tensor(a!) x, Tensor(b!)[] ys, int[2] k=1, ScalarType? dt=None, str mode=\"mean\", Scalar s=2) -> ()",
    "op(Tensor x, SymInt n, SymInt[]? sizes=None, float[] ws=[0.5, 1.5], bool[] bs=[True]) -> (Tensor, Tensor)",
    "op(Tensor[] xs, Tensor?[] maybe, Device? device=None, int? k=-1, float eps=1e-05) -> Tensor[]",
    "op(Tensor x) -> (Tensor a, Tensor b)",
]
_TORCH_NAMES = {"Scalar": "number", "ScalarType": "int", "SymInt": "int"}


def _torch_type(ours: str) -> str:
    """Ember's parsed type (``int[]?``) written as torch's FunctionSchema prints it (``Optional[List[int]]``)."""
    text = ours
    base = text.split("[")[0].rstrip("?")
    out = _TORCH_NAMES.get(base, base)
    rest = text[len(base):]
    for part in re.findall(r"\?|\[\]", rest):
        out = f"Optional[{out}]" if part == "?" else f"List[{out}]"
    return out


@pytest.mark.parametrize("schema", SCHEMAS, ids=[str(i) for i in range(len(SCHEMAS))])
def test_library_define_reads_pytorchs_schema_language(schema):
    torch = pytest.importorskip("torch")
    theirs = torch._C.parse_schema("mylib::" + schema)
    ours = parse(schema)
    assert [a.name for a in ours.args] == [a.name for a in theirs.arguments]
    assert [a.kw_only for a in ours.args] == [a.kwarg_only for a in theirs.arguments]
    assert [a.mutated for a in ours.args] == [bool(a.alias_info and a.alias_info.is_write) for a in theirs.arguments]
    assert [_torch_type(a.type) for a in ours.args] == [str(a.type) for a in theirs.arguments]
    for a, t in zip(ours.args, theirs.arguments):
        if a.type.startswith(("ScalarType", "Device")) or t.default_value is None:
            continue
        assert (a.default == t.default_value) or (list(a.default) == list(t.default_value)), a.name
    assert len(ours.returns) == len(theirs.returns)
    lib = Library("testschema", "FRAGMENT")
    if ours.returns and all(r == "Tensor" for r in ours.returns) and not ours.mutated or ours.returns == ("Tensor[]",):
        assert lib.define(schema) == "op" and "testschema::op" in OPS
    lib._destroy()
    assert "testschema::op" not in OPS


def test_schema_errors_name_the_problem():
    with pytest.raises(ValueError, match="expected a schema like"):
        parse("op(Tensor x)")
    with pytest.raises(ValueError, match="overload names"):
        parse("op.out(Tensor x) -> Tensor")
    with pytest.raises(ValueError, match="cannot read the type"):
        parse("op(Tensor<int> x) -> Tensor")
    lib = Library("testschema2", "FRAGMENT")
    with pytest.raises(ValueError, match="argument 'g' has type Generator\\?, which Ember's custom ops do not take"):
        lib.define("op(Tensor x, Generator? g=None) -> Tensor")
    with pytest.raises(ValueError, match="returns an alias of an argument"):
        lib.define("op(Tensor(a) x) -> Tensor(a)")
    lib._destroy()


# -- the Library API --------------------------------------------------------------------------------------------

def test_impl_keys_choose_the_kernel_per_device(device):
    calls = []
    lib = Library("testlib_keys", "DEF")
    assert lib.define("scaled(Tensor x, float s=2.0) -> Tensor") == "scaled"
    lib.impl("scaled", lambda x, s=2.0: calls.append("CPU") or x * s, "CPU")
    lib.impl("scaled", lambda x, s=2.0: calls.append("opencl") or x * s, "opencl")
    lib.impl("scaled", lambda x, s=2.0: calls.append("every") or x * s, "CompositeExplicitAutograd")
    lib.impl("scaled", lambda x, s=2.0: ember.empty_like(x), "Meta")
    x = ember.ones(3, device=device)
    assert host(ember.ops.testlib_keys.scaled(x, 3.0)).tolist() == [3, 3, 3]
    assert calls == ["CPU" if device == "cpu" else "opencl"]
    lib.impl("scaled", ember.library.fallthrough_kernel, "CPU" if device == "cpu" else "opencl")
    ember.ops.testlib_keys.scaled(x)
    assert calls[-1] == "every"
    lib._destroy()
    assert "testlib_keys::scaled" not in OPS
    with pytest.raises(RuntimeError, match="has been destroyed"):
        lib.define("again(Tensor x) -> Tensor")


def test_privateuse1_serves_plugin_devices():
    if ember.backends.available().get("template") != "available":
        pytest.skip("the template plugin is not installed")
    lib = Library("testlib_pu1", "DEF")
    lib.define("plus(Tensor x) -> Tensor")
    lib.impl("plus", lambda x: x + 1, "PrivateUse1")
    lib.impl("plus", lambda x: ember.empty_like(x), "Meta")
    assert host(ember.ops.testlib_pu1.plus(ember.zeros(2, device="template"))).tolist() == [1, 1]
    with pytest.raises(BackendError, match="no kernel for device type 'cpu' \\(kernels are registered for: every "
                                           "device type but cpu and cuda\\)"):
        ember.ops.testlib_pu1.plus(ember.zeros(2))
    lib._destroy()


def test_composite_implicit_autograd_decomposes_for_autograd_and_compile(device):
    lib = Library("testlib_cia", "DEF")
    lib.define("lin(Tensor x, Tensor w) -> Tensor")
    lib.impl("lin", lambda x, w: x @ w.T, "CompositeImplicitAutograd")
    x = ember.randn(2, 3, device=device, requires_grad=True)
    w = ember.randn(4, 3, device=device, requires_grad=True)
    y = ember.ops.testlib_cia.lin(x, w)  # no fake: shapes come from the decomposition on fake tensors
    assert tuple(y.shape) == (2, 4) and OPS["testlib_cia::lin"].kind == "composite"
    y.sum().backward()  # through the decomposition's own nodes
    np.testing.assert_allclose(host(x.grad), host(w).sum(0) * np.ones((2, 1)), rtol=1e-5)
    report = ember.compiler.explain(lambda a, b: ember.ops.testlib_cia.lin(a, b))(x.detach(), w.detach())
    assert report.graph_break_count == 0 and "testlib_cia::lin" not in report.ops_per_graph[0]
    assert "matmul" in report.ops_per_graph[0]
    assert opcheck(ember.ops.testlib_cia.lin, (x, w), test_utils=("test_faketensor", "test_gradcheck")) == {
        "test_faketensor": "SUCCESS", "test_gradcheck": "SUCCESS"}
    lib._destroy()


def test_an_autograd_impl_is_a_functions_apply():
    class TimesThree(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return ember.ops.testlib_ag.triple(x)  # below autograd: the kernel

        @staticmethod
        def backward(ctx, grad):
            return grad * 30  # deliberately not 3, to see this backward run

    lib = Library("testlib_ag", "DEF")
    lib.define("triple(Tensor x) -> Tensor")
    lib.impl("triple", lambda x: x * 3, "CPU")
    lib.impl("triple", lambda x: ember.empty_like(x), "Meta")
    lib.impl("triple", TimesThree.apply, "Autograd")
    x = ember.ones(2, requires_grad=True)
    y = ember.ops.testlib_ag.triple(x)
    assert host(y).tolist() == [3, 3]
    y.sum().backward()
    assert host(x.grad).tolist() == [30, 30]
    with ember.no_grad():
        assert host(ember.ops.testlib_ag.triple(x)).tolist() == [3, 3]
    lib._destroy()


def test_libraries_own_what_they_register():
    sin = define_sin("testlib_own::sin")
    lib = Library("testlib_own", "IMPL")
    lib.impl("sin", lambda x, scale=1.0: x * 0, "CPU")
    with pytest.raises(RuntimeError, match="cannot define ops"):
        lib.define("other(Tensor x) -> Tensor")
    assert host(sin(ember.ones(2))).tolist() == [0, 0]
    lib._destroy()  # its kernel goes; custom_op's own registrations stay
    np.testing.assert_allclose(host(sin(ember.ones(2))), np.sin([1, 1]), rtol=1e-6)
    Library("testlib_def", "DEF")._destroy()
    keep = Library("testlib_def", "DEF")
    with pytest.raises(RuntimeError, match="Only a single Library"):
        Library("testlib_def", "DEF")
    keep._destroy()
    with pytest.raises(ValueError, match="reserved namespace"):
        Library("aten", "IMPL")
    with pytest.raises(ValueError, match="Unsupported kind"):
        Library("testlib_x", "OTHER")
    with pytest.raises(NotImplementedError, match="with_keyset"):
        Library("testlib_x", "FRAGMENT").impl("sin", lambda x: x, "CPU", with_keyset=True)
    with pytest.raises(ValueError, match="dispatch key 'AutocastCPU' is not one Ember understands"):
        lib = Library("testlib_own", "IMPL")
        lib.impl("sin", lambda x, scale=1.0: x, "AutocastCPU")


def test_a_library_collected_takes_its_ops_with_it():
    def define_and_drop():
        lib = Library("testlib_gc", "FRAGMENT")
        lib.define("gone(Tensor x) -> Tensor")
        assert "testlib_gc::gone" in OPS
    define_and_drop()
    gc.collect()
    assert "testlib_gc::gone" not in OPS


def test_module_level_define_impl_and_impl_abstract(device):
    ember.library.define("testlib_mod::cube", "(Tensor x) -> Tensor")
    ember.library.impl("testlib_mod::cube", "default", lambda x: x * x * x)
    with pytest.warns(FutureWarning, match="renamed to `ember.library.register_fake`"):
        ember.library.impl_abstract("testlib_mod::cube", lambda x: ember.empty_like(x))

    @ember.library.impl("testlib_mod::cube", "cpu")
    def _(x):
        return x * x * x + 0
    assert host(ember.ops.testlib_mod.cube(ember.full((2,), 2.0, device=device))).tolist() == [8, 8]
    with pytest.raises(ValueError, match="expected schema to look like"):
        ember.library.define("testlib_mod::bad", "cube(Tensor x) -> Tensor")


# -- opcheck ----------------------------------------------------------------------------------------------------

def test_opcheck_passes_a_good_op(device):
    sin = define_sin("testlib_oc::sin")
    x = ember.randn(3, 4, device=device, requires_grad=True)
    result = opcheck(sin, (x,), {"scale": 2.0})
    assert result == dict.fromkeys(ember.library.opcheck.__globals__["DEFAULT_TEST_UTILS"], "SUCCESS")
    assert x.grad is None  # the checks work on copies


def test_opcheck_reports_a_bad_fake():
    sin = define_sin("testlib_oc::bad_fake")
    sin.register_fake(lambda x, scale=1.0: x.new_empty((7,)))
    result = opcheck(sin, (ember.randn(3),), raise_exception=False)
    assert isinstance(result["test_faketensor"], AssertionError)
    assert "the fake function gives float32 (7,)" in str(result["test_faketensor"])
    with pytest.raises(OpCheckError, match="test_faketensor failed with"):
        opcheck(sin, (ember.randn(3),), test_utils="test_faketensor")


def test_opcheck_reports_a_wrong_or_bad_backward():
    sin = define_sin("testlib_oc::bad_backward")
    sin.register_autograd(lambda ctx, grad: (grad * 2, None))  # not the derivative
    x = ember.randn(3, requires_grad=True)
    result = opcheck(sin, (x,), raise_exception=False)
    assert isinstance(result["test_gradcheck"], Exception) and "Jacobian" in str(result["test_gradcheck"])
    assert result["test_autograd_registration"] == "SUCCESS"
    sin.register_autograd(lambda ctx, grad: grad)  # one gradient for two inputs
    result = opcheck(sin, (x,), test_utils=("test_autograd_registration",), raise_exception=False)
    assert "backward returned 1 gradient(s)" in str(result["test_autograd_registration"])
    nograd = define_sin("testlib_oc::no_backward", autograd=False)
    result = opcheck(nograd, (x,), raise_exception=False)
    assert "no autograd formula is registered" in str(result["test_autograd_registration"])
    assert result["test_gradcheck"].startswith("SKIPPED")


def test_opcheck_reports_an_undeclared_mutation():
    @ember.library.custom_op("testlib_oc::sneaky", mutates_args=(), device_types="cpu")
    def sneaky(x: Tensor) -> Tensor:
        x.numpy()[...] = 0  # writes into its input without saying so
        return ember.ones(x.shape)
    sneaky.register_fake(lambda x: ember.empty_like(x))
    result = opcheck(sneaky, (ember.randn(3),), raise_exception=False)
    assert "wrote into argument 'x', which the schema does not declare mutated" in str(result["test_schema"])


def test_opcheck_reports_a_missing_fake_and_a_compile_mismatch():
    sin = define_sin("testlib_oc::no_fake", fake=False)
    result = opcheck(sin, (ember.randn(3),), test_utils=["test_faketensor"], raise_exception=False)
    assert "has no fake function" in str(result["test_faketensor"])
    rng = np.random.default_rng(0)

    @ember.library.custom_op("testlib_oc::noisy", mutates_args=(), device_types="cpu")
    def noisy(x: Tensor) -> Tensor:
        return ember.from_numpy((x.numpy() + rng.standard_normal(x.shape)).astype(np.float32))
    noisy.register_fake(lambda x: ember.empty_like(x))
    result = opcheck(noisy, (ember.randn(3),), test_utils=("test_aot_dispatch_dynamic",), raise_exception=False)
    assert "of the captured program" in str(result["test_aot_dispatch_dynamic"])


def test_opcheck_arguments_are_checked():
    sin = define_sin("testlib_oc::args")
    with pytest.raises(ValueError, match="expected test_utils to be subset"):
        opcheck(sin, (ember.randn(2),), test_utils=("test_everything",))
    with pytest.raises(ValueError, match="specify both"):
        opcheck(sin, (ember.randn(2),), atol=1e-3)
    with pytest.raises(ValueError, match="there is no custom op 'testlib_oc::none'"):
        opcheck("testlib_oc::none", ())
