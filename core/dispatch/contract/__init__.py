"""The backend contract: what a backend is and how one is found for a device type.

``backend`` (the ``Backend`` base class, declaring every attribute a backend may set), ``hookspecs``
(the pluggy hooks and ``backend_hooks``), ``plugins`` (entry-point discovery and registration),
``registry`` (device type -> available backend, device specs resolved), ``flags`` (the user's numerics
switches backends read), ``device_runtime`` and ``inflight`` (the bases of a device's streams and of
keeping buffers alive until the device is done) and ``host`` (host-array helpers).

Kept together because it is one interface, versioned as one (``PLUGIN_API_VERSION``). Backends do not import
this room: ``ember.dispatch``'s top level re-exports all of it (``tests/test_backend_contract.py``).
"""
