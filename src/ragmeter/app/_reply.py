"""Reading a stored reply: the answer, the contexts and the retrieved ids at their field paths,
or why the row is unscored.  Pure: the reply's text in, a :class:`Reply` out.

Reasons of an unscored row (beside the runner's ``timeout``, ``connection``, ``http_5xx``,
``app_error`` ...):

* ``not_json``: the reply is not JSON (give ``answer="$"`` for an application answering plain
  text);
* ``no_answer``: nothing at the answer path (or, with no path given, none of the usual names);
* ``bad_answer``: the answer path holds a list, an object or null;
* ``no_contexts`` / ``no_ids``: nothing at a contexts or ids path that was given;
* ``bad_contexts`` / ``bad_ids``: what is there is not a list of texts or ids.

An unscored row carries no answer, contexts or ids: the families that read the output then
count it as unscored with this reason instead of judging half an answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ragmeter.app._paths import (
    BadValue,
    FieldPath,
    PathMissing,
    answer_text,
    context_ids,
    context_texts,
    ids_of_objects,
    parse_path,
)

__all__ = ["Reply", "ReplyPaths", "read_reply", "ANSWER_NAMES", "CONTEXT_NAMES", "ID_NAMES",
           "WHOLE"]

# The top-level names looked for when no path is given, in this order.
ANSWER_NAMES = ("answer", "response", "output", "result", "text")
CONTEXT_NAMES = ("contexts", "retrieved_contexts", "documents", "context", "sources",
                 "source_documents", "passages", "chunks")
ID_NAMES = ("retrieved_ids", "ids", "doc_ids", "document_ids")
WHOLE = ("$", "")  # the answer path that means "the whole reply is the answer"


@dataclass(frozen=True)
class ReplyPaths:
    """Where to read: a parsed path each, or None for "look for the usual names"; the answer
    path may be ``$`` (the whole reply)."""

    answer: FieldPath | str | None = None
    contexts: FieldPath | None = None
    ids: FieldPath | None = None

    @classmethod
    def of(cls, answer: str | None, contexts: str | None, ids: str | None,
           default_answer: str | None = None) -> ReplyPaths:
        """Parsed from the paths a target gives (errors name the argument)."""
        a = answer if answer is not None else default_answer
        return cls(
            answer=None if a is None else ("$" if a.strip() in WHOLE else
                                           parse_path(a, "answer path")),
            contexts=None if contexts is None else parse_path(contexts, "contexts path"),
            ids=None if ids is None else parse_path(ids, "ids path"))

    def describe(self) -> dict[str, str | None]:
        def text(p: FieldPath | str | None) -> str | None:
            return p.text if isinstance(p, FieldPath) else p

        return {"answer": text(self.answer), "contexts": text(self.contexts),
                "ids": text(self.ids)}


@dataclass(frozen=True)
class Reply:
    """What a reply gave; ``reason``/``detail`` set when the row is unscored."""

    answer: str | None = None
    contexts: list[str] | None = None
    ids: list[str] | None = None
    reason: str | None = None
    detail: str | None = None

    @property
    def ok(self) -> bool:
        return self.reason is None


def _keys(obj: Any) -> str:
    if isinstance(obj, Mapping):
        return "its keys: " + (", ".join(sorted(map(str, obj))[:12]) or "none")
    return f"it is {type(obj).__name__}"


def _first_name(obj: Any, names: tuple[str, ...]) -> str | None:
    if not isinstance(obj, Mapping):
        return None
    return next((n for n in names if n in obj), None)


def _unscored(reason: str, detail: str) -> Reply:
    return Reply(reason=reason, detail=detail[:300])


def read_reply(text: str, paths: ReplyPaths) -> Reply:
    """The answer, contexts and ids of one reply (see the module docstring)."""
    try:
        obj: Any = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        if paths.answer == "$":
            return Reply(answer=text)
        return _unscored("not_json", f"the reply is not JSON: {text[:80]!r} (an application "
                                     "answering plain text needs the answer path $)")
    # the answer
    if paths.answer == "$":
        raw = obj
    elif isinstance(paths.answer, FieldPath):
        try:
            raw = paths.answer.get(obj)
        except PathMissing as exc:
            return _unscored("no_answer", f"answer path {exc.path!r}: {exc.where} {exc.found}")
    else:
        name = _first_name(obj, ANSWER_NAMES)
        if name is None:
            return _unscored("no_answer", f"the reply has none of {', '.join(ANSWER_NAMES)} "
                                          f"({_keys(obj)}); give the answer path")
        raw = obj[name]
    try:
        answer = answer_text(raw)
    except BadValue as exc:
        return _unscored("bad_answer", f"the answer {exc}")
    # the contexts
    raw_contexts: Any = None
    contexts: list[str] | None = None
    if paths.contexts is not None:
        try:
            raw_contexts = paths.contexts.get(obj)
        except PathMissing as exc:
            return _unscored("no_contexts", f"contexts path {exc.path!r}: {exc.where} "
                                            f"{exc.found}")
    else:
        name = _first_name(obj, CONTEXT_NAMES)
        raw_contexts = obj[name] if name is not None else None
    if paths.contexts is not None or raw_contexts is not None:
        try:
            contexts = context_texts(raw_contexts)
        except BadValue as exc:
            return _unscored("bad_contexts", f"the contexts: {exc}")
    # the ids
    ids: list[str] | None = None
    if paths.ids is not None:
        try:
            raw_ids = paths.ids.get(obj)
        except PathMissing as exc:
            return _unscored("no_ids", f"ids path {exc.path!r}: {exc.where} {exc.found}")
        try:
            ids = context_ids(raw_ids)
        except BadValue as exc:
            return _unscored("bad_ids", f"the retrieved ids: {exc}")
    else:
        name = _first_name(obj, ID_NAMES)
        if name is not None:
            try:
                ids = context_ids(obj[name])
            except BadValue as exc:
                return _unscored("bad_ids", f"the retrieved ids ({name}): {exc}")
        elif isinstance(raw_contexts, list):
            ids = ids_of_objects(raw_contexts)
    return Reply(answer=answer, contexts=contexts, ids=ids)
