"""``ProcessGroup``: a set of ranks, the engines that serve each device type for them, and their timeout."""
from __future__ import annotations

import threading
from datetime import timedelta

from ..dispatch.schema.errors import DeviceError
from .backend import ENGINE_OF
from .errors import DistBackendError, DistError


class ProcessGroup:
    """One communicator. Ranks come from MPI; ``device_backends`` maps device types to backend names."""

    def __init__(self, backend: str, device_backends: dict[str, str], mpi, ranks: list[int],
                 timeout: timedelta, name: str, device_id=None):
        self.backend = backend
        self.device_backends = device_backends
        self.mpi = mpi  # the MPI engine: every group has one (it bootstraps NCCL and carries objects)
        self.ranks = ranks  # global ranks, in group-rank order
        self.timeout = timeout
        self.group_name = name
        self.device_id = device_id
        self.issue_lock = threading.Lock()  # one issue order per process: MPI matches collectives by order
        self._engines = {"mpi": mpi}
        self._failure: DistBackendError | None = None

    def rank(self) -> int:
        return self.mpi.rank

    def size(self) -> int:
        return self.mpi.size

    def name(self) -> str:
        return self.backend

    def engine_for(self, device, op_name: str):
        """The engine for tensors on ``device``, or a DeviceError naming the backend and the device."""
        backend = self.device_backends.get(device.type)
        if backend is None:
            served = ", ".join(sorted(self.device_backends)) or "no device"
            hint = " use backend='nccl' (or 'cpu:gloo,cuda:nccl') for cuda tensors;" if device.type == "cuda" else ""
            raise DeviceError(f"{op_name}: the process group's backend {self.backend!r} cannot serve a tensor on "
                              f"{device} (it serves {served});{hint} or move the tensor to a device it serves")
        engine_name = ENGINE_OF[backend]
        engine = self._engines.get(engine_name)
        if engine is None:
            engine = self._engines[engine_name] = self._make_engine(engine_name, op_name)
        return engine

    def check_usable(self, op_name: str) -> None:
        if self._failure is not None:
            raise DistBackendError(f"{op_name}: the process group can no longer be used, since an earlier "
                                   f"collective failed: {self._failure}")

    def timed_out(self, op_name: str, by_group_timeout: bool, wait_timeout) -> DistBackendError:
        """The error for ``op_name`` running past its deadline; a group timeout also poisons the group
        (its communicator holds an operation a dead peer will never complete)."""
        limit = f"the process group's timeout of {self.timeout.total_seconds():g} s" if by_group_timeout \
            else f"wait(timeout={wait_timeout})"
        error = DistBackendError(
            f"{op_name}: rank {self.rank()} of {self.size()} (global rank {self.ranks[self.rank()]}, backend "
            f"{self.backend!r}) timed out after {limit} waiting for its peers; a peer rank may have died, "
            f"exited, or not called {op_name}. Set init_process_group(timeout=...) or EMBER_DIST_TIMEOUT "
            f"(seconds) to change the limit.")
        if by_group_timeout:
            self._failure = error
        return error

    def close(self) -> None:
        for engine in self._engines.values():
            engine.close()
        self._engines.clear()

    def _make_engine(self, engine_name: str, op_name: str):
        if engine_name == "nccl":
            from .engines.nccl import NCCLEngine, nccl_unavailable_reason
            reason = nccl_unavailable_reason()
            if reason is not None:
                raise DistError(f"{op_name}: backend 'nccl' is not available here: {reason}")
            return NCCLEngine(self.mpi, self.device_id)
        raise DistError(f"{op_name}: no engine named {engine_name!r}")  # pragma: no cover - ENGINE_OF is closed

    def __repr__(self) -> str:
        return f"ProcessGroup(backend={self.backend!r}, ranks={self.ranks}, rank={self.rank()})"
