"""Whether an exception a fuzzed call raised is a clean refusal, and if not, which kind of finding it is.

Clean: one of Ember's typed errors (``EmberError``), or a TypeError/ValueError/IndexError/RuntimeError that
Ember raises on purpose (a ``raise`` statement in Ember's code) or that Python raises binding the arguments at
the call (too many arguments, an unknown keyword), with a message that says something. Findings:

- ``off-type``: an exception of a type no caller catches for bad input (KeyError, AttributeError,
  ZeroDivisionError, MemoryError, AssertionError, ...);
- ``internal``: a TypeError/ValueError/IndexError/RuntimeError raised implicitly inside Ember (NumPy's
  ``IndexError: shape mismatch`` from a kernel, a bad subscript) or inside a library Ember calls;
- ``vague``: a clean type whose message is too short to tell the user anything;
- ``hang``: the call ran past its deadline (``CallHung``).

``crash`` (the process died) is counted by the campaign runner, which runs the calls in a child process.
"""
from __future__ import annotations

import dis
import linecache
import os
import re
import traceback
from dataclasses import dataclass

import ember
import ember.backends
from ember.dispatch import EmberError

KINDS = ("crash", "hang", "vague", "off-type", "internal")
PURPOSEFUL = (TypeError, ValueError, IndexError, RuntimeError)
#: Shorter messages name neither the argument nor what was wrong with it.
VAGUE_BELOW = 12
_EMBER_DIRS = tuple(os.path.dirname(m.__file__) + os.sep for m in (ember, ember.backends))
_BINDING = re.compile(r"\(\) (takes|missing|got an unexpected keyword|got multiple values)")


class CallHung(Exception):
    """The call ran past the deadline the fuzzer gives each call."""


@dataclass(frozen=True)
class Finding:
    kind: str  # one of KINDS
    why: str


def judge(exc: BaseException, caller: str) -> Finding | None:
    """None for a clean refusal, else the finding. ``caller`` is the file that made the call: an exception whose
    innermost frame is there is Python refusing the arguments at the call itself."""
    if isinstance(exc, CallHung):
        return Finding("hang", str(exc))
    if isinstance(exc, EmberError):
        return _vague(exc)
    frames = traceback.extract_tb(exc.__traceback__)
    inner = frames[-1] if frames else None
    where = os.path.abspath(inner.filename) if inner else caller
    if not isinstance(exc, PURPOSEFUL) or isinstance(exc, (KeyError, MemoryError)):
        return Finding("off-type", f"{type(exc).__name__} at {_place(inner)}")
    if where == caller or (isinstance(exc, TypeError) and _binding_failed(exc)):
        return None if isinstance(exc, TypeError) else Finding("internal", f"{type(exc).__name__} at the call")
    if not where.startswith(_EMBER_DIRS):
        return Finding("internal", f"{type(exc).__name__} raised inside {where} (not Ember's code)")
    if not _raised_by_statement(exc):
        return Finding("internal", f"implicit {type(exc).__name__} inside Ember ({_place(inner)})")
    return _vague(exc)


def _vague(exc: BaseException) -> Finding | None:
    text = str(exc).strip()
    return Finding("vague", f"{type(exc).__name__}({text!r})") if len(text) < VAGUE_BELOW else None


def _place(frame) -> str:
    if frame is None:
        return "an unknown place"
    line = (linecache.getline(frame.filename, frame.lineno) or "").strip()
    return f"{frame.filename}:{frame.lineno}: {line}"


def _innermost_instruction(exc: BaseException):
    tb = exc.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    return next((i for i in dis.get_instructions(tb.tb_frame.f_code) if i.offset == tb.tb_lasti), None)


def _binding_failed(exc: TypeError) -> bool:
    """Whether Python refused the arguments of a call the innermost frame made (a wrapper forwarding them to a
    function that does not take them), read from the instruction that ran and the message Python words."""
    ran = _innermost_instruction(exc)
    return ran is not None and ran.opname.startswith("CALL") and _BINDING.search(str(exc)) is not None


def _raised_by_statement(exc: BaseException) -> bool:
    """Whether the innermost frame raised ``exc`` with a ``raise`` statement, read from the bytecode that ran
    (the source file may have changed since it was imported)."""
    ran = _innermost_instruction(exc)
    return ran is not None and ran.opname in ("RAISE_VARARGS", "RERAISE")
