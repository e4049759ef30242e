"""Where the answer, the contexts and the retrieved ids are in an application's reply: field
paths, and the values read through them.  Pure: a reply (parsed JSON) in, values or a
:class:`PathMissing` out.

A path is JSONPath-like and dotted: ``answer``, ``data.answer``, ``choices[0].message.content``
(``choices.0.message.content`` is the same), ``sources[*].text`` (every element of a list),
``$.data.answer`` (a leading ``$`` is allowed).  A key that is all digits indexes a list;
negative indexes count from the end.  Keys holding ``.`` or ``[`` cannot be named.

What a path must give:

* the answer: text (a number is taken as its text);
* the contexts: a list of texts, one text, or a list of objects whose text is under ``text``,
  ``content``, ``page_content``, ``passage``, ``chunk`` or ``document`` (LangChain's
  documents, most vector stores' hits); null is no context;
* the retrieved ids: a list of ids (text or whole numbers), one id, or a list of objects with
  ``id``, ``doc_id``, ``document_id`` or ``source_id``.  When no ids path is given and the
  contexts are objects that all carry an id, those ids are the retrieved ids.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragmeter.errors import ConfigError

__all__ = ["FieldPath", "PathMissing", "BadValue", "parse_path", "answer_text", "context_texts",
           "context_ids", "ids_of_objects", "TEXT_KEYS", "ID_KEYS"]

WILDCARD = "*"
TEXT_KEYS = ("text", "content", "page_content", "passage", "chunk", "document")
ID_KEYS = ("id", "doc_id", "document_id", "source_id")
_TOKEN = re.compile(r"\[(\*|-?\d+)\]|([^.\[\]]+)")
_INDEX = re.compile(r"-?\d+")


class PathMissing(Exception):
    """The reply has nothing at a path: ``where`` (the part of the path that was found) and
    what was there instead."""

    def __init__(self, path: str, where: str, found: str) -> None:
        super().__init__(f"{path}: {where} {found}")
        self.path = path
        self.where = where
        self.found = found


class BadValue(Exception):
    """A path found a value of the wrong kind (the answer is a list, a context is a number)."""


@dataclass(frozen=True)
class FieldPath:
    """A parsed path (see the module docstring)."""

    text: str
    steps: tuple[str | int, ...]

    @property
    def wild(self) -> bool:
        return WILDCARD in self.steps

    def get(self, reply: Any) -> Any:
        """The value at this path; :class:`PathMissing` when the reply has none."""
        return self._walk(reply, 0, "the reply")

    def _walk(self, value: Any, i: int, where: str) -> Any:
        if i == len(self.steps):
            return value
        step = self.steps[i]
        if step == WILDCARD:
            if isinstance(value, Mapping):
                items = list(value.values())
            elif isinstance(value, list):
                items = value
            else:
                raise PathMissing(self.text, where, f"is {_kind(value)}, not a list")
            return [self._walk(v, i + 1, f"{where}[{k}]") for k, v in enumerate(items)]
        if isinstance(value, list):
            if isinstance(step, str) and not _INDEX.fullmatch(step):
                raise PathMissing(self.text, where, f"is a list of {len(value)}, not an object "
                                                    f"with {step!r}")
            k = int(step)
            if not -len(value) <= k < len(value):
                raise PathMissing(self.text, where, f"is a list of {len(value)}; it has no "
                                                    f"item {k}")
            return self._walk(value[k], i + 1, f"{where}[{k}]")
        if isinstance(value, Mapping):
            key = str(step)
            if key not in value:
                keys = ", ".join(sorted(map(str, value))[:12]) or "none"
                raise PathMissing(self.text, where, f"has no {key!r} (its keys: {keys})")
            return self._walk(value[key], i + 1, key if where == "the reply" else
                              f"{where}.{key}")
        raise PathMissing(self.text, where, f"is {_kind(value)}, not an object")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    return {bool: "a boolean", int: "a number", float: "a number", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)


def parse_path(text: str, what: str = "path") -> FieldPath:
    """``text`` as a :class:`FieldPath`; :class:`ConfigError` naming ``what`` (the flag or
    argument) when it is not a path."""
    t = text.strip()
    if t.startswith("$"):
        t = t[1:]
        if t.startswith("."):
            t = t[1:]
    steps: list[str | int] = []
    pos = 0
    bad = not t
    while pos < len(t) and not bad:
        if t[pos] == ".":
            if pos == 0 or pos == len(t) - 1 or t[pos + 1] == ".":
                bad = True
            pos += 1
            continue
        m = _TOKEN.match(t, pos)
        if m is None:
            bad = True
            break
        if m.group(1) is not None:
            steps.append(WILDCARD if m.group(1) == WILDCARD else int(m.group(1)))
        else:
            steps.append(m.group(2).strip())
        pos = m.end()
    if bad or not steps or any(s == "" for s in steps):
        raise ConfigError(f"app: {what} {text!r} is not a field path. Fix: write dotted keys "
                          "with list indexes, e.g. answer, data.answer, "
                          "choices[0].message.content or sources[*].text.")
    return FieldPath(text.strip(), tuple(steps))


# ------------------------------------------------------------------ values


def answer_text(value: Any) -> str:
    """The answer a path found, as text; :class:`BadValue` for null, a list or an object."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return json.dumps(value)
    raise BadValue(f"is {_kind(value)}, expected text")


def _text_of(item: Any, k: int) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, Mapping):
        for key in TEXT_KEYS:
            if isinstance(item.get(key), str):
                return str(item[key])
        keys = ", ".join(sorted(map(str, item))[:12]) or "none"
        raise BadValue(f"item {k} is an object without a text ({', '.join(TEXT_KEYS)}); its "
                       f"keys: {keys}")
    raise BadValue(f"item {k} is {_kind(item)}, expected text")


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (str, Mapping)):
        return [value]
    if isinstance(value, list):
        return value
    raise BadValue(f"is {_kind(value)}, expected a list")


def context_texts(value: Any) -> list[str]:
    """The contexts a path found, as a list of texts (see the module docstring)."""
    return [_text_of(item, k) for k, item in enumerate(_as_list(value))]


def _id_of(item: Any, k: int) -> str:
    if isinstance(item, str) and item.strip():
        return item
    if isinstance(item, int) and not isinstance(item, bool):
        return str(item)
    if isinstance(item, Mapping):
        for key in ID_KEYS:
            if key in item and not isinstance(item[key], (Mapping, list, bool, type(None))):
                return _id_of(item[key], k)
        raise BadValue(f"item {k} is an object without an id ({', '.join(ID_KEYS)})")
    raise BadValue(f"item {k} is {_kind(item)}, expected an id")


def context_ids(value: Any) -> list[str]:
    """The retrieved ids a path found, as a list of texts (see the module docstring)."""
    return [_id_of(item, k) for k, item in enumerate(_as_list(value))]


def ids_of_objects(contexts: Sequence[Any]) -> list[str] | None:
    """The ids carried by context objects when every one has one, else None."""
    if not contexts or not all(isinstance(c, Mapping) for c in contexts):
        return None
    try:
        return context_ids(list(contexts))
    except BadValue:
        return None
