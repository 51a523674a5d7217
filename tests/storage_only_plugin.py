"""A pytest plugin for ``tests/test_storage_only_dtypes.py``: the cpu backend holds bfloat16 as CUDA's does,
as a storage-only dtype whose kernel calls compute in float32 (``ember.dispatch.execution.storage_dtypes``)."""
from ember.dispatch import bfloat16, clear_plans, registry


def pytest_configure(config):
    backend = registry.get_backend("cpu")
    backend.storage_only_dtypes = lambda index: frozenset({bfloat16})
    clear_plans()
