"""``Backend``: the names programs pass to ``init_process_group`` and the engine each one runs on.

Ember runs collectives on two established engines: MPI (mpi4py) for host-reachable tensors (cpu, and
opencl through host copies) and NCCL (CuPy) for cuda tensors. ``"gloo"``, PyTorch's CPU backend, runs on
the MPI engine, so programs written for it work unchanged.
"""
from __future__ import annotations

ENGINE_OF = {"mpi": "mpi", "gloo": "mpi", "nccl": "nccl"}  # backend name -> engine that runs it
DEVICES_OF = {"mpi": ("cpu", "opencl"), "nccl": ("cuda",)}  # engine -> device types it serves


class Backend(str):
    """A validated, lower-case backend name: ``Backend("GLOO") == "gloo"``.

    Also accepts PyTorch's per-device form, ``"cpu:gloo,cuda:nccl"``, which is what ``backend=None`` means.
    """

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"
    backend_list = [UNDEFINED, GLOO, NCCL, MPI]
    default_device_backend_map = {"cpu": GLOO, "cuda": NCCL}
    backend_capability = {GLOO: ["cpu", "opencl"], MPI: ["cpu", "opencl"], NCCL: ["cuda"]}

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend: name must be a string, got {type(name).__name__}")
        value = name.lower()
        if value != Backend.UNDEFINED:
            device_backend_map(value)  # validates
        return super().__new__(cls, value)


def device_backend_map(name: str) -> dict[str, str]:
    """``"gloo"`` -> ``{"cpu": "gloo", "opencl": "gloo"}``; ``"cpu:gloo,cuda:nccl"`` -> as written."""
    if ":" not in name:
        _check_known(name)
        return {device: name for device in Backend.backend_capability[name]}
    mapping: dict[str, str] = {}
    for part in name.split(","):
        device, _, backend = part.partition(":")
        device, backend = device.strip(), backend.strip()
        _check_known(backend)
        mapping[device] = backend
        if device == "cpu" and backend in ("gloo", "mpi"):
            mapping.setdefault("opencl", backend)  # opencl tensors travel through host memory
    return mapping


def default_backend_string() -> str:
    return ",".join(f"{d}:{b}" for d, b in Backend.default_device_backend_map.items())


def _check_known(name: str) -> None:
    if name not in ENGINE_OF:
        raise ValueError(f"init_process_group: unknown backend {name!r}; Ember provides 'mpi', 'gloo' "
                         f"(runs on MPI) and 'nccl', or a per-device form such as 'cpu:gloo,cuda:nccl'")
