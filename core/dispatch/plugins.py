"""Discovers backend plugins through entry points and keeps one Backend per device type.

It sits below ``device`` (which rejects device types no plugin provides) and ``registry`` (which
hands out available backends and resolves devices), and imports neither.
"""
from __future__ import annotations

import warnings
from importlib.metadata import entry_points

import pluggy

from .backend import Backend
from .hookspecs import PLUGIN_API_VERSION, PROJECT, BackendHookSpecs

ENTRY_POINT_GROUP = "ember.backends"
_BUNDLED = "ember.backends."  # the modules of the backends that ship with Ember

_manager = pluggy.PluginManager(PROJECT)
_manager.add_hookspecs(BackendHookSpecs)
_backends: dict[str, Backend] = {}
_providers: dict[str, str] = {}  # device type -> name of the plugin that registered it
_failures: dict[str, str] = {}
_discovered = False


def _warn(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=3)


def register_plugin(plugin, name: str | None = None) -> Backend | None:
    """Register one plugin (a module or object with hookimpls). Returns its backend, or None on failure.

    Installed plugins are discovered first, so they keep their device types.
    """
    discover()
    return _register(plugin, name)


def _register(plugin, name: str | None) -> Backend | None:
    name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
    try:
        _manager.register(plugin, name=name)
    except Exception as exc:  # a broken plugin must not break the others
        _failures[name] = f"failed to register: {type(exc).__name__}: {exc}"
        _warn(f"ember: backend plugin {name!r} {_failures[name]}")
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
    except Exception as exc:
        _manager.unregister(plugin)
        _failures[name] = f"failed to register: {exc}"
        _warn(f"ember: backend plugin {name!r} {_failures[name]}")
        return None
    _backends[backend.device_type] = backend
    _providers[backend.device_type] = name
    return backend


def discover() -> None:
    """Load every plugin of the ``ember.backends`` entry-point group, once."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    # Ember's own backends first, so that no plugin can take their device types; the rest by name.
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: (not e.value.startswith(_BUNDLED), e.name)):
        try:
            plugin = ep.load()
        except Exception as exc:
            _failures[ep.name] = f"failed to import ({ep.value}): {type(exc).__name__}: {exc}"
            _warn(f"ember: backend plugin {ep.name!r} {_failures[ep.name]}")
            continue
        _register(plugin, ep.name)


def backends() -> dict[str, Backend]:
    discover()
    return _backends


def available() -> dict[str, str]:
    """Each known backend (and failed plugin) with its status: "available" or "unavailable: why"."""
    discover()
    report = {}
    for name, backend in sorted(_backends.items()):
        reason = backend.unavailable_reason()
        report[name] = "available" if reason is None else f"unavailable: {reason}"
    for name, failure in sorted(_failures.items()):
        report.setdefault(name, f"unavailable: plugin {failure}")
    return report
