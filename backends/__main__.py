"""``python -m ember.backends``: each backend plugin and its status, broken ones included.

Plugins import all at once; each status line is printed as soon as it is known, and a run that waits on slow
plugins says which ones on stderr. Exits 0 whatever the other plugins do; non-zero only when the cpu backend
cannot compute.
"""
import sys

from ember.dispatch import registry

WAITING_NOTICE_AFTER = 1.0  # seconds; a quick run prints no waiting line


def _cpu_works() -> bool:
    import ember
    try:
        return (ember.ones(3, device="cpu") + 1).sum().item() == 6.0
    except Exception as exc:
        print(f"cpu backend is unusable: {type(exc).__name__}: {exc}", file=sys.stderr)
        return False


def _print_status(name: str, status: str) -> None:
    print(f"{name}: {status}", flush=True)


def _print_waiting(plugin_names: list[str], timeout_s: float) -> None:
    print(f"waiting for: {', '.join(plugin_names)} (up to {timeout_s:g} s)", file=sys.stderr, flush=True)


def main() -> int:
    report = registry.report_statuses(_print_status, _print_waiting, WAITING_NOTICE_AFTER)
    return 0 if report.get("cpu") == "available" and _cpu_works() else 1


if __name__ == "__main__":
    sys.exit(main())
