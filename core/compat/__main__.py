"""``python -m ember.compat``: how much of PyTorch's public API Ember has, namespace by namespace."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .render import markdown, missing_lines, text_missing, text_table
from .report import NAMESPACES, compare_all


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ember.compat",
        description="Compare Ember's public names and signatures with PyTorch's (needs torch: the bench extra).")
    parser.add_argument("--write", nargs="?", const="docs/compat.md", metavar="PATH",
                        help="also write the full report as Markdown (default path: docs/compat.md)")
    parser.add_argument("--namespace", action="append", choices=NAMESPACES, metavar="NAME",
                        help=f"only this namespace; repeatable. One of: {', '.join(NAMESPACES)}")
    parser.add_argument("--missing", action="store_true",
                        help="print only the missing names, one qualified name a line (torch.nn.Bilinear)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        import torch
    except ImportError:
        print("ember.compat compares Ember with PyTorch, which is not installed here. Install the bench "
              "extra, which pins the PyTorch version the report is made against: pip install -e \".[bench]\"",
              file=sys.stderr)
        return 2
    import ember
    reports = compare_all(torch, ember, tuple(args.namespace or NAMESPACES))
    if args.missing:
        print(missing_lines(reports))
    else:
        print(text_table(reports))
        print(text_missing(reports))
    if args.write:
        path = Path(args.write)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(markdown(reports, torch.__version__, getattr(ember, "__version__", "?")))
        print(f"\nwrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
