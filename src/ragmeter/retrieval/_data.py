"""Reading a run and its judgments, in every shape a retrieval team holds them.

A run (what was retrieved), one of:

* a TREC run file, one line per retrieved document: ``qid Q0 docid rank score tag`` (any file
  whose name is not ``.jsonl/.json/.csv/.parquet``, or a ``.tsv`` without a header);
* rows (JSON Lines, JSON, CSV/TSV, Parquet, a list of dicts, a DataFrame, an Arrow table), one
  per query: ``query_id``, ``retrieved_ids`` (ranked ids) and optional ``scores`` (same
  length); or one per retrieved document: ``query_id``, ``doc_id``, optional ``score`` and
  ``rank``; or one per query with ``retrieved_contexts`` (ranked texts);
* a dict ``{query_id: {doc_id: score}}`` or ``{query_id: [doc_id, ...]}`` (pytrec_eval's).

Judgments, one of:

* a TREC qrels file, ``qid 0 docid relevance`` per line;
* rows: ``query_id`` with ``relevant_ids`` (a list: each grade 1; or a mapping id -> grade), or
  one row per judgment (``query_id``, ``doc_id``, optional ``relevance``, default 1), or
  ``reference_contexts`` (gold passage texts) and/or ``reference`` (the reference answer);
* a dict ``{query_id: {doc_id: grade}}`` or ``{query_id: [doc_id, ...]}``;
* or the run's own rows, when they carry ``relevant_ids`` / ``reference_contexts`` /
  ``reference`` beside what was retrieved (one file).

Columns are renamed with ``fields`` (``--field query_id=qid``); a row without ``query_id`` has
it read from ``id`` (:data:`ALIASES`), so the output of ``ragmeter app run`` is read as it is.
A row whose ``status`` is ``unscored`` (an application that failed on that query, as ``app run``
writes it) makes its query unscored with the row's ``reason``: it is neither a query with
nothing retrieved nor one missing from the run.  In CSV cells a list or a
mapping is written as JSON (``["d1", "d2"]``).  An empty list means nothing retrieved (or
nothing relevant); an empty cell of ``relevant_ids`` means the query is not judged.  Every
problem is an :class:`~ragmeter.errors.InputError` naming the file, the line and the field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.errors import ConfigError, InputError
from ragmeter.io import (
    FieldMap,
    Row,
    as_number,
    as_text,
    is_blank,
    is_path,
    iter_rows,
    iter_text_lines,
    source_label,
)
from ragmeter.retrieval._types import Doc, Query, Settings

__all__ = ["Source", "read", "combine", "COMPONENT", "ALIASES"]

COMPONENT = "retrieval"
ALIASES = {"query_id": ("id",)}  # the name `ragmeter app run` writes

_DATA_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".parquet", ".pq")
_RUN_FIELDS = ("retrieved_ids", "doc_id", "retrieved_contexts")
_JUDGMENT_FIELDS = ("relevant_ids", "reference_contexts", "reference")
# the columns that are not "other fields" of a query (for --by)
_STRUCTURE = {"query_id", "retrieved_ids", "scores", "doc_id", "score", "rank",
              "retrieved_contexts", "relevant_ids", "relevance", "reference_contexts",
              "reference"}


@dataclass
class Source:
    """What one input gave: its queries in order (run side or judgment side filled), its label,
    the rows read, and the run tag of a TREC run file."""

    label: str
    queries: dict[str, Query] = field(default_factory=dict)
    rows: int = 0
    tag: str | None = None
    has_judgments: bool = False


# ------------------------------------------------------------------ shapes


def _is_trec(source: Any, field_map: FieldMap) -> bool:
    """A TREC text file: a name that is no data format, or a ``.tsv`` whose first line is not
    a header (4 or 6 fields, none a column name ragmeter reads)."""
    if not is_path(source):
        return False
    name = Path(source).name.lower()
    if not name.endswith(_DATA_SUFFIXES):
        return True
    if not name.endswith(".tsv") or not Path(source).is_file():
        return False
    for _, text in iter_text_lines(source, COMPONENT):
        parts = text.split()
        if not parts:
            continue
        known = {field_map.source(f) for f in _STRUCTURE} | _STRUCTURE
        return len(parts) in (4, 6) and not known & set(parts)
    return False


def _rows_of_mapping(source: Mapping[Any, Any], role: str) -> Iterator[Row]:
    """pytrec_eval's dicts as rows: ``{qid: {doc: score}}`` / ``{qid: {doc: grade}}`` or
    ``{qid: [doc, ...]}``."""
    for i, (qid, value) in enumerate(source.items()):
        row = Row({}, i, "index", "<dict>")
        if isinstance(value, Mapping):
            ids, numbers = list(value), list(value.values())
        elif isinstance(value, (list, tuple)):
            ids, numbers = list(value), None
        else:
            raise row.error(f"the value of query {qid!r} is a {type(value).__name__}, expected "
                            "a dict {doc_id: number} or a list of doc ids.",
                            component=COMPONENT, fix="give {query_id: {doc_id: score}}.")
        if role == "run":
            data: dict[str, Any] = {"query_id": qid, "retrieved_ids": ids}
            if numbers is not None:
                data["scores"] = numbers
        else:
            data = {"query_id": qid,
                    "relevant_ids": dict(zip(ids, numbers, strict=True)) if numbers is not None
                    else ids}
        yield Row(data, i, "index", "<dict>")


# ------------------------------------------------------------------ values


def _query_id(row: Row, value: Any) -> str:
    if is_blank(value):
        raise row.error("is empty; every row needs its query id.", component=COMPONENT,
                        field="query_id", fix="fill it in, or map your column with --field "
                        "query_id=COLUMN.")
    return as_text(row, "query_id", value, component=COMPONENT).strip()


def _list(row: Row, name: str, value: Any) -> list[Any] | None:
    """A list field (a JSON array in a CSV cell); None for an empty cell or null."""
    if is_blank(value):
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise row.error(f"is {value[:40]!r}, expected a list.", component=COMPONENT,
                            field=name, fix='write it as a JSON array, e.g. ["d1", "d2"].'
                            ) from None
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, Mapping) and name == "relevant_ids":
        return [[k, v] for k, v in value.items()]
    if not isinstance(value, list):
        raise row.error(f"is a {type(value).__name__}, expected a list.", component=COMPONENT,
                        field=name, fix='give a list, e.g. ["d1", "d2"].')
    return value


def _an_id(row: Row, name: str, value: Any, i: int | None = None) -> str:
    where = name if i is None else f"{name}[{i}]"
    if isinstance(value, (list, dict, bool)) or value is None:
        raise row.error(f"is {json.dumps(value, default=str)[:40]}, expected an id (text).",
                        component=COMPONENT, field=where, fix="give ids as text or numbers.")
    text = as_text(row, where, value, component=COMPONENT).strip()
    if not text:
        raise row.error("is an empty id.", component=COMPONENT, field=where,
                        fix="remove it or give the document's id.")
    return text


def _grade(row: Row, name: str, value: Any) -> int:
    """A relevance grade: an integer (trec_eval reads grades as integers)."""
    if not isinstance(value, bool) and isinstance(value, int):
        return value
    try:
        number = float(value) if isinstance(value, (float, str)) and not isinstance(value, bool) \
            else math.nan
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number != int(number):
        raise row.error(f"is {json.dumps(value, default=str)[:40]}, expected an integer "
                        "relevance grade.", component=COMPONENT, field=name,
                        fix="give 0 (not relevant), 1 (relevant) or a higher integer grade.")
    return int(number)


def _texts(row: Row, name: str, value: Any) -> list[str] | None:
    items = _list(row, name, value)
    if items is None:
        return None
    return [as_text(row, f"{name}[{i}]", t, component=COMPONENT, allow_none=True)
            for i, t in enumerate(items)]


# ------------------------------------------------------------------ accumulating


class _Reader:
    """Fills a :class:`Source` row by row, checking duplicates as trec_eval does."""

    def __init__(self, label: str, settings: Settings, role: str) -> None:
        self.source = Source(label)
        self.settings = settings
        self.role = role
        self.first_row: dict[str, int] = {}  # query id -> row number of a per-query row
        self.docs: dict[str, dict[str, Doc]] = {}
        self.seen: dict[str, int] = {}  # query id -> the position of its last document met

    def position(self, qid: str) -> int:
        """The next document's place among those of query ``qid`` as read."""
        n = self.seen[qid] = self.seen.get(qid, -1) + 1
        return n

    def query(self, qid: str, row: Row) -> Query:
        q = self.source.queries.get(qid)
        if q is None:
            q = self.source.queries[qid] = Query(
                qid, fields={k: v for k, v in row.data.items() if k not in _STRUCTURE})
        return q

    def once(self, qid: str, row: Row) -> None:
        """A per-query row: the query must not have another one."""
        if qid in self.first_row:
            raise row.error(f"query {qid!r} appears again (first at {self._unit(row)} "
                            f"{self.first_row[qid]}); a file of one row per query holds each "
                            "query once.", component=COMPONENT, field="query_id",
                            fix="merge the rows, or give one row per document with doc_id.")
        self.first_row[qid] = row.number

    @staticmethod
    def _unit(row: Row) -> str:
        return {"line": "line", "index": "index"}.get(row.unit, "row")

    def add_doc(self, qid: str, row: Row, doc: Doc, name: str) -> None:
        docs = self.docs.setdefault(qid, {})
        seen = docs.get(doc.doc_id)
        if seen is None:
            docs[doc.doc_id] = doc
            return
        if self.settings.duplicates == "error":
            raise row.error(f"document {doc.doc_id!r} is retrieved twice for query {qid!r} "
                            "(trec_eval refuses a run with duplicate documents).",
                            component=COMPONENT, field=name,
                            fix="remove the repeat, or count each document once at its best "
                                "rank with duplicates='first' (--duplicates first).")
        if _ranks_higher(doc, seen, self.settings.order):
            docs[doc.doc_id] = doc

    def add_judgment(self, qid: str, row: Row, doc_id: str, grade: int, name: str) -> None:
        q = self.query(qid, row)
        judgments = q.judgments if q.judgments is not None else {}
        if doc_id in judgments:
            raise row.error(f"document {doc_id!r} is judged twice for query {qid!r} (trec_eval "
                            "refuses duplicate judgments).", component=COMPONENT, field=name,
                            fix="keep one judgment per (query, document).")
        judgments[doc_id] = grade
        q.judgments = judgments
        self.source.has_judgments = True

    def finish(self) -> Source:
        for qid, docs in self.docs.items():
            self.source.queries[qid].docs = list(docs.values())
        return self.source


def _ranks_higher(doc: Doc, seen: Doc, order: str) -> bool:
    """Whether ``doc`` ranks above ``seen`` (the same document met again)."""
    if order == "score" and doc.score is not None and seen.score is not None:
        return doc.score > seen.score
    if doc.rank is not None and seen.rank is not None:
        return doc.rank < seen.rank
    return False


# ------------------------------------------------------------------ rows


def _run_row(reader: _Reader, row: Row, form: str) -> None:
    data = row.data
    qid = _query_id(row, data.get("query_id"))
    q = reader.query(qid, row)
    if data.get("status") == "unscored" and form != "doc_id":
        reader.once(qid, row)
        q.failed = as_text(row, "reason", data.get("reason") or "unscored", component=COMPONENT)
        if reader.role == "run" and any(f in data for f in _JUDGMENT_FIELDS):
            _judgment_row(reader, row, qid, per_query=False)
        return
    if form == "doc_id":
        doc_id = _an_id(row, "doc_id", data.get("doc_id"))
        position = reader.position(qid)
        score = None if is_blank(data.get("score")) else as_number(
            row, "score", data["score"], component=COMPONENT)
        rank = None if is_blank(data.get("rank")) else as_number(
            row, "rank", data["rank"], component=COMPONENT)
        q.docs = []  # in the run; filled by finish()
        reader.add_doc(qid, row, Doc(doc_id, score, rank, position), "doc_id")
        return
    reader.once(qid, row)
    if form == "retrieved_contexts":
        q.contexts = _texts(row, "retrieved_contexts", data.get("retrieved_contexts")) or []
    else:
        ids = _list(row, "retrieved_ids", data.get("retrieved_ids")) or []
        scores = _list(row, "scores", data.get("scores"))
        if scores is not None and len(scores) != len(ids):
            raise row.error(f"has {len(scores)} scores for {len(ids)} retrieved ids.",
                            component=COMPONENT, field="scores",
                            fix="give one score per retrieved id, in the same order.")
        q.docs = []
        reader.docs.setdefault(qid, {})
        if "retrieved_contexts" in data and not is_blank(data["retrieved_contexts"]):
            # both, as `ragmeter app run` writes them: ids rank against id judgments, texts
            # against gold passages and the reference answer (combine() keeps what is judged)
            q.contexts = _texts(row, "retrieved_contexts", data["retrieved_contexts"]) or []
        for i, value in enumerate(ids):
            score = None if scores is None else as_number(
                row, f"scores[{i}]", scores[i], component=COMPONENT)
            reader.add_doc(qid, row, Doc(_an_id(row, "retrieved_ids", value, i), score, None, i),
                           "retrieved_ids")
    if reader.role == "run" and any(f in data for f in _JUDGMENT_FIELDS):
        _judgment_row(reader, row, qid, per_query=False)


def _judgment_row(reader: _Reader, row: Row, qid: str, *, per_query: bool = True) -> None:
    """``relevant_ids``, ``reference_contexts`` and ``reference`` of a per-query row."""
    data = row.data
    if per_query:
        reader.once(qid, row)
    q = reader.query(qid, row)
    relevant = _list(row, "relevant_ids", data.get("relevant_ids"))
    if relevant is not None:
        q.judgments = q.judgments if q.judgments is not None else {}
        reader.source.has_judgments = True
        for i, value in enumerate(relevant):
            if isinstance(value, (list, tuple)) and len(value) == 2:
                doc_id, grade = _an_id(row, "relevant_ids", value[0], i), _grade(
                    row, f"relevant_ids[{i}]", value[1])
            else:
                doc_id, grade = _an_id(row, "relevant_ids", value, i), 1
            reader.add_judgment(qid, row, doc_id, grade, "relevant_ids")
    gold = _texts(row, "reference_contexts", data.get("reference_contexts"))
    if gold is not None:
        q.gold = gold
        reader.source.has_judgments = True
    if not is_blank(data.get("reference")):
        q.answer = as_text(row, "reference", data["reference"], component=COMPONENT)
        reader.source.has_judgments = True


def _qrels_row(reader: _Reader, row: Row, form: str) -> None:
    qid = _query_id(row, row.data.get("query_id"))
    if form == "doc_id":
        reader.query(qid, row)
        doc_id = _an_id(row, "doc_id", row.data.get("doc_id"))
        value = row.data.get("relevance")
        grade = 1 if "relevance" not in row.data else _grade(row, "relevance", value)
        reader.add_judgment(qid, row, doc_id, grade, "doc_id")
    else:
        _judgment_row(reader, row, qid)


def _form(row: Row, role: str, field_map: FieldMap) -> str:
    """Which shape the rows of a source have, from its first row."""
    choices = _RUN_FIELDS if role == "run" else ("relevant_ids", "doc_id", *_JUDGMENT_FIELDS[1:])
    for name in choices:
        if name in row.data:
            return name
    found = ", ".join(sorted(map(str, row.data))[:15]) or "none"
    what = "what was retrieved" if role == "run" else "the judgments"
    wanted = ", ".join(choices)
    raise row.error(f"has none of the fields that hold {what} ({wanted}). Found fields: "
                    f"{found}.", component=COMPONENT,
                    fix=f"map your column, e.g. --field {choices[0]}=COLUMN.")


def _read_rows(source: Any, reader: _Reader, field_map: FieldMap) -> Source:
    rows = (_rows_of_mapping(source, reader.role) if isinstance(source, Mapping)
            else iter_rows(source, component=COMPONENT, field_map=field_map))
    form = None
    for row in rows:
        reader.source.rows += 1
        if "query_id" not in row.data:
            found = ", ".join(sorted(map(str, row.data))[:15]) or "none"
            src = field_map.source("query_id")
            raise row.error(f"is missing (required). Found fields: {found}.",
                            component=COMPONENT, field="query_id",
                            fix="map your column with --field query_id=COLUMN." if src ==
                            "query_id" else f"the data has no column {src!r}; check --field.")
        form = form or _form(row, reader.role, field_map)
        if form not in row.data:
            raise row.error(f"is missing; the first row gave {form}, so every row needs it.",
                            component=COMPONENT, field=form,
                            fix="give every row the same fields.")
        if reader.role == "run":
            _run_row(reader, row, form)
        else:
            _qrels_row(reader, row, form)
    if reader.source.rows == 0:
        raise InputError("has no rows.", component=COMPONENT, path=reader.source.label)
    return reader.finish()


# ------------------------------------------------------------------ TREC files


def _line(path: Any, number: int) -> Row:
    """Line ``number`` of a TREC file, for its errors."""
    return Row({}, number, "line", str(path))


def _trec_lines(path: Any) -> Iterator[tuple[Row, list[str]]]:
    """The fields of every line but blank ones and ``#`` comments (trec_eval 10 skips them)."""
    for number, text in iter_text_lines(path, COMPONENT):
        parts = text.split()
        if parts and not parts[0].startswith("#"):
            yield _line(path, number), parts


def _read_trec_run(path: Any, reader: _Reader) -> Source:
    """A TREC run file.  The loop is the hot path of a large run (a million lines in a few
    seconds): a line's :class:`Row` is made only to report a problem or a repeat."""
    given = reader.settings.order == "given"
    docs_of = reader.docs
    lines = 0
    for number, text in iter_text_lines(path, COMPONENT):
        parts = text.split()
        if not parts or parts[0].startswith("#"):
            continue
        lines += 1
        if len(parts) < 6:
            hint = (" It looks like a qrels line (query_id 0 doc_id relevance): give it as "
                    "the judgments (qrels=, --qrels)." if len(parts) == 4 else "")
            raise _line(path, number).error(
                f"has {len(parts)} fields, expected the 6 of a TREC run line "
                f'"query_id Q0 doc_id rank score run_tag".{hint}', component=COMPONENT,
                fix="write one retrieved document per line.")
        qid, _, doc_id, rank_text, score_text, reader.source.tag = parts[:6]
        try:
            score = float(score_text)
        except ValueError:
            score = math.nan
        if not math.isfinite(score):  # as_number says what is wrong with it
            as_number(_line(path, number), "score", score_text, component=COMPONENT)
        try:
            rank: float | None = float(rank_text)
        except ValueError:
            rank = None  # trec_eval ignores the rank column
            if given:
                raise _line(path, number).error(
                    f"is {rank_text!r}, expected a number (order='given' ranks by it).",
                    component=COMPONENT, field="rank", fix="write the rank (1, 2, ...).") from None
        docs = docs_of.get(qid)
        if docs is None:
            docs = docs_of[qid] = {}
            reader.query(qid, _line(path, number)).docs = []
        position = reader.seen[qid] = reader.seen.get(qid, -1) + 1
        doc = Doc(doc_id, score, rank, position)
        if doc_id in docs:
            reader.add_doc(qid, _line(path, number), doc, "doc_id")
        else:
            docs[doc_id] = doc
    reader.source.rows = lines
    if lines == 0:
        raise InputError("has no run lines.", component=COMPONENT, path=str(path),
                         fix='write one "query_id Q0 doc_id rank score run_tag" per line.')
    return reader.finish()


def _read_trec_qrels(path: Any, reader: _Reader) -> Source:
    for row, parts in _trec_lines(path):
        reader.source.rows += 1
        if len(parts) != 4:
            hint = (" It looks like a run line (query_id Q0 doc_id rank score run_tag): give "
                    "it as the run." if len(parts) == 6 else "")
            raise row.error(f"has {len(parts)} fields, expected the 4 of a TREC qrels line "
                            f'"query_id 0 doc_id relevance".{hint}', component=COMPONENT,
                            fix="write one judgment per line.")
        qid, _, doc_id, grade = parts
        reader.query(qid, row)
        reader.add_judgment(qid, row, doc_id, _grade(row, "relevance", grade), "doc_id")
    if reader.source.rows == 0:
        raise InputError("has no qrels lines.", component=COMPONENT, path=str(path),
                         fix='write one "query_id 0 doc_id relevance" per line.')
    return reader.source


# ------------------------------------------------------------------ entry points


def read(source: Any, settings: Settings, field_map: FieldMap, role: str) -> Source:
    """One input: for ``role="run"`` what was retrieved per query (and the judgments its rows
    carry, if any), for ``role="qrels"`` the judgments per query."""
    reader = _Reader(source_label(source) if not isinstance(source, Mapping) else "<dict>",
                     settings, role)
    if _is_trec(source, field_map):
        return (_read_trec_run if role == "run" else _read_trec_qrels)(source, reader)
    return _read_rows(source, reader, field_map)


def combine(run: Source, qrels: Source | None) -> tuple[dict[str, Query], list[str]]:
    """Every query of the run, then those only judged, with their judgments; and notes.

    Judgments come from ``qrels`` when given (those the run's rows carry are then ignored,
    with a note), else from the run's rows."""
    notes: list[str] = []
    queries = dict(run.queries)
    if qrels is None:
        if not run.has_judgments:
            raise ConfigError(
                f"retrieval: {run.label} holds what was retrieved but no judgments "
                "(relevant_ids, reference_contexts or reference). Fix: give the judgments "
                "with qrels= (on the command line: --qrels QRELS).")
    else:
        if run.has_judgments:
            notes.append(f"the judgments in {run.label} were ignored: those of {qrels.label} "
                         "were given")
        for q in queries.values():
            q.judgments, q.gold, q.answer = None, None, None
        for qid, judged in qrels.queries.items():
            found = queries.get(qid)
            if found is None:
                found = queries[qid] = Query(qid, fields=dict(judged.fields))
            else:
                found.fields = {**judged.fields, **found.fields}
            found.judgments, found.gold, found.answer = (judged.judgments, judged.gold,
                                                         judged.answer)
    for q in queries.values():
        if q.docs is not None and q.contexts is not None:  # a row with ids and texts
            if q.judgments is None and q.gold is not None:
                q.docs = None  # gold passages are texts: rank the texts
        if q.docs is not None and q.gold is not None and q.judgments is None:
            raise ConfigError(
                f"retrieval: query {q.query_id!r} has retrieved document ids but gold passage "
                "texts (reference_contexts). Fix: give both as ids (retrieved_ids and "
                "relevant_ids) or both as texts (retrieved_contexts and reference_contexts).")
        if q.contexts is not None and q.judgments is not None and q.docs is None:
            raise ConfigError(
                f"retrieval: query {q.query_id!r} has retrieved context texts but judgments "
                "by document id. Fix: give both as ids (retrieved_ids and relevant_ids) or "
                "both as texts (retrieved_contexts and reference_contexts).")
    return queries, notes
