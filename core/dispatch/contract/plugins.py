"""Discovers backend plugins through entry points and keeps one Backend per device type.

Plugins load lazily. Ember's own (bundled) backends register together on first use of any device: their
modules import no device library, so this is cheap, and it keeps their device types theirs. A third-party
plugin is imported only when its device type is first asked for (or by ``available()``/``backends()``), in a
daemon thread with a time limit (``EMBER_PLUGIN_IMPORT_TIMEOUT`` seconds), so that a plugin that hangs, exits
or raises at import is reported and skipped while Ember stays usable.

It sits below ``device`` (which rejects device types no plugin provides) and ``registry`` (which
hands out available backends and resolves devices), and imports neither.
"""
from __future__ import annotations

import os
import threading
import warnings
from importlib.metadata import EntryPoint, entry_points
from typing import Callable

import pluggy

from .backend import Backend
from .hookspecs import PLUGIN_API_VERSION, PROJECT, BackendHookSpecs

ENTRY_POINT_GROUP = "ember.backends"
TIMEOUT_ENV_VAR = "EMBER_PLUGIN_IMPORT_TIMEOUT"
DEFAULT_IMPORT_TIMEOUT = 30.0  # seconds; generous, as a plugin may import a large array library
_BUNDLED = "ember.backends."  # the modules of the backends that ship with Ember

_manager = pluggy.PluginManager(PROJECT)
_manager.add_hookspecs(BackendHookSpecs)
_backends: dict[str, Backend] = {}
_providers: dict[str, str] = {}  # device type -> name of the plugin that registered it
_failures: dict[str, str] = {}  # plugin name -> why it was skipped
_broken: dict[str, str] = {}  # device type -> why its unavailable_reason() could not be asked
_pending: dict[str, EntryPoint] | None = None  # third-party entry points not imported yet, by name
_listeners: list[Callable[[Backend], None]] = []
_lock = threading.RLock()


def _warn(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=3)


def _fail(name: str, failure: str) -> None:
    _failures[name] = failure
    _warn(f"ember: backend plugin {name!r} {failure}")


def register_plugin(plugin, name: str | None = None) -> Backend | None:
    """Register one plugin (a module or object with hookimpls). Returns its backend, or None on failure.

    Installed plugins are discovered first, so they keep their device types.
    """
    discover()
    with _lock:
        return _register(plugin, name)


def on_backend_registered(listener: Callable[[Backend], None]) -> None:
    """Call ``listener(backend)`` for every backend registered from now on (e.g. to seed a lazily loaded one)."""
    _listeners.append(listener)


def _register(plugin, name: str | None) -> Backend | None:
    name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
    try:
        _manager.register(plugin, name=name)
    except Exception as exc:  # a broken plugin must not break the others
        _fail(name, f"failed to register: {type(exc).__name__}: {exc}")
        return None
    try:
        version_impls = [i for i in _manager.hook.ember_plugin_api_version.get_hookimpls() if i.plugin is plugin]
        if not version_impls:
            raise RuntimeError(f"does not say which plugin API version it targets: implement "
                               f"ember_plugin_api_version() (this Ember speaks version {PLUGIN_API_VERSION})")
        version = version_impls[0].function()
        if version != PLUGIN_API_VERSION:
            raise RuntimeError(f"targets plugin API version {version}, but this Ember speaks version "
                               f"{PLUGIN_API_VERSION}")
        impls = [i for i in _manager.hook.ember_register_backend.get_hookimpls() if i.plugin is plugin]
        if len(impls) != 1:
            raise RuntimeError("must implement ember_register_backend exactly once")
        backend = impls[0].function()
        if not isinstance(backend, Backend) or not backend.device_type:
            raise RuntimeError("ember_register_backend must return a Backend with a device_type")
        owner = _providers.get(backend.device_type)
        if owner is not None:
            raise RuntimeError(f"claims device type {backend.device_type!r}, which plugin {owner!r} "
                               f"({type(_backends[backend.device_type]).__module__}) already provides; "
                               f"uninstall one of the two")
    except (Exception, SystemExit) as exc:  # a hook calling sys.exit() is a broken plugin, not a request to quit
        _manager.unregister(plugin)
        _fail(name, f"failed to register: {exc if isinstance(exc, RuntimeError) else _describe(exc)}")
        return None
    _backends[backend.device_type] = backend
    _providers[backend.device_type] = name
    for listener in _listeners:
        listener(backend)
    return backend


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def import_timeout() -> float:
    """Seconds a third-party plugin may take to import before it is abandoned."""
    try:
        return float(os.environ.get(TIMEOUT_ENV_VAR, DEFAULT_IMPORT_TIMEOUT))
    except ValueError:
        return DEFAULT_IMPORT_TIMEOUT


def _import_guarded(ep: EntryPoint):
    """``ep.load()`` in a daemon thread: (plugin, None), or (None, why) after any exception or the timeout.

    A thread that hangs stays blocked in the background; the plugin is abandoned, never retried.
    """
    outcome: dict = {}

    def load() -> None:
        try:
            outcome["plugin"] = ep.load()
        except BaseException as exc:  # SystemExit and KeyboardInterrupt too: a plugin cannot end the process
            outcome["error"] = exc

    timeout = import_timeout()
    thread = threading.Thread(target=load, name=f"ember-plugin-import-{ep.name}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        return None, (f"did not finish importing ({ep.value}) within {timeout:g} s and was abandoned "
                      f"(set {TIMEOUT_ENV_VAR} to wait longer)")
    if "error" in outcome:
        return None, f"failed to import ({ep.value}): {_describe(outcome['error'])}"
    return outcome["plugin"], None


def _load(ep: EntryPoint) -> None:
    if ep.value.startswith(_BUNDLED):
        try:
            plugin, failure = ep.load(), None
        except Exception as exc:
            plugin, failure = None, f"failed to import ({ep.value}): {_describe(exc)}"
    else:
        plugin, failure = _import_guarded(ep)
    if failure is not None:
        _fail(ep.name, failure)
    else:
        _register(plugin, ep.name)


def discover() -> None:
    """Find the ``ember.backends`` entry points and register Ember's own backends, once.

    Third-party plugins wait in ``_pending`` until their device type is asked for.
    """
    global _pending
    if _pending is not None:
        return
    with _lock:
        if _pending is not None:
            return
        found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
        bundled = [ep for ep in found if ep.value.startswith(_BUNDLED)]
        _pending = {ep.name: ep for ep in found if not ep.value.startswith(_BUNDLED)}
        for ep in bundled:
            _load(ep)


def _load_pending(names) -> None:
    with _lock:
        for name in names:
            ep = _pending.pop(name, None)
            if ep is not None:
                _load(ep)


def backend_for(device_type: str) -> Backend | None:
    """The backend registered for ``device_type``, importing plugins only as needed; None if none provides it.

    A plugin whose entry point is named after the device type is tried first; failing that, all the rest.
    """
    backend = _backends.get(device_type)
    if backend is not None:
        return backend
    discover()
    if device_type not in _backends and _pending:
        _load_pending([device_type])
    if device_type not in _backends and _pending:
        _load_pending(list(_pending))
    return _backends.get(device_type)


def why_unknown(device_type: str) -> str:
    """What to tell a user whose device type no plugin provides: the registered types, and the failure of a
    plugin of that name if it broke (e.g. it hung at import)."""
    text = f"registered backends: {', '.join(sorted(backends())) or 'none'}"
    failure = _failures.get(device_type)
    return text if failure is None else f"{text}; plugin {device_type!r} {failure}"


def known_device_types() -> set[str]:
    """The device types registered so far and the names of the plugins not imported yet (a plugin is usually
    named after its device type), importing nothing: what a name given for a device type is checked against
    while a plugin may still be importing (``ember.library.register_kernel`` inside a plugin's module)."""
    discover()
    return set(_backends) | set(_pending or ()) | set(_failures)


def loaded() -> dict[str, Backend]:
    """The backends registered so far, importing nothing (for acting on every backend in use)."""
    discover()
    return _backends


def backends() -> dict[str, Backend]:
    """Every registered backend by device type, after importing every installed plugin."""
    discover()
    if _pending:
        _load_pending(list(_pending))
    return _backends


def unavailable_reason(device_type: str) -> str | None:
    """Why ``device_type`` cannot run here (None if it can): the backend's own reason, the plugin's failure,
    or what its ``unavailable_reason()`` raised (remembered: such a backend is skipped from then on)."""
    backend = backend_for(device_type)
    if backend is None:
        return f"no backend plugin provides device type {device_type!r}"
    broken = _broken.get(device_type)
    if broken is not None:
        return broken
    try:
        return backend.unavailable_reason()
    except (Exception, SystemExit) as exc:
        _broken[device_type] = f"plugin {_providers[device_type]!r}: unavailable_reason() raised {_describe(exc)}"
        _warn(f"ember: backend {device_type!r}: {_broken[device_type]}")
        return _broken[device_type]


def status(name: str) -> str | None:
    """``available()``'s line for one device type or failed plugin, or None where nothing has that name."""
    if backend_for(name) is not None:
        reason = unavailable_reason(name)
        return "available" if reason is None else f"unavailable: {reason}"
    failure = _failures.get(name)
    return None if failure is None else f"unavailable: plugin {failure}"


def available() -> dict[str, str]:
    """Each known backend (and failed plugin) with its status: "available" or "unavailable: why"."""
    names = sorted(backends()) + sorted(set(_failures) - set(_backends))
    return {name: status(name) for name in names}
