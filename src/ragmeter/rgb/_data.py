"""Reading RGB data files (JSON Lines under a ``.json`` name) and telling their kind.

Source of the format: chen700564/RGB @ 65ec39e, ``data/*.json`` and ``evalue.py``.

* kind: the file name (stem) contains ``_int`` -> ``int`` (information integration),
  ``_fact`` -> ``fact`` (counterfactual robustness), else ``default`` (noise robustness and
  negative rejection); evalue.py tests ``'_int' in filename`` / ``'_fact' in filename``.  When
  the name says nothing, the content decides: ``positive`` as a list of lists -> ``int``,
  a ``positive_wrong`` field -> ``fact``.
* language: evalue.py picks the prompt by ``dataset[:2]`` and removes spaces from predictions
  when ``'zh' in dataset``; here the stem's first two letters (``en``/``zh``), else ``zh`` when
  the stem contains ``zh``, else ``en``.  ``--lang`` overrides it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.errors import UnknownNameError
from ragmeter.io import Row, iter_rows

__all__ = ["COMPONENT", "KINDS", "LANGS", "RgbInstance", "RgbDataset", "load_dataset",
           "kind_from_name", "lang_from_name"]

COMPONENT = "rgb"
KINDS = ("default", "int", "fact")
LANGS = ("en", "zh")


@dataclass(frozen=True)
class RgbInstance:
    """One RGB question with its candidate documents, as in the data file."""

    id: Any  # as in the file (RGB uses integers)
    query: str
    answer: Any  # a string, or a list of components (each a string or a list of alternatives)
    positive: tuple[Any, ...]  # strings; for ``int`` files lists of strings (one per part)
    negative: tuple[str, ...]
    positive_wrong: tuple[str, ...] | None
    place: str  # "line 17" for messages
    fakeanswer: str | None = None  # _fact files: the counterfactual answer (--mode refactor)

    @property
    def key(self) -> str:
        """The id as text: how predictions are matched to instances."""
        return str(self.id)


@dataclass(frozen=True)
class RgbDataset:
    path: str
    name: str  # the file's stem, e.g. "en_fact"
    kind: str
    lang: str
    instances: tuple[RgbInstance, ...]


def _require(row: Row, name: str, *, component: str) -> Any:
    """A required field; the error lists the fields found and the fields expected."""
    if name not in row.data:
        found = ", ".join(sorted(map(str, row.data))[:15]) or "none"
        raise row.error(f"is missing (required). Found fields: {found}.", component=component,
                        field=name, fix="give each row the fields id, query, answer, positive, negative (and positive_wrong for _fact files).")
    return row.data[name]


def kind_from_name(stem: str) -> str | None:
    """evalue.py: ``'_int' in filename`` first, then ``'_fact' in filename``; None otherwise."""
    if "_int" in stem:
        return "int"
    if "_fact" in stem:
        return "fact"
    return None


def lang_from_name(stem: str) -> str:
    head = stem[:2].lower()
    if head in LANGS:
        return head
    return "zh" if "zh" in stem.lower() else "en"


def _kind_from_content(row: Row) -> str:
    pos = row.data.get("positive")
    if isinstance(pos, list) and pos and all(isinstance(p, list) for p in pos):
        return "int"
    if "positive_wrong" in row.data:
        return "fact"
    return "default"


def _str_list(row: Row, name: str, value: Any, *, allow_empty: bool = True) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise row.error(f"is {type(value).__name__}, expected a list of strings.",
                        component=COMPONENT, field=name,
                        fix="give the documents as a JSON list of strings.")
    if not value and not allow_empty:
        raise row.error("is an empty list.", component=COMPONENT, field=name,
                        fix="give at least one document.")
    return tuple(value)


def _check_answer(row: Row, value: Any) -> Any:
    ok = isinstance(value, str) or (
        isinstance(value, list) and len(value) > 0 and all(
            isinstance(c, str) or (isinstance(c, list) and c and
                                   all(isinstance(a, str) for a in c)) for c in value))
    if not ok or value == "":
        raise row.error(
            "must be a non-empty string or a non-empty list whose items are strings or "
            "lists of alternative strings.", component=COMPONENT, field="answer",
            fix='write e.g. "Paris", ["Paris"] or [["Paris", "Paris, France"], "1998"].')
    return value


def _fakeanswer(value: Any) -> str | None:
    """``fakeanswer`` of _fact files (a string; a list is joined), used only by --mode refactor."""
    if value is None:
        return None
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    return str(value)


def _parse(row: Row, kind: str) -> RgbInstance:
    ident = _require(row, "id", component=COMPONENT)
    if not isinstance(ident, (int, str)) or isinstance(ident, bool):
        raise row.error(f"is {type(ident).__name__}, expected an integer or a string.",
                        component=COMPONENT, field="id", fix="give each instance a unique id.")
    query = _require(row, "query", component=COMPONENT)
    if not isinstance(query, str) or not query.strip():
        raise row.error("must be a non-empty string.", component=COMPONENT, field="query",
                        fix="give the question as text.")
    answer = _check_answer(row, _require(row, "answer", component=COMPONENT))
    pos_raw = _require(row, "positive", component=COMPONENT)
    negative = _str_list(row, "negative", _require(row, "negative", component=COMPONENT))
    positive_wrong: tuple[str, ...] | None = None
    if kind == "int":
        if not isinstance(pos_raw, list) or not pos_raw or not all(
                isinstance(g, list) and g and all(isinstance(d, str) for d in g)
                for g in pos_raw):
            raise row.error(
                "must be a non-empty list of non-empty lists of strings for an integration "
                "(_int) file: one group of documents per answer part.", component=COMPONENT,
                field="positive", fix="check the file kind (--kind) or the data.")
        positive: tuple[Any, ...] = tuple(tuple(g) for g in pos_raw)
    else:
        positive = _str_list(row, "positive", pos_raw)
    if kind == "fact":
        positive_wrong = _str_list(row, "positive_wrong",
                                   _require(row, "positive_wrong", component=COMPONENT))
        if len(positive_wrong) != len(positive):
            raise row.error(
                f"has {len(positive_wrong)} documents but positive has {len(positive)}; "
                "evalue.py pairs them by index.", component=COMPONENT, field="positive_wrong",
                fix="give one counterfactual document per positive document.")
    return RgbInstance(id=ident, query=query, answer=answer, positive=positive,
                       negative=negative, positive_wrong=positive_wrong,
                       place=f"{row.unit} {row.number}",
                       fakeanswer=_fakeanswer(row.data.get("fakeanswer")))


def load_dataset(path: Any, *, kind: str | None = None, lang: str | None = None,
                 name: str | None = None) -> RgbDataset:
    """Read and validate an RGB data file; ``kind``/``lang`` override what the name says.

    ``path`` may also be in-memory rows (a list of dicts, a DataFrame, an Arrow table): then
    ``name`` (default ``data``) stands for the file name, from which evalue.py reads the kind
    (``_int``, ``_fact``) and the language (``zh``).
    """
    from ragmeter.io import is_path, source_label

    in_memory = not is_path(path)
    p = Path(name or "data") if in_memory else Path(path)
    if kind is not None and kind not in KINDS:
        raise UnknownNameError("RGB file kind", kind, KINDS, component=COMPONENT)
    if lang is not None and lang not in LANGS:
        raise UnknownNameError("RGB language", lang, LANGS, component=COMPONENT)
    stem = p.name.split(".")[0]
    name_kind = kind or kind_from_name(stem)
    instances: list[RgbInstance] = []
    seen: dict[str, str] = {}
    resolved = name_kind
    for row in iter_rows(path if in_memory else p, component=COMPONENT):
        if resolved is None:
            resolved = _kind_from_content(row)
        inst = _parse(row, resolved)
        if inst.key in seen:
            raise row.error(f"duplicate id {inst.id!r} (first at {seen[inst.key]}).",
                            component=COMPONENT, field="id", fix="give every instance a "
                            "unique id.")
        seen[inst.key] = inst.place
        instances.append(inst)
    assert resolved is not None  # iter_rows raises on an empty file
    return RgbDataset(path=source_label(path) if in_memory else str(p), name=stem, kind=resolved, lang=lang or lang_from_name(stem),
                      instances=tuple(instances))
