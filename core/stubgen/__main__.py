"""``python -m ember.stubgen [--check]``: regenerate the shipped ``.pyi`` stubs, or check they are current."""
from __future__ import annotations

import argparse
import sys

from . import PACKAGE_DIR, generate, stale, write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ember.stubgen", description=__doc__)
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 and list the stubs that differ from what would be generated")
    args = parser.parse_args(argv)
    stubs = generate()
    if args.check:
        differing = stale(stubs)
        for path in differing:
            print(f"stale: {PACKAGE_DIR / path}")
        if differing:
            print("regenerate with: python -m ember.stubgen", file=sys.stderr)
        return 1 if differing else 0
    for path in write(stubs):
        print(f"wrote {PACKAGE_DIR / path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
