"""Backend discovery: entry points, broken plugins, duplicate device types, API versions, availability."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import types

import pytest

import ember
from ember.dispatch import PLUGIN_API_VERSION, Backend, hookimpl, registry


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


def test_broken_entry_point_plugin_warns_and_others_work(tmp_path):
    """A plugin installed through the entry-point group that fails on import, in a fresh interpreter."""
    site = tmp_path / "site"
    (site / "broken_ember_plugin").mkdir(parents=True)
    (site / "broken_ember_plugin" / "__init__.py").write_text("raise ImportError('missing driver libfoo.so')\n")
    dist = site / "broken_ember_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-ember-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[ember.backends]\nbroken = broken_ember_plugin\n")
    script = textwrap.dedent("""
        import sys, warnings
        sys.path.insert(0, sys.argv[1])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import ember
            total = (ember.ones(3) * 2).sum().item()
            status = ember.backends.available()["broken"]
        print(total)
        print(status)
        print([str(w.message) for w in caught if "broken" in str(w.message)])
    """)
    out = subprocess.run([sys.executable, "-c", script, str(site)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    total, status, warnings_text = out.stdout.strip().splitlines()
    assert total == "6.0"
    assert "missing driver libfoo.so" in status
    assert "backend plugin 'broken' failed to import" in warnings_text


def test_pluggy_is_not_on_the_per_op_path(monkeypatch):
    """After discovery, calling ops must not touch the plugin manager."""
    ember.ones(1) + ember.ones(1)

    class ForbiddenHooks:
        def __getattr__(self, name):
            raise AssertionError(f"pluggy hook {name} called per op")

    monkeypatch.setattr(registry._manager, "hook", ForbiddenHooks())
    x = ember.arange(6.0).view(2, 3)
    assert (x @ x.T).sum().item() == 5 + 14 + 14 + 50
