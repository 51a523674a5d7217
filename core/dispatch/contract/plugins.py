"""Discovers backend plugins through entry points and keeps one Backend per device type.

Plugins load lazily. Ember's own (bundled) backends register together on first use of any device: their
modules import no device library, so this is cheap, and it keeps their device types theirs. A third-party
plugin is imported only when its device type is first asked for (or by ``available()``/``backends()``), in a
daemon thread with a time limit (``EMBER_PLUGIN_IMPORT_TIMEOUT`` seconds), so that a plugin that hangs, exits
or raises at import is reported and skipped while Ember stays usable. Plugins imported together import at once
(``plugin_imports``), so several hanging ones cost one timeout; they still register in entry-point order.

It sits below ``device`` (which rejects device types no plugin provides) and ``registry`` (which
hands out available backends and resolves devices), and imports neither.
"""
from __future__ import annotations

import threading
import warnings
from importlib.metadata import EntryPoint, entry_points
from typing import Callable

import pluggy

from .backend import Backend
from .hookspecs import PLUGIN_API_VERSION, PROJECT, BackendHookSpecs
from .plugin_imports import Imported, describe, import_all, import_failure, import_timeout

ENTRY_POINT_GROUP = "ember.backends"
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


def _register(plugin, name: str | None, rank: dict[str, int] | None = None) -> Backend | None:
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
        if owner is not None and not _takes_over(name, owner, rank):
            raise RuntimeError(_claim_refusal(backend.device_type, owner, _backends[backend.device_type]))
    except (Exception, SystemExit) as exc:  # a hook calling sys.exit() is a broken plugin, not a request to quit
        _manager.unregister(plugin)
        _fail(name, f"failed to register: {exc if isinstance(exc, RuntimeError) else describe(exc)}")
        return None
    if owner is not None:  # it arrived after a later-named plugin that took its device type
        _manager.unregister(name=owner)
        _broken.pop(backend.device_type, None)
        _fail(owner, f"failed to register: {_claim_refusal(backend.device_type, name, backend)}")
    _backends[backend.device_type] = backend
    _providers[backend.device_type] = name
    for listener in _listeners:
        listener(backend)
    return backend


def _claim_refusal(device_type: str, owner: str, owner_backend: Backend) -> str:
    return (f"claims device type {device_type!r}, which plugin {owner!r} ({type(owner_backend).__module__}) "
            f"already provides; uninstall one of the two")


def _takes_over(name: str, owner: str, rank: dict[str, int] | None) -> bool:
    """Whether plugin ``name`` takes its device type from ``owner``: only within one concurrent import (``rank``:
    entry-point order), from a later-named plugin that arrived first, so the first by name keeps it whatever
    the timing, as when plugins load one by one."""
    return rank is not None and owner in rank and rank[name] < rank[owner]


def _load_bundled(ep: EntryPoint) -> None:
    try:
        plugin = ep.load()
    except Exception as exc:
        _fail(ep.name, import_failure(ep, exc))
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
            _load_bundled(ep)


def _ignore(*_) -> None:
    pass


def _load_pending(names: list[str], on_settled: Callable[[list[str]], None] = _ignore,
                  on_waiting: Callable[[list[str], float], None] = _ignore, notice_after: float | None = None) -> None:
    """Imports the named pending plugins all at once (see ``plugin_imports``) and registers them.

    Outcomes are held and registered together, in entry-point order, until all are in or ``notice_after`` seconds
    have passed (then ``on_waiting`` gets the names still importing and the time limit); after that each registers
    as it arrives, for a live report. Either way the registry ends as if the plugins had loaded one by one in
    entry-point order. ``on_settled`` gets the names whose status changed: at the first settling, all the names
    ``available()`` lists.
    """
    with _lock:
        eps = sorted((ep for name in names if (ep := _pending.pop(name, None)) is not None), key=lambda e: e.name)
        rank = {ep.name: index for index, ep in enumerate(eps)}
        held: list[Imported] | None = []
        timeout = import_timeout()
        for event in import_all(eps, timeout, notice_after):
            if held is None:
                on_settled(_settle([event], rank))
            elif isinstance(event, Imported):
                held.append(event)
            else:  # told first: settling may ask backends for their status, which takes time
                on_waiting(list(event.names), timeout)
                _settle_held(held, rank, on_settled)
                held = None  # from now on, each registers as it arrives
        if held is not None:
            _settle_held(held, rank, on_settled)
        _order_registry(rank)


def _settle_held(held: list[Imported], rank: dict[str, int], on_settled: Callable[[list[str]], None]) -> None:
    _settle(held, rank)
    on_settled(_listing_names())


def _settle(outcomes: list[Imported], rank: dict[str, int]) -> list[str]:
    """Registers each imported plugin (or records why it failed) in entry-point order; returns the names whose
    status this changed (device types registered, plugins failed)."""
    failed_before = set(_failures)
    registered = []
    for outcome in sorted(outcomes, key=lambda outcome: rank[outcome.entry_point.name]):
        name = outcome.entry_point.name
        if outcome.failure is not None:
            _fail(name, outcome.failure)
        elif (backend := _register(outcome.plugin, name, rank)) is not None:
            registered.append(backend.device_type)
    return registered + sorted(set(_failures) - failed_before)


def _order_registry(rank: dict[str, int]) -> None:
    """Puts the backends of one concurrent import in entry-point order, as if they had registered one by one."""
    ours = sorted((device for device, name in _providers.items() if name in rank), key=lambda d: rank[_providers[d]])
    for device_type in ours:
        _backends[device_type] = _backends.pop(device_type)
        _providers[device_type] = _providers.pop(device_type)


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
        _broken[device_type] = f"plugin {_providers[device_type]!r}: unavailable_reason() raised {describe(exc)}"
        _warn(f"ember: backend {device_type!r}: {_broken[device_type]}")
        return _broken[device_type]


def status(name: str) -> str | None:
    """``available()``'s line for one device type or failed plugin, or None where nothing has that name."""
    if backend_for(name) is not None:
        reason = unavailable_reason(name)
        return "available" if reason is None else f"unavailable: {reason}"
    failure = _failures.get(name)
    return None if failure is None else f"unavailable: plugin {failure}"


def _listing_names() -> list[str]:
    return sorted(_backends) + sorted(set(_failures) - set(_backends))


def available() -> dict[str, str]:
    """Each known backend (and failed plugin) with its status: "available" or "unavailable: why"."""
    backends()
    return {name: status(name) for name in _listing_names()}


def report_statuses(on_status: Callable[[str, str], None], on_waiting: Callable[[list[str], float], None],
                    notice_after: float = 1.0) -> dict[str, str]:
    """``available()``, told as it comes (for ``python -m ember.backends``): ``on_status(name, status)`` for each
    backend and failed plugin as its plugin's import finishes, again only if its status changes, and
    ``on_waiting(plugin_names, timeout_s)`` once if plugins are still importing ``notice_after`` seconds in."""
    shown: dict[str, str] = {}

    def show(names: list[str]) -> None:
        for name in names:
            line = status(name)
            if line is not None and shown.get(name) != line:
                shown[name] = line
                on_status(name, line)

    discover()
    _load_pending(list(_pending), show, on_waiting, notice_after)
    return {name: shown[name] for name in _listing_names()}
