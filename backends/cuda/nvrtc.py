"""CUDA C compiled by NVRTC through ctypes, without CuPy and without a GPU: how CI checks kernel sources.

NVRTC is a library (pip: ``nvidia-cuda-nvrtc``), so it compiles on any machine, driver or not; CuPy's own
compile path needs a driver, which CI lacks. The headers kernels see at run time come from the wheels the
``nvrtc`` extra installs: CuPy's (``cupy/_core/include``, its CCCL copy under it) and the CUDA runtime's
(``nvidia/cu13/include``). They are found on ``sys.path`` without importing CuPy.
"""
from __future__ import annotations

import ctypes
import functools
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

#: the extra that installs what this module needs
EXTRA = "pip install 'ember[nvrtc]' (cupy-cuda13x, nvidia-cuda-nvrtc, nvidia-cuda-runtime)"


class NvrtcUnavailable(RuntimeError):
    """NVRTC or the headers kernels include are not installed here."""


class CompileError(RuntimeError):
    """NVRTC rejected a source; ``log`` is its compiler output."""

    def __init__(self, label: str, arch: str, log: str) -> None:
        super().__init__(f"{label} does not compile for {arch}:\n{log}")
        self.label, self.arch, self.log = label, arch, log


@dataclass(frozen=True)
class Toolchain:
    """The loaded NVRTC library and the include directories a kernel source is compiled against."""

    library: ctypes.CDLL
    include_dirs: tuple[str, ...]

    def compile(self, code: str, arch: str, options: Sequence[str] = (), label: str = "source") -> str:
        """Compile ``code`` for ``arch`` (``sm_90``: to machine code, ``compute_90``: to PTX); NVRTC's log
        (warnings) on success, CompileError with the log otherwise."""
        lib = self.library
        program = ctypes.c_void_p()
        name = f"{label}.cu".encode()
        self._check(lib.nvrtcCreateProgram(ctypes.byref(program), code.encode(), name, 0, None, None),
                    "nvrtcCreateProgram")
        try:
            flags = [f"-arch={arch}", *options, *(f"-I{d}" for d in self.include_dirs)]
            argv = (ctypes.c_char_p * len(flags))(*(f.encode() for f in flags))
            status = lib.nvrtcCompileProgram(program, len(flags), argv)
            log = self._log(program)
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(program))
        if status != 0:
            raise CompileError(label, arch, f"{self._error(status)}\n{log}".rstrip())
        return log

    def _log(self, program: ctypes.c_void_p) -> str:
        size = ctypes.c_size_t()
        self._check(self.library.nvrtcGetProgramLogSize(program, ctypes.byref(size)), "nvrtcGetProgramLogSize")
        buffer = ctypes.create_string_buffer(size.value)
        self._check(self.library.nvrtcGetProgramLog(program, buffer), "nvrtcGetProgramLog")
        return buffer.value.decode(errors="replace")

    def _error(self, status: int) -> str:
        return self.library.nvrtcGetErrorString(status).decode()

    def _check(self, status: int, call: str) -> None:
        if status != 0:
            raise RuntimeError(f"{call} failed: {self._error(status)}")


def _package_dirs(name: str) -> list[Path]:
    """Where the (possibly namespace) package ``name`` is installed, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    return [Path(p) for p in (spec.submodule_search_locations or [])] if spec is not None else []


def _find_library() -> Path:
    """libnvrtc from the nvidia wheels (CUDA 13 layout ``nvidia/cu13/lib``, CUDA 12 ``nvidia/cuda_nvrtc/lib``)."""
    for root in _package_dirs("nvidia"):
        for pattern in ("cu*/lib/libnvrtc.so.*", "cuda_nvrtc/lib/libnvrtc.so.*"):
            found = sorted(p for p in root.glob(pattern) if "builtins" not in p.name)
            if found:
                return found[-1]
    raise NvrtcUnavailable(f"NVRTC is not installed (no libnvrtc in the nvidia wheels on sys.path); {EXTRA}")


def _find_headers() -> tuple[str, ...]:
    """CuPy's header directory and the CUDA runtime wheel's (cuda_fp16.h), as CuPy passes them to NVRTC."""
    cupy = next((d / "_core" / "include" for d in _package_dirs("cupy") if (d / "_core" / "include").is_dir()), None)
    if cupy is None:
        raise NvrtcUnavailable(f"CuPy's kernel headers are not installed (no cupy/_core/include); {EXTRA}")
    cuda = next((p.parent for root in _package_dirs("nvidia") for p in sorted(root.glob("*/include/cuda_fp16.h"))),
                None)
    if cuda is None:
        raise NvrtcUnavailable(f"the CUDA runtime headers are not installed (no nvidia/*/include/cuda_fp16.h); {EXTRA}")
    cccl = cupy / "cupy" / "_cccl"
    # CuPy searches its bundled CCCL first (thrust and libcu++ headers that carray.cuh includes)
    return (*(str(cccl / part) for part in ("cub", "thrust", "libcudacxx")), str(cupy), str(cuda))


@functools.lru_cache(maxsize=1)
def toolchain() -> Toolchain:
    """The NVRTC toolchain of this environment; NvrtcUnavailable says what is missing."""
    if not sys.platform.startswith("linux"):
        raise NvrtcUnavailable(f"the NVRTC check runs on Linux only (this is {sys.platform})")
    path = _find_library()
    try:
        library = ctypes.CDLL(str(path))
    except OSError as exc:
        raise NvrtcUnavailable(f"{path} could not be loaded ({exc})") from None
    library.nvrtcGetErrorString.restype = ctypes.c_char_p
    return Toolchain(library, _find_headers())


def unavailable_reason() -> str | None:
    """None when sources can be compiled here, else why not (what to install)."""
    try:
        toolchain()
    except NvrtcUnavailable as exc:
        return str(exc)
    return None


__all__ = ["CompileError", "EXTRA", "NvrtcUnavailable", "Toolchain", "toolchain", "unavailable_reason"]
