"""Broken and slow backend plugins, installed for real (module + dist-info entry point) in a temporary site folder.

Each probe runs in a fresh interpreter, so discovery runs exactly as for a third-party plugin: lazily, with
hanging, exiting and raising plugins reported and skipped while Ember keeps working. Plugins import all at once, so
the three hanging ones cost one timeout, not three.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time

import pytest

_TIMEOUT_S = 2  # EMBER_PLUGIN_IMPORT_TIMEOUT for the probes: the hanging plugin is abandoned after this

_BACKEND = """
import numpy as np
from ember.dispatch import PLUGIN_API_VERSION, Backend, hookimpl

SEEDS = []

class {cls}(Backend):
    device_type = "{device_type}"
    kernels = {{"full": lambda size, value, dtype, device: np.full(size, value, np.dtype(dtype.name)),
               "add": lambda a, b, alpha: np.asarray(a + alpha * b),
               "to_dtype": lambda a, dtype: a.astype(np.dtype(dtype.name))}}

    def default_index(self):
        return None

    def from_numpy(self, array, dtype, index):
        return np.array(array, dtype=np.dtype(dtype.name))

    def to_numpy(self, native):
        return native.copy()

    def manual_seed(self, seed):
        SEEDS.append(seed)
{extra}
@hookimpl
def ember_plugin_api_version():
    return PLUGIN_API_VERSION

@hookimpl
def ember_register_backend():
    return {cls}()
"""
_RAISING_REASON = """
    def unavailable_reason(self):
        raise RuntimeError("probe crashed: bad driver state")
"""
_EXITING_REASON = """
    def unavailable_reason(self):
        raise SystemExit(4)
"""
_SLOW_S = 1.4  # import time of the slow but healthy plugin: past the CLI's 1 s waiting notice, within the timeout
_PLUGINS = {  # entry-point name -> (module name, source)
    "lazy": ("lazy_ember_plugin", _BACKEND.format(cls="LazyBackend", device_type="lazy", extra="")),
    "slow": ("slow_ember_plugin", f"import time\ntime.sleep({_SLOW_S})\n"
                                  + _BACKEND.format(cls="SlowBackend", device_type="slow", extra="")),
    "hang": ("hanging_ember_plugin", "import time\ntime.sleep(3600)\n"),
    "stall": ("stalling_ember_plugin", "import threading\nthreading.Event().wait()\n"),
    "deadlock": ("deadlocking_ember_plugin", "import threading\nlock = threading.Lock()\nlock.acquire()\n"
                                             "lock.acquire()\n"),
    "exits": ("exiting_ember_plugin", "raise SystemExit(3)\n"),
    "interrupts": ("interrupting_ember_plugin", "raise KeyboardInterrupt\n"),
    "reasonless": ("reasonless_ember_plugin",
                   _BACKEND.format(cls="ReasonlessBackend", device_type="reasonless", extra=_RAISING_REASON)),
    "quitter": ("quitter_ember_plugin",
                _BACKEND.format(cls="QuitterBackend", device_type="quitter", extra=_EXITING_REASON)),
}
_MODULES = [module for module, _ in _PLUGINS.values()]
_HANGING = {"deadlock": "deadlocking_ember_plugin", "hang": "hanging_ember_plugin", "stall": "stalling_ember_plugin"}


def _abandoned(module: str) -> str:
    return (f"did not finish importing ({module}) within {_TIMEOUT_S} s and was abandoned "
            f"(set EMBER_PLUGIN_IMPORT_TIMEOUT to wait longer)")


def _install(site, plugins: dict[str, tuple[str, str]], timeout_s: float) -> dict[str, str]:
    """Installs ``plugins`` in ``site`` as pip would; the environment that puts them on PYTHONPATH."""
    for entry_point, (module, source) in plugins.items():
        (site / f"{module}.py").write_text(source)
        dist = site / f"{module}-1.0.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 1.0\n")
        (dist / "entry_points.txt").write_text(f"[ember.backends]\n{entry_point} = {module}\n")
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "EMBER_PLUGIN_IMPORT_TIMEOUT": str(timeout_s)}


@pytest.fixture(scope="module")
def site_env(tmp_path_factory):
    """An environment whose PYTHONPATH holds the plugins above, installed as pip would install them."""
    return _install(tmp_path_factory.mktemp("broken_site"), _PLUGINS, _TIMEOUT_S)


def _probe(env, code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_import_ember_and_cpu_work_import_no_third_party_plugin(site_env):
    started = time.perf_counter()
    result = _probe(site_env, f"""
        import json, sys
        import ember
        total = (ember.ones(3) * 2).sum().item()
        ember.manual_seed(7)
        print(json.dumps({{"total": total, "imported": [m for m in {_MODULES!r} if m in sys.modules],
                          "template": "ember_template_backend" in sys.modules}}))
    """)
    assert result == {"total": 6.0, "imported": [], "template": False}
    assert time.perf_counter() - started < 60  # the hanging plugin was never imported, so never waited for


def test_plugin_is_imported_on_first_use_of_its_device_type_and_seeded(site_env):
    result = _probe(site_env, """
        import json, sys
        import ember
        ember.manual_seed(123)
        before = "lazy_ember_plugin" in sys.modules
        values = (ember.ones(2, device="lazy") + 1).tolist()
        seeds = sys.modules["lazy_ember_plugin"].SEEDS
        others = [m for m in ("hanging_ember_plugin", "exiting_ember_plugin") if m in sys.modules]
        print(json.dumps({"before": before, "values": values, "seeds": seeds, "others": others}))
    """)
    # named after its device type, the plugin loads alone; it starts from the seed set before it loaded
    assert result == {"before": False, "values": [2.0, 2.0], "seeds": [123], "others": []}


def test_hanging_plugin_is_abandoned_and_reported_and_ember_stays_usable(site_env):
    result = _probe(site_env, """
        import json, time
        import ember
        started = time.perf_counter()
        try:
            ember.zeros(2, device="hang")
            error = None
        except ember.DeviceError as exc:
            error = str(exc)
        waited = time.perf_counter() - started
        print(json.dumps({"error": error, "waited": waited, "status": ember.backends.available()["hang"],
                          "after": (ember.arange(4) * 2).tolist()}))
    """)
    abandoned = _abandoned("hanging_ember_plugin")
    assert result["status"] == f"unavailable: plugin {abandoned}"
    assert result["error"].startswith("zeros: device: unknown device type 'hang' in 'hang'; registered backends: cpu")
    assert result["error"].endswith(f"; plugin 'hang' {abandoned}")
    assert _TIMEOUT_S <= result["waited"] < _TIMEOUT_S + 30
    assert result["after"] == [0, 2, 4, 6]


def test_plugins_exiting_interrupting_or_failing_their_probe_are_reported(site_env):
    result = _probe(site_env, """
        import json, warnings
        import ember
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            status = ember.backends.available()
        try:
            ember.zeros(1, device="reasonless")
            error = None
        except ember.DeviceError as exc:
            error = str(exc)
        print(json.dumps({"status": status, "error": error, "warnings": [str(w.message) for w in caught],
                          "lazy": (ember.ones(1, device="lazy") + 2).tolist()}))
    """)
    status = result["status"]
    assert status["exits"] == "unavailable: plugin failed to import (exiting_ember_plugin): SystemExit: 3"
    assert status["interrupts"] == "unavailable: plugin failed to import (interrupting_ember_plugin): KeyboardInterrupt"
    reason = "plugin 'reasonless': unavailable_reason() raised RuntimeError: probe crashed: bad driver state"
    assert status["reasonless"] == f"unavailable: {reason}"
    assert status["quitter"] == "unavailable: plugin 'quitter': unavailable_reason() raised SystemExit: 4"
    assert result["error"] == f"zeros: reasonless: unavailable: {reason}"
    assert any("'exits' failed to import" in w for w in result["warnings"])
    assert any(reason in w for w in result["warnings"])
    assert status["cpu"] == "available" and status["lazy"] == "available" and result["lazy"] == [3.0]


def test_hanging_plugins_are_abandoned_together_in_one_timeout(site_env):
    result = _probe(site_env, """
        import json, time
        import ember
        from ember.dispatch import registry
        registry.discover()  # finds the entry points and registers Ember's own backends: not what is timed
        started = time.perf_counter()
        registry.backends()
        waited = time.perf_counter() - started
        print(json.dumps({"status": ember.backends.available(), "waited": waited}))
    """)
    for name, module in _HANGING.items():
        assert result["status"][name] == f"unavailable: plugin {_abandoned(module)}"
    assert result["status"]["slow"] == "available"  # slower than the rest, still within the timeout
    # one after another, the three would take 3 x the timeout
    assert _TIMEOUT_S <= result["waited"] < 2 * _TIMEOUT_S + 1


@pytest.fixture(scope="module")
def cli_output(site_env) -> list[str]:
    """The lines of ``python -m ember.backends``, stderr interleaved with stdout in the order they were written."""
    listing = subprocess.run([sys.executable, "-m", "ember.backends"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, timeout=120, env=site_env)
    assert listing.returncode == 0, listing.stdout
    return listing.stdout.splitlines()


def _status_lines(lines: list[str]) -> dict[str, int]:
    """Line number of each backend's (or failed plugin's) status line; the others are warnings and notices."""
    return {match[1]: number for number, line in enumerate(lines)
            if (match := re.fullmatch(r"(\w+): (available|unavailable: .*)", line))}


def test_python_m_ember_backends_lists_every_plugin_and_exits_zero(cli_output):
    status = {name: cli_output[at].split(": ", 1)[1] for name, at in _status_lines(cli_output).items()}
    assert status["cpu"] == "available" and status["lazy"] == "available" and status["slow"] == "available"
    for name in ("hang", "stall", "deadlock", "exits", "interrupts", "reasonless", "quitter"):
        assert status[name].startswith("unavailable: "), (name, status[name])
    assert not any("Traceback" in line for line in cli_output)


def test_python_m_ember_backends_shows_statuses_as_they_come_and_what_it_waits_for(cli_output):
    waiting = [line for line in cli_output if line.startswith("waiting for: ")]
    assert len(waiting) == 1, cli_output
    names, limit = re.fullmatch(r"waiting for: (.*) \(up to (.*) s\)", waiting[0]).groups()
    assert set(_HANGING) <= set(names.split(", ")) and "lazy" not in names.split(", ") and limit == str(_TIMEOUT_S)
    at = _status_lines(cli_output)
    waited_from = cli_output.index(waiting[0])
    first_timeout = min(at[name] for name in _HANGING)
    assert first_timeout > waited_from
    for name in ("cpu", "lazy", "slow", "exits", "interrupts", "reasonless", "quitter"):
        assert at[name] < first_timeout, (name, cli_output)
    for name, module in _HANGING.items():
        assert cli_output[at[name]] == f"{name}: unavailable: plugin {_abandoned(module)}"


_LIVE_REPORT_PROBE = """
    import json, warnings
    from ember.backends import available, registered
    from ember.dispatch import registry
    waiting = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shown = registry.report_statuses(lambda name, status: None, lambda names, _: waiting.append(names),
                                         notice_after=0.3)
    print(json.dumps({"shown": shown, "status": available(), "registered": list(registered()), "waiting": waiting,
                      "twin": type(registered()["twin"]).__module__, "warnings": [str(w.message) for w in caught]}))
"""


@pytest.mark.parametrize("slow", ["solo", "twin_a", "twin_b"])
def test_registry_is_the_same_whichever_plugin_arrives_last(tmp_path, slow):
    """Two plugins claim one device type; the first by name keeps it even when it arrives last, after the other
    has registered (the live report registers each plugin as it arrives), and the backends keep entry-point
    order."""
    plugins = {name: (f"{name}_plugin", _BACKEND.format(cls="PluginBackend", device_type=name.split("_")[0], extra=""))
               for name in ("solo", "twin_a", "twin_b")}
    module, source = plugins[slow]
    plugins[slow] = (module, f"import time\ntime.sleep(1)\n{source}")  # long after the 0.3 s notice
    result = _probe(_install(tmp_path, plugins, timeout_s=30), _LIVE_REPORT_PROBE)
    assert len(result["waiting"]) == 1 and slow in result["waiting"][0]  # it arrived after the others registered
    refusal = ("claims device type 'twin', which plugin 'twin_a' (twin_a_plugin) already provides; "
               "uninstall one of the two")
    assert result["status"]["twin_b"] == f"unavailable: plugin failed to register: {refusal}"
    assert result["shown"] == result["status"] and result["twin"] == "twin_a_plugin"
    assert [name for name in result["registered"] if name in ("solo", "twin")] == ["solo", "twin"]
    assert result["warnings"] == [f"ember: backend plugin 'twin_b' failed to register: {refusal}"]
