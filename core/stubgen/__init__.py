"""``.pyi`` stubs for Ember's public surface, generated from the op schema and the runtime.

Tensor methods, ``ember.*`` functions and ``ember.nn.functional`` are attached at import by
installers and loops that IDEs and type checkers cannot follow; the stubs declare them.
``python -m ember.stubgen`` rewrites the stubs that ship in the package; ``--check`` says which
are stale. ``generate()`` renders them in a fresh process (see ``render``) without writing.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # the ``ember`` package: core/ in a checkout


def generate() -> dict[str, str]:
    """Every stub's path (relative to the ember package) and the text it should have."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "stubs.json"
        done = subprocess.run([sys.executable, "-m", "ember.stubgen.render", str(out)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"stubgen: rendering the stubs failed:\n{done.stderr}")
        return json.loads(out.read_text(encoding="utf-8"))


def stale(stubs: dict[str, str], root: Path = PACKAGE_DIR) -> list[str]:
    """The stub paths whose file under ``root`` is missing or differs from ``stubs``."""
    return [path for path, text in sorted(stubs.items())
            if not (root / path).is_file() or (root / path).read_text(encoding="utf-8") != text]


def write(stubs: dict[str, str], root: Path = PACKAGE_DIR) -> list[str]:
    """Write the stale stubs under ``root``; returns their paths."""
    changed = stale(stubs, root)
    for path in changed:
        (root / path).write_text(stubs[path], encoding="utf-8")
    return changed
