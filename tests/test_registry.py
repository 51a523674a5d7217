"""Backend discovery: entry points, broken plugins, duplicate device types, API versions, availability."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import types

import pytest

import ember
from ember.dispatch import PLUGIN_API_VERSION, Backend, hookimpl, registry
from ember.dispatch.contract import plugins


def _plugin(backend_factory, version=PLUGIN_API_VERSION, name="fake_plugin"):
    module = types.ModuleType(name)

    @hookimpl
    def ember_plugin_api_version():
        return version

    @hookimpl
    def ember_register_backend():
        return backend_factory()

    module.ember_plugin_api_version = ember_plugin_api_version
    module.ember_register_backend = ember_register_backend
    return module


def test_bundled_backends_report_status():
    report = ember.backends.available()
    assert report["cpu"] == "available"
    for name in ("cuda", "opencl"):
        assert name in report
        assert report[name] == "available" or report[name].startswith("unavailable: ")


def test_unavailable_backend_gives_reason_on_use():
    reason = ember.backends.available()["cuda"]
    if reason == "available":
        pytest.skip("cuda is available here")
    with pytest.raises(ember.DeviceError, match=r"cuda: unavailable: "):
        ember.zeros(2, device="cuda")
    with pytest.raises(ember.DeviceError, match=r"cuda: unavailable: "):
        ember.ones(2).cuda()


def test_duplicate_device_type_is_refused_with_a_warning():
    class SecondCpu(Backend):
        device_type = "cpu"

    with pytest.warns(RuntimeWarning, match=r"claims device type 'cpu'"):
        assert registry.register_plugin(_plugin(SecondCpu, name="second_cpu")) is None
    assert (ember.ones(2) + 1).tolist() == [2.0, 2.0]


def test_incompatible_api_version_is_refused():
    class Future(Backend):
        device_type = "future_dev"

    with pytest.warns(RuntimeWarning, match=r"plugin API version 999"):
        assert registry.register_plugin(_plugin(Future, version=999, name="future_plugin")) is None
    assert "future_dev" not in registry.backends()
    assert "future_plugin" in ember.backends.available()


def test_plugin_without_an_api_version_is_refused():
    class Unversioned(Backend):
        device_type = "unversioned_dev"

    plugin = _plugin(Unversioned, name="unversioned_plugin")
    del plugin.ember_plugin_api_version
    with pytest.warns(RuntimeWarning, match=r"'unversioned_plugin' failed to register: does not say which plugin "
                                            r"API version it targets: implement ember_plugin_api_version\(\)"):
        assert registry.register_plugin(plugin) is None
    assert "unversioned_dev" not in registry.backends()


def test_plugin_raising_in_registration_is_reported_and_skipped():
    def explode():
        raise RuntimeError("driver exploded")

    with pytest.warns(RuntimeWarning, match=r"'exploding' failed to register: driver exploded"):
        assert registry.register_plugin(_plugin(explode, name="exploding")) is None
    assert ember.backends.available()["exploding"].startswith("unavailable: plugin failed to register")
    assert ember.arange(3).sum().item() == 3


def test_unknown_device_type_names_registered_backends():
    with pytest.raises(ember.DeviceError, match=r"unknown device type 'nosuch'.*cpu"):
        ember.zeros(2, device="nosuch")
    with pytest.raises(ember.DeviceError, match=r"invalid device string"):
        ember.device("cpu:x")


# -- installed plugins, in a fresh interpreter --------------------------------------------------------------
# Each fake distribution below is installed the way pip would (a module plus a dist-info folder with its
# entry points) into a folder on PYTHONPATH, so discovery runs exactly as for a real third-party plugin.

_TWIN = """
import numpy as np
from ember.dispatch import PLUGIN_API_VERSION, Backend, hookimpl

class TwinBackend(Backend):  # just enough of a NumPy backend for ones() + 1
    device_type = "twin"
    kernels = {"full": lambda size, value, dtype, device: np.full(size, value, np.dtype(dtype.name)),
               "add": lambda a, b, alpha: np.asarray(a + alpha * b),
               "to_dtype": lambda a, dtype: a.astype(np.dtype(dtype.name))}

    def default_index(self):
        return None

    def from_numpy(self, array, dtype, index):
        return np.array(array, dtype=np.dtype(dtype.name))

    def to_numpy(self, native):
        return native.copy()

@hookimpl
def ember_plugin_api_version():
    return PLUGIN_API_VERSION

@hookimpl
def ember_register_backend():
    return TwinBackend()
"""
_SLEEPY = """
from ember.dispatch import PLUGIN_API_VERSION, Backend, hookimpl

class SleepyBackend(Backend):
    device_type = "sleepy"

    def unavailable_reason(self):
        return "no sleepy card found (driver 1.2 is not loaded)"

@hookimpl
def ember_plugin_api_version():
    return PLUGIN_API_VERSION

@hookimpl
def ember_register_backend():
    return SleepyBackend()
"""
_IMPOSTOR = _TWIN.replace('"twin"', '"cpu"')
_PLUGINS = {  # entry-point name -> (module name, source)
    "broken": ("broken_ember_plugin", "raise ImportError('missing driver libfoo.so')\n"),
    "aaa_cpu": ("aaa_cpu_plugin", _IMPOSTOR),  # sorts before "cpu", yet must not take it
    "twin_a": ("twin_a_plugin", _TWIN),
    "twin_b": ("twin_b_plugin", _TWIN),
    "sleepy": ("sleepy_plugin", _SLEEPY),
}
_PROBE = textwrap.dedent("""
    import json, warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import ember
        total = (ember.ones(3) * 2).sum().item()
        status = ember.backends.available()
        twin = (ember.ones(2, device="twin") + 1).tolist()
    try:
        ember.zeros(2, device="sleepy")
        sleepy = "no error"
    except ember.DeviceError as exc:
        sleepy = str(exc)
    print(json.dumps({"total": total, "status": status, "twin": twin, "sleepy": sleepy,
                      "warnings": [str(w.message) for w in caught]}))
""")


def _install_fake_plugins(site) -> None:
    for entry_point, (module, source) in _PLUGINS.items():
        (site / f"{module}.py").write_text(source)
        dist = site / f"{module}-1.0.dist-info"
        dist.mkdir(parents=True)
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 1.0\n")
        (dist / "entry_points.txt").write_text(f"[ember.backends]\n{entry_point} = {module}\n")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Runs the probe (and ``python -m ember.backends``) with the fake plugins installed; returns both."""
    import json
    import os

    site = tmp_path_factory.mktemp("site")
    _install_fake_plugins(site)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    probe = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120, env=env)
    assert probe.returncode == 0, probe.stderr
    listing = subprocess.run([sys.executable, "-m", "ember.backends"], capture_output=True, text=True, timeout=120,
                             env=env)
    assert listing.returncode == 0, listing.stderr
    return json.loads(probe.stdout), listing.stdout.splitlines()


def test_plugin_raising_on_import_is_reported_and_everything_else_works(installed):
    result, _ = installed
    assert result["status"]["broken"] == ("unavailable: plugin failed to import (broken_ember_plugin): "
                                          "ImportError: missing driver libfoo.so")
    assert any("backend plugin 'broken' failed to import" in w and "libfoo.so" in w for w in result["warnings"])
    assert result["total"] == 6.0 and result["twin"] == [2.0, 2.0]
    assert result["status"]["cpu"] == "available"


def test_two_plugins_claiming_one_device_type_is_a_clear_error(installed):
    result, _ = installed
    refusal = ("claims device type 'twin', which plugin 'twin_a' (twin_a_plugin) already provides; "
               "uninstall one of the two")
    assert result["status"]["twin_b"] == f"unavailable: plugin failed to register: {refusal}"
    assert any(w == f"ember: backend plugin 'twin_b' failed to register: {refusal}" for w in result["warnings"])
    assert result["status"]["twin"] == "available"  # the first plugin keeps the device type
    # Ember's own backends register first, whatever the names of the others
    assert result["status"]["aaa_cpu"].startswith("unavailable: plugin failed to register: claims device type 'cpu', "
                                                  "which plugin 'cpu' (ember.backends.cpu")


def test_available_shows_each_status_and_reason(installed):
    result, listing = installed
    status = result["status"]
    assert status["sleepy"] == "unavailable: no sleepy card found (driver 1.2 is not loaded)"
    assert result["sleepy"] == "zeros: sleepy: unavailable: no sleepy card found (driver 1.2 is not loaded)"
    # backends by device type, failed plugins by entry-point name; python -m ember.backends prints the same, in
    # the order the plugins finish importing (on a loaded machine, not always the listing's)
    assert {"cpu", "twin", "sleepy", "broken", "twin_b"} <= status.keys() and "twin_a" not in status
    assert sorted(f"{name}: {line}" for name, line in status.items()) == sorted(listing)


def test_pluggy_is_not_on_the_per_op_path(monkeypatch):
    """After discovery, calling ops must not touch the plugin manager."""
    ember.ones(1) + ember.ones(1)

    class ForbiddenHooks:
        def __getattr__(self, name):
            raise AssertionError(f"pluggy hook {name} called per op")

    monkeypatch.setattr(plugins._manager, "hook", ForbiddenHooks())
    x = ember.arange(6.0).view(2, 3)
    assert (x @ x.T).sum().item() == 5 + 14 + 14 + 50
