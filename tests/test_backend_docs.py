"""docs/backends.md lists exactly the primitives of the schema, so the guide cannot drift from the contract."""
from __future__ import annotations

import re
from pathlib import Path

from ember.dispatch import primitives

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "backends.md"


def test_guide_lists_every_primitive_by_category():
    section = GUIDE.read_text(encoding="utf-8").split("## The primitives", 1)[1].split("\n## ", 1)[0]
    listed = {}
    for category, count, names in re.findall(r"^\| (\w+) \((\d+)\) \| (.*) \|$", section, re.MULTILINE):
        listed[category] = re.findall(r"`(\w+)`", names)
        assert len(listed[category]) == int(count), category
    expected = {}
    for op in primitives():
        expected.setdefault(op.category, []).append(op.name)
    assert {c: sorted(n) for c, n in listed.items()} == {c: sorted(n) for c, n in expected.items()}
