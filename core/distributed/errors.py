"""``torch.distributed``'s exception types, rooted in Ember's ``EmberError`` (a ``RuntimeError``)."""
from __future__ import annotations

from ..dispatch.schema.errors import EmberError


class DistError(EmberError):
    """An error in the distributed package."""


class DistBackendError(DistError):
    """A collective failed or timed out in the communication engine (a dead or missing peer)."""


class DistNetworkError(DistError):
    """The rendezvous could not be reached or does not describe this job."""


class DistStoreError(DistError):
    """A key-value store operation failed."""
