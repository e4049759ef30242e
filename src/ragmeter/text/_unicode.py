"""Lone UTF-16 surrogates: text that Python holds but no UTF-8 file or SQLite store can.

JSON may spell a character as a ``\\uXXXX`` escape, and ``"\\ud800"`` (the first half of a
surrogate pair, alone) decodes to a Python string that cannot be encoded as UTF-8: every writer
then fails, after part of the output was written (issue 29.6).  The rule:

* **user data is refused where it is read** (:func:`find_lone_surrogate`, used by
  :mod:`ragmeter.io`): the error names the line or row, the field and the position, as for
  invalid UTF-8 bytes, so nothing is scored on text that cannot be written back;
* **a model's reply is repaired** (:func:`replace_lone_surrogates`, used by the backends): each
  lone surrogate becomes U+FFFD, the replacement character, as a UTF-8 decoder does with a
  broken byte, since the user cannot fix a reply;
* **writers never fail on one** (:mod:`ragmeter.io._write` escapes it as ``\\ud800`` in JSON),
  so no output is ever left half written.

A valid pair (``"\\ud83d\\ude00"``) is decoded by JSON to one character and is not affected.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["SURROGATE", "find_lone_surrogate", "replace_lone_surrogates", "shown"]

SURROGATE = re.compile("[\ud800-\udfff]")


def replace_lone_surrogates(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (unchanged when it has none)."""
    if text.isascii():
        return text
    return SURROGATE.sub("\ufffd", text)


def find_lone_surrogate(value: Any) -> tuple[str | None, int, str] | None:
    """The first lone surrogate inside ``value`` (a string, or dicts and lists of them, keys
    included): ``(top-level key or None, position in its string, the surrogate)``; None
    when there is none."""
    kind = type(value)
    if kind is str:
        if value.isascii():
            return None
        m = SURROGATE.search(value)
        return (None, m.start(), m.group()) if m else None
    if kind is list or kind is tuple:
        for item in value:
            if type(item) in _PLAIN:
                continue
            found = find_lone_surrogate(item)
            if found is not None:
                return found
        return None
    if kind is dict or (kind not in _PLAIN and isinstance(value, Mapping)):
        for key, item in value.items():
            for part in (key, item):
                found = None if type(part) in _PLAIN else find_lone_surrogate(part)
                if found is not None:
                    return (shown(str(key)), found[1], found[2])
    return None


_PLAIN = frozenset({int, float, bool, type(None)})  # no text inside


def shown(text: str) -> str:
    """``text`` safe to print: lone surrogates as ``\\ud800`` escapes."""
    if text.isascii() or not SURROGATE.search(text):
        return text
    return SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
