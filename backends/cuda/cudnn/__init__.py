"""cuDNN for the cuda backend, through NVIDIA's ``nvidia-cudnn-frontend`` (import name ``cudnn``): convolution
forward, data gradient and weight gradient as overrides of ``conv{1,2,3}d``, ``conv_transpose{1,2,3}d`` and
``convolution_backward_weight``; fused attention (SDPA) forward and backward as overrides of
``_scaled_dot_product_fused_attention`` and its backward (``attention``).

CuPy 14 dropped its cuDNN bindings; the frontend's graph API takes device pointers and a stream, so it works on
CuPy arrays directly. Where the package or libcudnn is missing, ``overrides`` installs nothing and the shared
im2col kernels run as before. Where cuDNN is there but refuses a configuration (a dtype it lacks, a shape no
engine supports), that configuration takes the fallback, decided once per key (``graphs.Planner``).

Layout: ``specs`` (Ember's arguments -> cuDNN's dims; host logic), ``graphs`` (frontend graphs, cache, the
refusal memory), ``conv`` (the kernels and their fallbacks), ``fallback`` (array kernels for what the shared
ones lack), ``runtime`` (handles, streams, workspaces and launches: the only GPU-only module).
"""
from __future__ import annotations

from . import attention, conv, fallback
from .graphs import Planner

_loaded: list = []  # [module or None], once per process
_planners: list = []  # the planners of the installed kernels (once per process: the backend starts once)


def load():
    """The ``cudnn`` frontend module with libcudnn loaded, or None where either is missing."""
    if not _loaded:
        try:
            import cudnn
            cudnn.backend_version()  # raises where libcudnn could not be found
        except Exception:  # noqa: BLE001 -- not installed, or no library: cuDNN is unavailable
            cudnn = None
        _loaded.append(cudnn)
    return _loaded[0]


def version() -> int | None:
    """libcudnn's version number (e.g. 91300), or None where it is not available."""
    cudnn = load()
    return None if cudnn is None else int(cudnn.backend_version())


def fallbacks(lib, shared: dict) -> dict:
    """The kernel behind each cuDNN override: the shared kernels where they exist, else ``fallback.py``'s."""
    transposed_2d = shared["conv_transpose2d"]
    return {"conv1d": shared["conv1d"], "conv2d": shared["conv2d"], "conv3d": fallback.convolution(lib),
            "conv_transpose1d": fallback.transposed_convolution_1d(transposed_2d),
            "conv_transpose2d": transposed_2d, "conv_transpose3d": fallback.transposed_convolution(lib),
            "convolution_backward_weight": shared["convolution_backward_weight"]}


def overrides(cupy, lib, shared: dict) -> dict:
    """The convolution overrides where cuDNN is available, else none."""
    cudnn = load()
    if cudnn is None:
        return {}
    from .runtime import Runtime
    runtime = Runtime(cupy, cudnn)
    planner = Planner(runtime.build)
    attention_planner = Planner(attention.builder(cupy, cudnn, runtime.handle))
    _planners[:] = [planner, attention_planner]
    table = conv.kernels(cupy, planner, runtime.run, fallbacks(lib, shared), lambda a: a.device.id)
    table.update(attention.kernels(cupy, attention_planner, runtime.run, {name: shared[name] for name in attention.OPS},
                                   lambda a: a.device.id))
    return table


def refusals() -> dict:
    """Key -> reason for every configuration cuDNN refused in this process (diagnostics)."""
    return {key: reason for planner in _planners for key, reason in planner.refused.items()}
