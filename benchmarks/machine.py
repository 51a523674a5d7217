"""What the numbers were measured on: CPU, cores, memory, load, versions and thread settings.

Ratios only mean something next to the machine and the thread counts behind them, and the
benchmark machine is shared, so the load average is recorded at the start and at the end.
"""
from __future__ import annotations

import os
import platform
from types import ModuleType

import numpy as np


def cpu_model() -> str:
    """The CPU's marketing name from /proc/cpuinfo (Linux), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_gib() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 2 ** 20
    except OSError:
        pass
    return None


def cores() -> str:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{os.cpu_count()} logical cores ({usable} usable by this process)"


def load_average() -> str:
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def describe() -> str:
    mem = memory_gib()
    return f"{cpu_model()}, {cores()}, {mem:.1f} GiB memory" if mem else f"{cpu_model()}, {cores()}"


def _numpy_blas() -> str:
    """NumPy's BLAS and the number of threads it runs, which is all the threading Ember's CPU backend has."""
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        name = f"{blas.get('name', 'BLAS')} {blas.get('version', '')}".strip()
    except Exception:  # show_config's layout is not a stable API
        name = "BLAS"
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        env = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
        threads = env or f"default (all {os.cpu_count()} cores; install threadpoolctl to confirm)"
        return f"{name}, threads: {threads}"
    numpy_dir = os.path.dirname(os.path.dirname(np.__file__))
    pools = [p for p in threadpool_info() if p["user_api"] == "blas" and p["filepath"].startswith(numpy_dir)
             and "numpy" in p["filepath"]]
    threads = ", ".join(str(p["num_threads"]) for p in pools) or "unknown"
    return f"{name}, {threads} threads ({pools[0]['threading_layer'] if pools else 'threadpoolctl'})"


def ember_commit() -> str:
    """The checkout's commit, and whether the working tree differs from it (read-only git plumbing).

    Several engineers change Ember at once, so a result is only reproducible with the code it measured.
    """
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "diff-index", "--quiet", "HEAD", "--"], cwd=root).returncode != 0
    except (OSError, subprocess.CalledProcessError):
        return "unknown commit"
    return f"commit {head}" + (" with uncommitted changes" if dirty else "")


def versions(torch: ModuleType | None) -> str:
    import ember
    parts = [f"Python {platform.python_version()}", f"Ember {ember.__version__} ({ember_commit()})",
             f"NumPy {np.__version__}"]
    parts.append(f"PyTorch {torch.__version__}" if torch else "PyTorch not installed")
    return ", ".join(parts)


def threading(torch: ModuleType | None) -> str:
    ember_part = (f"Ember runs ops on the calling Python thread; its CPU kernels are NumPy, whose BLAS "
                  f"(matmul, conv via matmul) is {_numpy_blas()}.")
    if torch is None:
        return ember_part
    return (f"{ember_part} PyTorch: {torch.get_num_threads()} intra-op threads by default "
            f"(torch.get_num_threads()). In the training table, 'PyTorch 1 thread' runs under "
            f"torch.set_num_threads(1) and 'Ember 1 thread' under threadpoolctl's limit of NumPy's BLAS to 1 thread.")
