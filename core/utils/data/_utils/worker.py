"""``ember.utils.data._utils.worker``: where PyTorch programs import ``get_worker_info`` from."""
from ..worker import WorkerInfo, get_worker_info

__all__ = ["WorkerInfo", "get_worker_info"]
