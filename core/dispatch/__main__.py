"""``python -m ember.dispatch``: print the op schema (primitives, then composites), one category, or one op.

    python -m ember.dispatch                 # every op, grouped by kind
    python -m ember.dispatch conv2d          # one op: declaration, derivative, which backends implement it
    python -m ember.dispatch --kind primitive
    python -m ember.dispatch --markdown      # a Markdown table for docs
    python -m ember.dispatch --autocast      # only the ops autocast casts, with their categories
    python -m ember.dispatch --transforms    # each op's forward-AD (jvp) and vmap rule, and the counts
"""
from __future__ import annotations

import argparse
import difflib
import sys
from collections import Counter

from . import ops  # noqa: F401  (declares every op)
from .op_report import batch_text, jvp_text, report
from .schema import AUTOCAST_LISTS, CATEGORIES, KINDS, OPS, OpDef


def autocast_text(op: OpDef) -> str:
    """``cpu=lower cuda=lower`` for an op autocast casts on some device type; "" otherwise."""
    policy = op.autocast_policy or {}
    return " ".join(f"{kind}={policy[kind]}" for kind in AUTOCAST_LISTS if policy.get(kind))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ember.dispatch", description="List Ember's operators.")
    parser.add_argument("op", nargs="?", help="print this op's declaration and implementations")
    parser.add_argument("--kind", choices=KINDS, help="only primitives or only composites")
    parser.add_argument("--category", choices=CATEGORIES)
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--autocast", action="store_true",
                        help="only ops with an autocast category (other device types follow the cuda list)")
    parser.add_argument("--transforms", action="store_true",
                        help="each op's forward-AD (jvp) and vmap rule: which are derived, decomposed or looped")
    args = parser.parse_args(argv)
    if args.op is not None:
        return _one(args.op)
    if args.transforms:
        return _transforms(args.kind, args.category)
    for kind in KINDS:
        if args.kind and kind != args.kind:
            continue
        chosen = [op for op in OPS.values() if op.kind == kind and args.category in (None, op.category)
                  and (not args.autocast or autocast_text(op))]
        print(f"\n## {kind}s ({len(chosen)})\n" if args.markdown else f"{kind}s ({len(chosen)}):")
        if args.markdown:
            print("| op | category | autocast | signature |\n| --- | --- | --- | --- |")
        for op in sorted(chosen, key=lambda o: (CATEGORIES.index(o.category), o.name)):
            if args.markdown:
                print(f"| `{op.name}` | {op.category} | {autocast_text(op)} | `{op.signature}` |")
            else:
                cast = autocast_text(op)
                print(f"  {op.category:<12} {op.signature}" + (f"  [autocast {cast}]" if cast else ""))
    return 0


def _transforms(kind: str | None, category: str | None) -> int:
    """One line per op with its jvp and vmap rules, then how many ops have each."""
    chosen = [op for op in OPS.values() if kind in (None, op.kind) and category in (None, op.category)]
    jvps, batches = Counter(), Counter()
    for op in sorted(chosen, key=lambda o: (o.kind, CATEGORIES.index(o.category), o.name)):
        jvp, batch = jvp_text(op), batch_text(op)
        jvps[jvp] += 1
        batches[batch] += 1
        print(f"  {op.kind:<10} {op.category:<12} {op.name:<40} jvp {jvp:<26} vmap {batch}")
    print(f"jvp:  {', '.join(f'{name} {count}' for name, count in jvps.most_common())}")
    print(f"vmap: {', '.join(f'{name} {count}' for name, count in batches.most_common())}")
    return 0


def _one(name: str) -> int:
    op = OPS.get(name)
    if op is None:
        close = difflib.get_close_matches(name, OPS, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        print(f"python -m ember.dispatch: no op named {name!r}{hint}", file=sys.stderr)
        return 2
    print(report(op))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
