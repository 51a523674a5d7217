"""The switches programs set (``ember.backends.cuda.matmul``, ``cudnn``, ``mps``, matmul precision,
determinism) and ``ember.accelerator``, checked against PyTorch where PyTorch answers on this machine."""
from __future__ import annotations

import dataclasses
import importlib.util
import subprocess
import sys

import pytest

import ember
from ember.dispatch.contract import flags

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def restore_flags():
    saved = dataclasses.replace(flags.FLAGS)
    torch_saved = (torch.get_float32_matmul_precision(), torch.backends.cudnn.benchmark,
                   torch.are_deterministic_algorithms_enabled(),
                   torch.is_deterministic_algorithms_warn_only_enabled())
    yield
    for field in dataclasses.fields(saved):
        setattr(flags.FLAGS, field.name, getattr(saved, field.name))
    torch.set_float32_matmul_precision(torch_saved[0])
    torch.backends.cudnn.benchmark = torch_saved[1]
    torch.use_deterministic_algorithms(torch_saved[2], warn_only=torch_saved[3])


def test_defaults_match_torch():
    for e, t in [(ember.backends.cuda.matmul, torch.backends.cuda.matmul)]:
        for name in ("allow_tf32", "allow_fp16_reduced_precision_reduction",
                     "allow_bf16_reduced_precision_reduction", "allow_fp16_accumulation"):
            assert getattr(e, name) == getattr(t, name), name
    for name in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(ember.backends.cudnn, name) == getattr(torch.backends.cudnn, name), name
    assert ember.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == "highest"
    assert ember.are_deterministic_algorithms_enabled() is torch.are_deterministic_algorithms_enabled() is False
    assert ember.is_deterministic_algorithms_warn_only_enabled() is False


@pytest.mark.parametrize("steps", [
    [("precision", "high")], [("precision", "medium")], [("tf32", True)], [("tf32", True), ("tf32", False)],
    [("precision", "high"), ("precision", "highest")]])
def test_allow_tf32_and_matmul_precision_are_one_setting(steps):
    for kind, value in steps:
        for module, backends in ((ember, ember.backends), (torch, torch.backends)):
            if kind == "precision":
                module.set_float32_matmul_precision(value)
            else:
                backends.cuda.matmul.allow_tf32 = value
    assert ember.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
    assert ember.backends.cuda.matmul.allow_tf32 == torch.backends.cuda.matmul.allow_tf32
    assert flags.float32_matmul_precision() == ember.get_float32_matmul_precision()  # what backends read


def test_bad_precision_warns_and_changes_nothing_like_torch():
    ember.set_float32_matmul_precision("high")
    with pytest.warns(UserWarning, match="bad is not one of 'highest', 'high', or 'medium'"):
        ember.set_float32_matmul_precision("bad")
    assert ember.get_float32_matmul_precision() == "high"
    with pytest.raises(TypeError, match="set_float32_matmul_precision"):
        ember.set_float32_matmul_precision(1)


def test_matmul_flags_reject_unknown_names_and_bad_values():
    matmul = ember.backends.cuda.matmul
    with pytest.raises(AttributeError, match="Unknown attribute foo"):
        matmul.foo
    with pytest.raises(AttributeError, match="Unknown attribute foo"):
        matmul.foo = 1
    matmul.allow_fp16_reduced_precision_reduction = (False, True)
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = (False, True)
    assert matmul.allow_fp16_reduced_precision_reduction is False
    assert matmul.allow_fp16_reduced_precision_reduction_split_k is True
    assert torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction is False
    matmul.allow_bf16_reduced_precision_reduction = False
    assert matmul.allow_bf16_reduced_precision_reduction is False
    with pytest.raises(TypeError):
        matmul.allow_bf16_reduced_precision_reduction = "yes"
    with pytest.raises(TypeError):
        matmul.allow_tf32 = 1


def test_cudnn_switches_and_flags_context():
    import ember.backends.cudnn as cudnn  # PyTorch's import path works too
    assert cudnn is ember.backends.cudnn
    cudnn.benchmark = True
    cudnn.deterministic = True
    assert flags.FLAGS.cudnn_benchmark and flags.FLAGS.cudnn_deterministic
    with cudnn.flags(enabled=False, benchmark=False):
        assert cudnn.enabled is False and cudnn.benchmark is False
    assert cudnn.enabled is True and cudnn.benchmark is True
    with pytest.raises(TypeError, match="benchmark"):
        cudnn.benchmark = "fast"


def test_availability_queries():
    assert ember.backends.cudnn.is_available() is (ember.cuda.is_available() and
                                                   ember.backends.cudnn.version() is not None)
    if not ember.cuda.is_available():
        assert ember.backends.cudnn.version() is None and ember.cuda.is_bf16_supported() is False
        assert torch.backends.cudnn.version() is None and torch.cuda.is_bf16_supported() is False
    assert ember.backends.cuda.is_built() is ("cuda" in ember.backends.registered())
    assert ember.backends.mps.is_built() is False and ember.backends.mps.is_available() is False
    assert ember.backends.mps.is_available() == torch.backends.mps.is_available()


def test_deterministic_algorithms_like_torch():
    for mode, warn_only in [(True, False), (True, True), (False, False)]:
        ember.use_deterministic_algorithms(mode, warn_only=warn_only)
        torch.use_deterministic_algorithms(mode, warn_only=warn_only)
        assert ember.are_deterministic_algorithms_enabled() == torch.are_deterministic_algorithms_enabled()
        assert (ember.is_deterministic_algorithms_warn_only_enabled() ==
                torch.is_deterministic_algorithms_warn_only_enabled())
        assert flags.FLAGS.deterministic is mode
    with pytest.raises(TypeError):
        torch.use_deterministic_algorithms("x")
    with pytest.raises(TypeError, match="mode must be a bool"):
        ember.use_deterministic_algorithms("x")


def test_switch_namespaces_import_no_cupy():
    code = ("import sys, ember; ember.backends.cuda.matmul.allow_tf32 = True; import ember.backends.cudnn; "
            "ember.backends.cudnn.is_available(); ember.backends.cuda.is_built(); "
            "print(ember.get_float32_matmul_precision(), 'cupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # cudnn.is_available() probes the cuda backend, which imports CuPy where it is installed (GPU or not)
    expected_cupy = str(importlib.util.find_spec("cupy") is not None)
    assert out.split() == ["high", expected_cupy]


# -- ember.accelerator ----------------------------------------------------------------------------

def test_accelerator_reports_the_first_available_non_cpu_backend():
    available = [name for name, status in ember.backends.available().items()
                 if status == "available" and name != "cpu"]
    device = ember.accelerator.current_accelerator()
    assert ember.accelerator.is_available() is bool(available)
    if not available:
        assert device is None and ember.accelerator.device_count() == 0
        for call in (ember.accelerator.current_device_index, ember.accelerator.synchronize):
            with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
                call()
        return
    assert device.type in available
    assert ("cuda" not in available) or device.type == "cuda"
    assert ember.accelerator.device_count() >= 1
    index = ember.accelerator.current_device_index()
    assert 0 <= index < ember.accelerator.device_count()
    ember.accelerator.set_device_index(index)
    ember.accelerator.synchronize()
    ember.accelerator.synchronize(f"{device.type}:{index}")
    x = ember.ones(3, device=device.type)
    assert x.device.type == device.type
    with pytest.raises(ValueError, match="set_device_index"):
        ember.accelerator.set_device_index(ember.accelerator.device_count())
    with pytest.raises(ValueError, match="not a device of the current accelerator"):
        ember.accelerator.synchronize("cpu")


def test_torch_accelerator_agrees_on_a_machine_without_gpus():
    if torch.accelerator.is_available():
        pytest.skip("torch sees an accelerator here")
    with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
        torch.accelerator.current_device_index()
    assert torch.accelerator.current_accelerator() is None and torch.accelerator.device_count() == 0
