"""ember.compat: the NotImplementedError detector, signature comparison, public names and the command."""
from __future__ import annotations

import subprocess
import sys
import types
import typing

import pytest

from ember.compat import compare_namespace
from ember.compat.names import public_names, tensor_names
from ember.compat.reasons import reason_for
from ember.compat.signatures import KEYWORD, REQUIRED, VAR_POSITIONAL, Param, compare, from_doc, parse_params, \
    signature_of
from ember.compat.stubs import is_stub, stubbed_members
from ember.dispatch.ops import F


def stub(x, y=1):
    """Documented, never written."""
    raise NotImplementedError(f"stub: {x} {y}")


def bare_stub():
    raise NotImplementedError


def raises_on_one_branch(x):
    if x < 0:
        raise NotImplementedError("negative x")
    return x * 2


def raises_something_else():
    raise ValueError("not a stub")


def test_a_body_that_only_raises_not_implemented_is_a_stub():
    assert is_stub(stub) and is_stub(bare_stub)
    assert is_stub(property(bare_stub)) and is_stub(staticmethod(stub))


def test_a_function_raising_on_one_branch_or_another_error_is_real():
    assert not is_stub(raises_on_one_branch)
    assert not is_stub(raises_something_else)
    assert not is_stub(len)  # a builtin has no bytecode to read: not a stub
    assert raises_on_one_branch(3) == 6


class TheirLayer:
    def __init__(self, size):
        self.size = size

    def forward(self, x):
        return x

    def extra_repr(self):
        raise NotImplementedError  # abstract in the reference too


class OurLayer:
    def __init__(self, size):
        self.size = size

    def forward(self, x):
        raise NotImplementedError

    def extra_repr(self):
        raise NotImplementedError


def test_a_class_is_stubbed_where_the_reference_implements_the_member():
    assert stubbed_members(OurLayer, TheirLayer) == ["forward"]
    assert stubbed_members(TheirLayer, TheirLayer) == []


def test_parse_params_reads_docstring_signatures():
    assert parse_params("input, other, *, alpha=1, out=None") == (
        Param("input"), Param("other"), Param("alpha", KEYWORD, 1), Param("out", KEYWORD, None))
    assert parse_params("*size, dtype=None") == (Param("size", VAR_POSITIONAL), Param("dtype", KEYWORD, None))
    assert parse_params("Tensor input, int[] dims=[0, 1]") == (Param("input"), Param("dims", default=[0, 1]))


def test_signature_from_a_docstring_first_line_and_from_the_op_schema():
    def sort(*args, **kwargs):
        """sort(dim=-1, descending=False) -> (Tensor, LongTensor)"""
    assert from_doc(sort, "sort") == (Param("dim", default=-1), Param("descending", default=False))
    assert from_doc(raises_on_one_branch, "raises_on_one_branch") is None
    add = signature_of(F.add, "add")
    out = ["out"] if getattr(F.add.op, "accepts_out", False) else []  # the dispatcher's out= on functions
    assert [p.name for p in add] == [p.name for p in F.add.op.params] + out
    assert [p.name for p in signature_of(F.add, "add", method=True)] == [p.name for p in F.add.op.params]
    assert add[0].default is REQUIRED


def test_compare_reports_missing_extra_default_and_order_differences():
    theirs = parse_params("input, dim=None, keepdim=False, *, out=None")
    assert compare(theirs, parse_params("input, dim=None, keepdim=False, *, out=None")) == []
    assert compare(theirs, parse_params("input, dim=None, keepdim=False")) == ["missing `out`"]
    assert compare(theirs, parse_params("input, dim=0, keepdim=False, *, out=None")) == [
        "`dim=0` (PyTorch: `dim=None`)"]
    assert compare(theirs, parse_params("input, dim, keepdim=False, *, out=None")) == [
        "`dim` required (PyTorch: `dim=None`)"]
    assert compare(theirs, parse_params("input, scale, dim=None, keepdim=False, *, out=None")) == [
        "extra required `scale`"]
    assert compare(theirs, parse_params("input, keepdim=False, dim=None, *, out=None")) == [
        "positional order (input, keepdim, dim), PyTorch (input, dim, keepdim)"]
    assert compare(theirs, parse_params("input, *, dim=None, keepdim=False, out=None")) == [
        "`dim` keyword-only", "`keepdim` keyword-only"]
    # PyTorch's *args accepts Ember's positional size; True is not the same default as 1
    assert compare(parse_params("*size"), parse_params("size")) == []
    assert compare(parse_params("x, flag=True"), parse_params("x, flag=1")) == ["`flag=1` (PyTorch: `flag=True`)"]


def _function(name: str, module: str, source: str = "return 1"):
    namespace: dict = {}
    exec(f"def {name}(x, y=2):\n    {source}", namespace)
    function = namespace[name]
    function.__module__ = module
    return function


def test_namespace_coverage_on_a_small_pair_of_modules():
    theirs = types.ModuleType("torch.fake")
    theirs.__all__ = ["alpha", "beta", "gamma", "delta"]
    for name in theirs.__all__:
        setattr(theirs, name, _function(name, "torch.fake"))
    ours = types.ModuleType("ember.fake")
    ours.alpha = _function("alpha", "ember.fake")
    ours.beta = _function("beta", "ember.fake", "raise NotImplementedError('beta')")
    namespace: dict = {}
    exec("def delta(x, y=3):\n    return x", namespace)
    ours.delta = namespace["delta"]

    report = compare_namespace("torch.fake", theirs, ours)
    assert report.torch_names == ["alpha", "beta", "delta", "gamma"]
    assert report.present == ["alpha", "delta"]
    assert set(report.missing) == {"beta", "gamma"} and report.stubs == ["beta"]
    assert report.coverage == 50.0
    assert report.compared == 2 and report.mismatches == {"delta": ["`y=3` (PyTorch: `y=2`)"]}

    absent = compare_namespace("torch.fake", theirs, None)
    assert absent.coverage == 0.0 and not absent.ember_found


def test_public_names_without_all_drop_imports_helpers_and_implementation_modules():
    parent = types.ModuleType("torch.fakepkg")
    parent.conv = _function("conv", "torch.fakepkg")
    parent.Callable = typing.Callable  # an import of another library
    parent.math = __import__("math")
    parent.Tensor = type("Tensor", (), {"__module__": "torch"})  # torch.Tensor re-exported
    parent.factory_kwargs = _function("factory_kwargs", "torch.fakepkg")  # a known helper
    parent._private = _function("_private", "torch.fakepkg")
    parent.float32 = types.SimpleNamespace(__module__="torch")  # torch-defined value: a name users use

    implementation = types.ModuleType("torch.fakepkg.impl")  # only holds what the parent re-exports
    implementation.conv = parent.conv
    public = types.ModuleType("torch.fakepkg.extra")  # has a name of its own
    public.fancy = _function("fancy", "torch.fakepkg.extra")
    parent.impl, parent.extra = implementation, public
    assert public_names(parent) == ["conv", "extra", "float32"]


def test_tensor_names_keep_operator_dunders_and_drop_class_machinery():
    class Tensor:
        def __add__(self, other): return self
        def __div__(self, other): return self  # Python 2's: never called
        def __torch_function__(self): return None
        def __init_subclass__(cls): return None
        def add(self, other): return self
        def _internal(self): return self
        shape = property(lambda self: ())
    assert tensor_names(Tensor) == ["__add__", "add", "shape"]


def test_reasons_group_known_families_only():
    assert reason_for("sparse_csc_tensor").startswith("column-compressed, block and semi-structured sparse")
    assert reason_for("sparse_coo_tensor") is None  # ember.sparse has COO and CSR
    assert reason_for("quantize_per_tensor") == "quantization"
    assert reason_for("view_as_complex") is None  # Ember has complex numbers
    assert reason_for("cudnn_convolution") .startswith("device-specific")
    assert reason_for("FloatTensor") == "legacy typed tensor and storage classes"
    assert reason_for("Tensor") is None and reason_for("add") is None and reason_for("linalg") is None


def test_out_of_scope_reasons_follow_patterns_and_namespaces():
    assert reason_for("float8_e4m3fn").startswith("dtypes Ember does not have")
    assert reason_for("uint32").startswith("dtypes") and reason_for("int4").startswith("dtypes")
    assert reason_for("int8") is None and reason_for("uint8") is None  # Ember has these
    assert reason_for("rfft2", namespace="torch.fft") is None and reason_for("stft", namespace="torch") is None
    assert reason_for("nested") == "nested and jagged tensors" and reason_for("vmap") is None  # ember.func has it
    assert reason_for("IterDataPipe", namespace="torch.utils.data").startswith("TorchData")
    assert reason_for("graph", namespace="torch") is None  # scoped to torch.utils.data
    assert reason_for("native_layer_norm", namespace="torch").startswith("ATen internals")
    assert reason_for("native_layer_norm", namespace="torch.Tensor") is None
    assert reason_for("flipud") is None and reason_for("is_xla").startswith("device-specific")
    assert reason_for("adjoint") is None
    assert reason_for("has_lapack", namespace="torch").startswith("native build")
    assert reason_for("set_num_interop_threads", namespace="torch").startswith("native build")
    assert reason_for("set_num_threads", namespace="torch") is None  # Ember has real intra-op threads


def test_in_scope_coverage_leaves_out_only_reasoned_misses():
    from ember.compat.render import rows
    from ember.compat.report import NamespaceReport
    report = NamespaceReport("torch", ["add", "sub", "float8_e5m2", "vmap"], present=["add"],
                             missing={"sub": None, "float8_e5m2": "dtypes", "vmap": "transforms"})
    assert report.in_scope == 2 and report.in_scope_coverage == 50.0 and report.coverage == 25.0
    row = rows([report])[0]
    assert row[3:6] == ("25.0%", "2", "50.0%")


def _run(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_the_command_reports_every_namespace_against_real_torch(tmp_path):
    pytest.importorskip("torch")
    from ember.compat import NAMESPACES
    result = _run("-m", "ember.compat", "--write", "report.md", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "report.md").read_text()
    for namespace in NAMESPACES:
        label = "torch" if namespace == "torch" else f"torch.{namespace}"
        assert f"## `{label}`" in text
        assert any(line.startswith(label + " ") for line in result.stdout.splitlines())
    assert "| **all** |" in text and "Signature mismatches" in text
    assert "coverage in scope" in result.stdout.splitlines()[0] and "| coverage in scope |" in text
    assert "FFT and spectral ops" not in text  # ember.fft has all of torch.fft
    # ember.nn.Linear exists, so it is never reported missing
    missing = _run("-m", "ember.compat", "--namespace", "nn", "--missing", cwd=tmp_path)
    lines = missing.stdout.split()
    assert missing.returncode == 0 and lines and all(line.startswith("torch.nn.") for line in lines)
    assert "torch.nn.Linear" not in lines


def test_the_command_exits_2_without_torch(tmp_path):
    blocked = ("import runpy, sys; sys.modules['torch'] = None; sys.argv = ['ember.compat']; "
               "runpy.run_module('ember.compat', run_name='__main__')")
    result = _run("-c", blocked, cwd=tmp_path)
    assert result.returncode == 2
    assert "not installed" in result.stderr and ".[bench]" in result.stderr
