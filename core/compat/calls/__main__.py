"""``python -m ember.compat.calls``: the differential API suite's counts, category by category, and every
mismatch not on the reviewed list (``exceptions.EXCUSED``)."""
from __future__ import annotations

import argparse
import sys
from collections import Counter


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ember.compat.calls", description=__doc__)
    parser.add_argument("--op", action="append", help="only this op id (cumprod, linalg.solve); repeatable")
    parser.add_argument("--all", action="store_true", help="list excused mismatches too")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("the API suite calls PyTorch, which is not installed here: pip install -e \".[bench]\"",
              file=sys.stderr)
        return 2
    import ember

    from .exceptions import excuse
    from .suite import check, check_protocols, ops, reachable

    verdicts, unmatched = [], []
    for op in ops():
        if (args.op and op.id not in args.op) or not reachable(torch, op):
            continue
        found, missed = check(torch, ember, op)
        verdicts += found
        unmatched += missed
    if not args.op:
        verdicts += check_protocols(torch, ember)
    counts: Counter = Counter()
    shown = []
    for v in verdicts:
        if v.missing:
            counts[v.category, "Ember lacks"] += 1
        elif v.mismatch is None:
            counts[v.category, "agree"] += 1
        elif excuse(v.op, v.category, str(v.call), v.mismatch):
            counts[v.category, "excused"] += 1
            if args.all:
                shown.append(f"  (excused) {v.call}: {v.mismatch}")
        else:
            counts[v.category, "mismatch"] += 1
            shown.append(f"  {v.call}: {v.mismatch}")
    columns = ("agree", "excused", "mismatch", "Ember lacks")
    print(f"{'category':24}{'calls':>8}" + "".join(f"{c:>13}" for c in columns))
    for category in sorted({c for c, _ in counts}):
        row = [counts[category, c] for c in columns]
        print(f"{category:24}{sum(row):>8}" + "".join(f"{n:>13}" for n in row))
    total = [sum(n for (c, k), n in counts.items() if k == column) for column in columns]
    print(f"{'all':24}{sum(total):>8}" + "".join(f"{n:>13}" for n in total))
    print(f"\n{len({v.op for v in verdicts})} ops and protocol groups; {len(unmatched)} overloads with no call "
          f"PyTorch accepts among the guesses")
    if shown:
        print("\n" + "\n".join(shown))
    return 1 if any(k == "mismatch" for _, k in counts) else 0


if __name__ == "__main__":
    sys.exit(main())
