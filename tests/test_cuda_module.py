"""ember.cuda and the cuda backend where CUDA cannot run: False, 0, clear errors, and no CuPy import.

These run on every machine. Where a GPU with CuPy is present, the unavailable-path tests skip and the
conformance suite (``pytest --pyargs ember.conformance --backend cuda``) checks the backend instead.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import ember
from ember import nn

REASON = ember.backends.available()["cuda"]
unavailable_only = pytest.mark.skipif(REASON == "available", reason="CUDA is available here")


def _run(code: str, env_path: str | None = None) -> subprocess.CompletedProcess:
    import os
    env = dict(os.environ)
    if env_path is not None:
        env["PYTHONPATH"] = env_path + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120, env=env)


def test_importing_and_computing_never_imports_cupy():
    result = _run("""
        import sys
        import ember
        (ember.ones(3) * 2).sum().item()
        ember.cuda  # the module exists without touching the device
        assert 'cupy' not in sys.modules, 'import ember imported cupy'
        print('ok')
    """)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr


@unavailable_only
def test_is_available_is_false_with_the_reason():
    assert REASON.startswith("unavailable: ")
    assert ember.cuda.is_available() is False
    assert ember.cuda.device_count() == 0
    reason = ember.cuda.unavailable_reason()
    assert reason and reason in REASON
    assert any(word in reason for word in ("CuPy", "CUDA", "device")), reason


@unavailable_only
@pytest.mark.parametrize("make", [
    lambda: ember.zeros(2, device="cuda"),
    lambda: ember.randn(2, 3, device="cuda:0"),
    lambda: ember.ones(2).cuda(),
    lambda: ember.ones(2).to("cuda"),
    lambda: ember.tensor([1.0, 2.0], device=ember.device("cuda", 0)),
    lambda: nn.Linear(2, 3).cuda(),
    lambda: ember.Generator("cuda"),
], ids=["zeros", "randn", "tensor.cuda", "tensor.to", "tensor(device=)", "module.cuda", "Generator"])
def test_placing_anything_on_cuda_raises_the_reason(make):
    with pytest.raises(ember.DeviceError, match=r"cuda: unavailable: ") as info:
        make()
    assert REASON.removeprefix("unavailable: ") in str(info.value)


@unavailable_only
@pytest.mark.parametrize("call", [
    ember.cuda.current_device, lambda: ember.cuda.set_device(0), ember.cuda.synchronize,
    ember.cuda.memory_allocated, ember.cuda.max_memory_allocated, ember.cuda.memory_reserved,
    ember.cuda.reset_peak_memory_stats, ember.cuda.get_rng_state,
], ids=["current_device", "set_device", "synchronize", "memory_allocated", "max_memory_allocated",
        "memory_reserved", "reset_peak_memory_stats", "get_rng_state"])
def test_device_queries_raise_the_reason(call):
    with pytest.raises(ember.DeviceError, match=r"cuda: unavailable: "):
        call()


@unavailable_only
def test_seeding_and_cache_release_are_silently_ignored():
    ember.cuda.manual_seed(1)
    ember.cuda.manual_seed_all(2)
    ember.cuda.empty_cache()
    assert isinstance(ember.cuda.seed_all(), int)
    ember.manual_seed(3)  # seeds every available backend; cuda is skipped
    assert ember.randn(2).shape == (2,)


@unavailable_only
def test_conformance_run_skips_and_says_why():
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--pyargs",
                             "ember.conformance", "--backend", "cuda", "-k", "test_meta"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "backend 'cuda' is unavailable, so every test was skipped" in result.stdout
    assert REASON.removeprefix("unavailable: ") in result.stdout
    assert " passed" not in result.stdout


def test_tensor_is_cuda_is_false_on_cpu():
    assert ember.ones(1).is_cuda is False


def test_set_device_on_a_single_device_backend_is_refused():
    backend = ember.dispatch.registry.get_backend("cpu")
    with pytest.raises(ValueError, match=r"cpu: the default device cannot be changed"):
        backend.set_default_index(1)
    backend.empty_cache(None)  # the generic default: nothing cached, nothing to do
    backend.reset_peak_memory_stats(None)


def test_cuda_generator_state_is_its_seed_and_offset():
    """The device generator's state round-trips exactly (what checkpoints of cuda runs rely on); it is two
    numbers, so this needs no GPU."""
    from ember.backends.cuda.rng import CudaGenerator
    generator = CudaGenerator(None, 0, 7)
    generator.offset = 40
    state = generator.get_state()
    assert len(state) == 16
    generator.manual_seed(9)
    assert (generator.initial_seed, generator.offset) == (9, 0)
    generator.set_state(state)
    assert (generator.initial_seed, generator.offset) == (7, 40)
    with pytest.raises(ValueError, match=r"expected 16 bytes of cuda generator state"):
        generator.set_state(b"\x00" * 13)
