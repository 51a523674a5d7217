"""Checks an Ember installed from its wheel; scripts/check_wheel.sh runs it in a clean venv, outside the checkout.

Usage: ``python -I check_installed.py SOURCE_TREE CHECKOUT_OPENCL_STATUS``. SOURCE_TREE holds the files the
wheel was built from; CHECKOUT_OPENCL_STATUS is what the checkout's ``python -m ember.backends`` says about
opencl, so that the wheel is held to what this machine can do. Exits non-zero, saying why, on any problem.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# Each source folder, and where its files go inside the installed ``ember`` package.
ROOTS = {"core": ".", "backends": "backends", "conformance": "conformance"}


def fail(message: str) -> None:
    print(f"check_wheel: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def installed_ember() -> Path:
    """The ``ember`` package folder, which must be the venv's copy, not the checkout's."""
    import ember
    folder = Path(ember.__file__).resolve().parent
    if not folder.is_relative_to(Path(sys.prefix).resolve()):
        fail(f"ember was imported from {folder}, not from the venv at {sys.prefix}")
    return folder


def check_files(source: Path, package: Path) -> None:
    """Every file of the source folders (modules, py.typed, .pyi stubs, data) was installed."""
    shipped, missing = [], []
    for folder, inside in ROOTS.items():
        for path in sorted((source / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                relative = path.relative_to(source / folder)
                (shipped if (package / inside / relative).is_file() else missing).append(f"{folder}/{relative}")
    if missing:
        fail(f"{len(missing)} file(s) of the checkout are not in the installed package (a folder without "
             f"__init__.py, or a data file not declared in [tool.setuptools.package-data]): {', '.join(missing)}")
    typing_files = [name for name in shipped if name.endswith((".pyi", "py.typed"))]
    print(f"installed all {len(shipped)} files of the checkout's packages, {len(typing_files)} of them "
          f"py.typed/.pyi: {', '.join(typing_files) or 'none in the checkout'}")


def check_backends(checkout_opencl: str) -> bool:
    """``python -m ember.backends``: cpu available, opencl as in the checkout. True when opencl runs here."""
    done = subprocess.run([sys.executable, "-I", "-m", "ember.backends"], capture_output=True, text=True)
    print(done.stdout, end="")
    if done.returncode != 0:
        fail(f"python -m ember.backends exited with {done.returncode}:\n{done.stderr}")
    status = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    if status.get("cpu") != "available":
        fail(f"cpu is not available: {status.get('cpu', 'not listed')}")
    opencl = status.get("opencl", "not listed")
    if opencl == "available":
        return True
    if checkout_opencl == "available":
        fail(f"opencl works in the checkout but not from the wheel: {opencl}")
    print(f"check_wheel: WARNING: no op runs on opencl, which is unavailable in the checkout too "
          f"({checkout_opencl or 'not listed'})", file=sys.stderr)
    return False


def check_ops_on_opencl() -> None:
    """A small forward and backward pass on opencl gives cpu's values."""
    import ember
    from ember.testing import assert_close

    def run(device: str):
        x = ember.arange(-6.0, 6.0).reshape(3, 4).to(device).requires_grad_()
        w = ember.linspace(-1.0, 1.0, 8).reshape(4, 2).to(device)
        y = ((x @ w).relu() + x.sum() * 0.5).softmax(-1)
        (y * y).sum().backward()
        return y, x.grad

    y, grad = run("opencl")
    if y.device.type != "opencl" or grad.device.type != "opencl":
        fail(f"the result is on {y.device} and its gradient on {grad.device}, expected opencl")
    y_cpu, grad_cpu = run("cpu")
    assert_close(y.cpu(), y_cpu)
    assert_close(grad.cpu(), grad_cpu)
    print("ops on opencl match cpu: matmul, relu, sum, softmax and their backward")


def main(source: str, checkout_opencl: str) -> None:
    check_files(Path(source), installed_ember())
    if check_backends(checkout_opencl):
        check_ops_on_opencl()
    print("check_wheel: OK")


if __name__ == "__main__":
    main(*sys.argv[1:3])
