"""Scanning a model's reply for its first JSON object, repairing one cut off mid-way.

The project's one JSON scanner: the TRACe labeller and the rubric test-set builder both read
replies through :func:`extract_json`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["extract_json"]

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)(?:```|$)", re.S)


@dataclass
class _Scan:
    """Bracket state after reading a JSON prefix (strings and escapes respected)."""

    open_brackets: list[str]  # closers still owed, innermost last
    in_string: bool
    end: int | None  # index just after the first complete top-level value, if any
    last_safe: int  # index of the last member separator or closed inner value


def _scan(body: str) -> _Scan:
    stack: list[str] = []
    in_str = esc = False
    last_safe = 0
    for i, ch in enumerate(body):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if stack:
                stack.pop()
            if not stack:
                return _Scan([], False, i + 1, last_safe)
            last_safe = i + 1
        elif ch == ",":
            last_safe = i
    return _Scan(stack, in_str, None, last_safe)


def _close_truncated(text: str) -> str | None:
    """Close a JSON object cut off mid-way; None when there is no object start."""
    start = text.find("{")
    if start < 0:
        return None
    body = text[start:]
    scan = _scan(body)
    if scan.end is not None:
        return body[:scan.end]
    # Truncated: try closing as is (string closed), then cut back to the last separator.
    attempts = [body + ('"' if scan.in_string else "")]
    attempts.append(body[:scan.last_safe] if scan.last_safe else body)
    for attempt in attempts:
        candidate = attempt.rstrip().rstrip(",")
        if candidate.endswith(":"):
            continue
        tail = _scan(candidate)
        if tail.in_string:
            candidate += '"'
        fixed = candidate + "".join(reversed(tail.open_brackets))
        try:
            json.loads(fixed)
        except json.JSONDecodeError:
            continue
        return fixed
    return None


def extract_json(text: str) -> tuple[dict[str, Any] | None, bool]:
    """The first JSON object in ``text`` and whether it had to be repaired."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for cand in candidates:
        start = cand.find("{")
        if start < 0:
            continue
        try:
            obj, _ = json.JSONDecoder().raw_decode(cand[start:])
        except json.JSONDecodeError:
            pass
        else:
            if isinstance(obj, dict):
                return obj, False
    for cand in candidates:
        fixed = _close_truncated(cand)
        if fixed is not None:
            try:
                obj = json.loads(fixed)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict):
                return obj, True
    return None, False
