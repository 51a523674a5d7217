"""Who runs a benchmark: a framework (Ember, PyTorch or NumPy) on a device, with its thread setting.

Every case is written once against the API Ember shares with PyTorch and built once per side, so
all contenders run the same code on copies of the same NumPy inputs. ``lineup`` decides, per
device, what Ember is compared with: PyTorch on the CPU and on CUDA, Ember's own CPU backend on
OpenCL (PyTorch has no OpenCL device).
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import json
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from types import ModuleType

import numpy as np


EMBER_ONE_THREAD, TORCH_ONE_THREAD = "Ember 1 thread", "PyTorch 1 thread"


@dataclass(frozen=True)
class Side:
    """One contender. ``framework`` is the module it runs on ('ember', 'torch' or 'numpy'), imported
    on first use of ``lib``: a separate-process run describes every side in every process but imports
    only its own framework. ``threads``: during this side's rounds, PyTorch's intra-op thread count,
    or for Ember and NumPy the thread count of NumPy's BLAS (through threadpoolctl). ``compiled``: the
    side runs the framework's ``compile`` of the case's step (cases that have no compiled form skip it),
    with ``compile_mode`` as its ``mode=`` (None: the default mode; "reduce-overhead": replayed as one
    device graph where the backend can capture one)."""
    label: str
    framework: str
    device: str = "cpu"
    threads: int | None = None
    compiled: bool = False
    compile_mode: str | None = None

    @cached_property
    def lib(self) -> ModuleType:
        return importlib.import_module(self.framework)

    @property
    def is_torch(self) -> bool:
        return self.framework == "torch"

    @property
    def is_numpy(self) -> bool:
        return self.framework == "numpy"

    def tensor(self, array: np.ndarray, requires_grad: bool = False):
        """A copy of ``array`` on this side's device (NumPy: a plain copy)."""
        if self.is_numpy:
            return np.array(array)
        return self.lib.tensor(array, device=self.device, requires_grad=requires_grad)

    def sync(self) -> None:
        """Wait for queued device work, so a timed batch ends when its work does."""
        if self.device == "cpu" or self.is_numpy:
            return
        if self.is_torch:
            self.lib.cuda.synchronize()
        else:
            self.lib.synchronize(self.device)

    @contextmanager
    def running(self):
        """The side's thread count set to ``threads`` for the duration, restored afterwards.

        Yields whether PyTorch's count changed, so the caller can make one untimed call first: its
        OpenMP pool resizes lazily, on the first parallel region after the switch. (OpenBLAS applies
        a new count at once.)
        """
        if self.threads is not None and not self.is_torch:
            with blas_threads().limit(limits=self.threads, user_api="blas"):
                yield False
            return
        if self.threads is None or self.lib.get_num_threads() == self.threads:
            yield False
            return
        before = self.lib.get_num_threads()
        self.lib.set_num_threads(self.threads)
        try:
            yield True
        finally:
            self.lib.set_num_threads(before)


_controller = None


def blas_threads():
    """threadpoolctl's controller of the loaded BLAS libraries, made once (finding them costs milliseconds).

    threadpoolctl is optional: without it there is no single-thread Ember column (see ``lineup``).
    """
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController
        _controller = ThreadpoolController()
    return _controller


def _has_threadpoolctl() -> bool:
    try:
        import threadpoolctl  # noqa: F401
    except ImportError:
        return False
    return True


def numpy_state(model) -> dict[str, np.ndarray]:
    """A model's state_dict as NumPy arrays: the neutral form both frameworks load from."""
    return {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}


def load_numpy_state(side: Side, model, state: dict[str, np.ndarray]) -> None:
    """Copy ``state`` into ``model`` (on the CPU, before it moves to its device)."""
    model.load_state_dict({k: side.lib.tensor(v) for k, v in state.items()})


@dataclass
class Lineup:
    """The sides of one device's section: Ember, what it is compared with, or why it is skipped.

    ``single_thread`` and ``subject_single_thread`` are PyTorch and Ember limited to one thread:
    on a small shared machine, the comparison that other processes' load disturbs least.
    """
    device: str
    subject: Side | None
    reference: Side | None = None
    single_thread: Side | None = None
    subject_single_thread: Side | None = None
    numpy: Side | None = None
    skipped: str = ""
    note: str = ""

    def sides(self, *extra: Side | None) -> list[Side]:
        """Ember first, then the reference, then any of ``extra`` that exist."""
        return [s for s in (self.subject, self.reference, *extra) if s is not None]

    def to_json(self) -> str:
        """The lineup as JSON, for a benchmark process that must not import the other framework to rebuild it."""
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "Lineup":
        fields = json.loads(text)
        return cls(**{k: Side(**v) if isinstance(v, dict) else v for k, v in fields.items()})


def bench_pin() -> str | None:
    """The torch requirement of Ember's ``bench`` extra, e.g. ``torch==2.13.0``."""
    try:
        requires = importlib.metadata.requires("ember") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for req in requires:
        spec, _, marker = req.partition(";")
        if spec.strip().startswith("torch") and "bench" in marker:
            return spec.strip()
    return None


def load_torch(disabled: bool = False) -> tuple[ModuleType | None, str]:
    """PyTorch if it is installed (and not ``disabled``), and a message saying what that means.

    Without PyTorch the Ember-only parts still run; the message says how to get the comparison.
    A version other than the ``bench`` pin is used but reported, since ratios move between releases.
    """
    pin = bench_pin() or "torch"
    install = 'pip install -e ".[bench]"'
    if disabled:
        return None, "PyTorch comparison disabled (--no-torch): Ember-only measurements, no ratios."
    try:
        import torch
    except ImportError:
        return None, (f"PyTorch is not installed, so only Ember's side is measured and no ratio is given. "
                      f"For the comparison install the bench extra ({pin}): {install}")
    message = ""
    if "==" in pin and torch.__version__.split("+")[0] != pin.split("==")[1].strip():
        message = f"PyTorch {torch.__version__} is installed but the bench extra pins {pin}; ratios may differ."
    return torch, message


def lineup(device: str, torch: ModuleType | None) -> Lineup:
    """The sides for ``device`` ('cpu', 'cuda' or 'opencl'), or a Lineup that says why it is skipped."""
    import ember  # here, not at the top: the PyTorch child of memory.py must not load Ember

    status = ember.backends.available().get(device)
    if status is None:
        return Lineup(device, None, skipped=f"Ember has no backend named {device!r}.")
    if status != "available":
        return Lineup(device, None, skipped=f"Ember's {device} backend is {status}.")
    if device == "cpu":
        subject = Side("Ember", "ember", "cpu")
        if torch is None:
            return Lineup(device, subject, numpy=Side("NumPy", "numpy"))
        ember_one = Side(EMBER_ONE_THREAD, "ember", "cpu", threads=1) if _has_threadpoolctl() else None
        return Lineup(device, subject, reference=Side("PyTorch", "torch", "cpu", threads=torch.get_num_threads()),
                      single_thread=Side(TORCH_ONE_THREAD, "torch", "cpu", threads=1),
                      subject_single_thread=ember_one, numpy=Side("NumPy", "numpy"))
    subject = Side(f"Ember {device}", "ember", device)
    if device == "opencl":
        return Lineup(device, subject, reference=Side("Ember cpu", "ember", "cpu"),
                      note="PyTorch has no OpenCL device: the reference is Ember's own CPU backend.")
    if torch is None or not torch.cuda.is_available():
        why = "PyTorch is not installed" if torch is None else "PyTorch has no CUDA device here"
        return Lineup(device, subject, note=f"{why}: Ember-only measurements on {device}.")
    return Lineup(device, subject, reference=Side(f"PyTorch {device}", "torch", device))
