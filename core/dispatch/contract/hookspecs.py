"""The backend plugin contract, as pluggy hook specifications (project name ``ember``).

A backend plugin is any module or object, found through the entry-point group
``ember.backends``, that implements these hooks with ``@ember.dispatch.hookimpl``.
pluggy is used only to discover and register plugins; per-op calls never pass through it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import pluggy

if TYPE_CHECKING:
    from .backend import Backend

PROJECT = "ember"
PLUGIN_API_VERSION = 1

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class BackendHookSpecs:
    @hookspec
    def ember_plugin_api_version(self) -> int:
        """The Ember plugin API version this plugin targets (``PLUGIN_API_VERSION``)."""

    @hookspec
    def ember_register_backend(self):
        """Return the :class:`ember.dispatch.Backend` instance this plugin provides."""


def backend_hooks(make_backend: Callable[[], Backend]) -> tuple[Callable[[], int], Callable[[], Backend]]:
    """The two hook implementations of a plugin providing ``make_backend()`` (say, a Backend subclass).

    pluggy finds hooks by attribute name, so a plugin module binds them at its top level::

        ember_plugin_api_version, ember_register_backend = backend_hooks(MyBackend)
    """
    @hookimpl
    def ember_plugin_api_version() -> int:
        return PLUGIN_API_VERSION

    @hookimpl
    def ember_register_backend() -> Backend:
        return make_backend()

    return ember_plugin_api_version, ember_register_backend
