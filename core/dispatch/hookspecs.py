"""The backend plugin contract, as pluggy hook specifications (project name ``ember``).

A backend plugin is any module or object, found through the entry-point group
``ember.backends``, that implements these hooks with ``@ember.dispatch.hookimpl``.
pluggy is used only to discover and register plugins; per-op calls never pass through it.
"""
from __future__ import annotations

import pluggy

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
