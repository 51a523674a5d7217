"""``ember.torch_version``: ``TorchVersion``, the str that ``ember.__version__`` is, comparable as a version.

Programs compare ``torch.__version__`` with strings (``>= "2.1"``) and tuples (``> (1, 10)``). A plain str
compares "0.10" below "0.9"; TorchVersion compares release numbers, then pre-releases (a < b < rc < final),
post-releases and dev builds as PEP 440 orders them. A value that is no version (``"parrot"``) is compared
as a string.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["TorchVersion"]

_VERSION = re.compile(
    r"^\s*v?(?:(?P<epoch>\d+)!)?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre>a|alpha|b|beta|c|rc|pre|preview)[-_.]?(?P<pre_n>\d*))?"
    r"(?:-(?P<post_implicit>\d+)|[-_.]?(?:post|rev|r)[-_.]?(?P<post>\d*))?"
    r"(?:[-_.]?dev[-_.]?(?P<dev>\d*))?(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$", re.IGNORECASE)
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}
_FINAL = (3, 0)  # sorts after every pre-release


class InvalidVersion(ValueError):
    """The text is no PEP 440 version."""


def version_key(text: str) -> tuple:
    """A tuple that orders versions as PEP 440 does (trailing zeros of the release ignored: 1.2 == 1.2.0)."""
    match = _VERSION.match(text)
    if match is None:
        raise InvalidVersion(f"Invalid version: {text!r}")
    release = [int(part) for part in match["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    post = match["post_implicit"] or match["post"]
    has_post = match["post_implicit"] is not None or match["post"] is not None
    dev = match["dev"]
    has_dev = dev is not None
    if match["pre"]:
        pre = (_PRE_RANK[match["pre"].lower()], int(match["pre_n"] or 0))
    elif has_dev and not has_post:
        pre = (-1, 0)  # 1.0.dev0 comes before 1.0a0
    else:
        pre = _FINAL
    local = tuple((1, int(p), "") if p.isdigit() else (0, 0, p.lower())
                  for p in re.split(r"[-_.]", match["local"])) if match["local"] else ()
    return (int(match["epoch"] or 0), tuple(release), pre, (1, int(post or 0)) if has_post else (0, 0),
            (0, int(dev or 0)) if has_dev else (1, 0), local)


def _as_key(value: Any) -> tuple:
    if isinstance(value, str):
        return version_key(value)
    if isinstance(value, Iterable):
        return version_key(".".join(str(item) for item in value))  # (1, 20, 1) is "1.20.1"
    raise InvalidVersion(f"Invalid version: {value!r}")


class TorchVersion(str):
    """A version string that compares with strings and tuples as versions: ``TorchVersion("0.10") > "0.9"``.
    As in PyTorch, ``!=`` stays str's own (only ``==``, ``<``, ``<=``, ``>``, ``>=`` compare versions)."""

    __slots__ = ()

    def _compare(self, other: Any, method: str) -> bool:
        try:
            mine, theirs = version_key(self), _as_key(other)
        except InvalidVersion:
            return getattr(str, method)(self, other)
        return getattr(mine, method)(theirs)

    def __eq__(self, other: Any) -> bool:
        return self._compare(other, "__eq__")

    def __lt__(self, other: Any) -> bool:
        return self._compare(other, "__lt__")

    def __le__(self, other: Any) -> bool:
        return self._compare(other, "__le__")

    def __gt__(self, other: Any) -> bool:
        return self._compare(other, "__gt__")

    def __ge__(self, other: Any) -> bool:
        return self._compare(other, "__ge__")

    __hash__ = str.__hash__
