"""The opt-in CPU fallback, on a real backend that lacks some primitives.

The backend under test is the template plugin (examples/template_backend) with a few kernels taken
out, registered in-process under the device type "lacking": every op it has runs its own NumPy
kernels, and the ones it lacks must either raise (the default) or fall back to the CPU.
"""
from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
import textwrap
import types
import warnings
from pathlib import Path

import pytest

import ember
from ember.dispatch import PLUGIN_API_VERSION, BackendError, hookimpl, registry
from ember.dispatch.execution import fallback

TEMPLATE = Path(__file__).resolve().parents[1] / "examples" / "template_backend" / "ember_template_backend.py"
LACKS = ("erf", "sort", "index_put_", "arange", "unfold")  # unary, two outputs, in place, creation, view


def _load_template():
    spec = importlib.util.spec_from_file_location("_template_backend_for_fallback_tests", TEMPLATE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lacking_plugin(template) -> types.ModuleType:
    """A plugin module whose backend is the template's, less the kernels in LACKS."""
    class LackingBackend(template.TemplateBackend):
        device_type = "lacking"
        kernels = {name: k for name, k in template.KERNELS.items() if name not in LACKS}

    plugin = types.ModuleType("lacking_plugin")
    plugin.ember_plugin_api_version = hookimpl(lambda: PLUGIN_API_VERSION)
    plugin.ember_register_backend = hookimpl(lambda: LackingBackend())
    return plugin


@pytest.fixture(scope="module")
def device():
    if "lacking" not in registry.backends():
        assert registry.register_plugin(lacking_plugin(_load_template()), name="lacking_plugin") is not None
    return ember.device("lacking")


@pytest.fixture
def fallback_on(monkeypatch):
    """The fallback on, with a fresh record of the warnings already given; off again afterwards."""
    monkeypatch.setattr(fallback, "_warned", set())
    ember.backends.set_fallback("cpu")
    yield
    ember.backends.set_fallback(None)


def _erf_values(values):
    return [math.erf(v) for v in values]


def test_missing_op_raises_naming_op_backend_and_fallback(device):
    assert ember.backends.get_fallback() is None
    x = ember.tensor([0.5, -1.0], device=device)
    with pytest.raises(BackendError) as caught:
        ember.erf(x)
    message = str(caught.value)
    for fragment in ("erf:", "the lacking backend has no kernel", "EMBER_FALLBACK=cpu", "set_fallback('cpu')"):
        assert fragment in message
    assert (x * 2).tolist() == [1.0, -2.0]  # the ops it has still run


def test_fallback_runs_on_cpu_returns_to_the_device_and_warns_once_per_op(device, fallback_on):
    x = ember.tensor([0.5, -1.0, 2.0], device=device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first, second = ember.erf(x), ember.erf(x * 2)
        values = ember.sort(x, descending=True)
    assert first.device == device and first.dtype == ember.float32
    assert first.tolist() == pytest.approx(_erf_values([0.5, -1.0, 2.0]), rel=1e-6)
    assert second.tolist() == pytest.approx(_erf_values([1.0, -2.0, 4.0]), rel=1e-6)
    assert values.values.tolist() == [2.0, 0.5, -1.0] and values.indices.tolist() == [2, 0, 1]
    assert values.values.device == device and values.indices.device == device
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert messages == [
        "erf: the lacking backend has no kernel for this op; running it on cpu (EMBER_FALLBACK=cpu), "
        "copying its inputs there and its results back",
        "sort: the lacking backend has no kernel for this op; running it on cpu (EMBER_FALLBACK=cpu), "
        "copying its inputs there and its results back"]
    assert all(w.filename == __file__ for w in caught)  # the warning points at the caller's line


def test_fallback_is_differentiable_on_the_device(device, fallback_on):
    x = ember.tensor([0.5, -1.0, 2.0], dtype=ember.float64, device=device, requires_grad=True)
    with pytest.warns(RuntimeWarning, match="erf: the lacking backend"):
        ember.erf(x).sum().backward()
    assert x.grad.device == device
    expected = [2 / math.sqrt(math.pi) * math.exp(-v * v) for v in (0.5, -1.0, 2.0)]
    assert x.grad.tolist() == pytest.approx(expected, rel=1e-12)


def test_fallback_writes_in_place_ops_back_into_the_device_tensor(device, fallback_on):
    base = ember.zeros(2, 3, device=device)
    row = base[1]
    version = base._version[0]
    with pytest.warns(RuntimeWarning, match="index_put_: the lacking backend"):
        base[ember.tensor([1, 0], device=device), ember.tensor([2, 0], device=device)] = 5.0
    assert base.device == device and base._version[0] > version
    assert base.tolist() == [[5.0, 0.0, 0.0], [0.0, 0.0, 5.0]]
    assert row.tolist() == [0.0, 0.0, 5.0]  # a view of the device tensor sees the write


def test_fallback_creates_on_the_device(device, fallback_on):
    with pytest.warns(RuntimeWarning, match="arange: the lacking backend"):
        t = ember.arange(4, device=device)
    assert t.device == device and t.dtype == ember.int64 and t.tolist() == [0, 1, 2, 3]


def test_view_ops_do_not_fall_back(device, fallback_on):
    with pytest.raises(BackendError, match=r"unfold: .*lacking backend has no kernel for this view op.*share memory"):
        ember.arange(5.0).to(device).unfold(0, 2, 1)


def test_set_fallback_refuses_unknown_targets():
    with pytest.raises(ValueError, match=r"set_fallback: expected 'cpu' or None, got 'gpu'"):
        ember.backends.set_fallback("gpu")
    assert ember.backends.get_fallback() is None


@pytest.mark.parametrize("value,expected", [("cpu", "cpu"), ("", None), ("off", None)])
def test_environment_variable_turns_the_fallback_on_at_import(value, expected):
    script = "import ember; print(ember.backends.get_fallback())"
    env = {**os.environ, "EMBER_FALLBACK": value}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(expected)


def test_unknown_environment_value_warns_and_stays_off():
    script = textwrap.dedent("""
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import ember
        print(ember.backends.get_fallback())
        print([str(w.message) for w in caught if "EMBER_FALLBACK" in str(w.message)])
    """)
    env = {**os.environ, "EMBER_FALLBACK": "gpu"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    state, warned = out.stdout.strip().splitlines()
    assert state == "None"
    assert "EMBER_FALLBACK='gpu' is not understood (expected cpu); the fallback stays off" in warned
