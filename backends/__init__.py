"""``ember.backends``: the bundled backend plugins, and the registry's public face."""
from ember.dispatch.fallback import get_fallback, set_fallback
from ember.dispatch.registry import available, backends as registered, register_plugin

__all__ = ["available", "registered", "register_plugin", "set_fallback", "get_fallback"]
