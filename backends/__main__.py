"""``python -m ember.backends``: each backend plugin and its status, broken ones included.

Exits 0 whatever the other plugins do; non-zero only when the cpu backend cannot compute.
"""
import sys

from ember.backends import available


def _cpu_works() -> bool:
    import ember
    try:
        return (ember.ones(3, device="cpu") + 1).sum().item() == 6.0
    except Exception as exc:
        print(f"cpu backend is unusable: {type(exc).__name__}: {exc}", file=sys.stderr)
        return False


def main() -> int:
    report = available()
    for name, status in report.items():
        print(f"{name}: {status}")
    return 0 if report.get("cpu") == "available" and _cpu_works() else 1


if __name__ == "__main__":
    sys.exit(main())
