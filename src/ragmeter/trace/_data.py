"""Reading TRACe rows: sentence labels (for scoring) and (question, documents, response) rows
(for labelling), in Parquet, JSON Lines, JSON or CSV.

Parquet files are read column-selectively (RAGBench's files carry long explanation texts that
scoring never needs).  List fields may arrive as lists, numpy arrays (Parquet) or JSON text
(CSV).  Every problem is an :class:`~ragmeter.errors.InputError` naming file, row and field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.errors import InputError
from ragmeter.io import FieldMap, Row, as_text, detect_format, is_blank, is_path, iter_rows

__all__ = [
    "COMPONENT",
    "LABEL_FIELDS",
    "BASELINE_COLUMNS",
    "LabelRow",
    "SourceRow",
    "iter_trace_rows",
    "iter_sources",
    "parse_label_row",
    "parse_source_row",
    "row_id",
    "JUDGE_FIELDS",
    "judge_descriptor",
]

COMPONENT = "trace"
LABEL_FIELDS = ("documents_sentences", "all_relevant_sentence_keys",
                "all_utilized_sentence_keys", "unsupported_response_sentence_keys",
                "sentence_support_information")
# What a labels row of `trace label` says about the judge that wrote it.
JUDGE_FIELDS = ("judge", "prompt_version", "strategy", "threshold")
# Released baseline predictions in RAGBench's files: column -> (judge, TRACe metric).
BASELINE_COLUMNS: dict[str, tuple[str, str]] = {
    "gpt3_adherence": ("gpt-3.5 (released)", "adherence"),
    "gpt3_context_relevance": ("gpt-3.5 (released)", "relevance"),
    "gpt35_utilization": ("gpt-3.5 (released)", "utilization"),
    "ragas_faithfulness": ("ragas (released)", "adherence"),
    "ragas_context_relevance": ("ragas (released)", "relevance"),
    "trulens_groundedness": ("trulens (released)", "adherence"),
    "trulens_context_relevance": ("trulens (released)", "relevance"),
}


def iter_trace_rows(path: Any, columns: Sequence[str] | None = None, *,
                    field_map: FieldMap | None = None) -> Iterator[Row]:
    """Rows of ``path`` (a file, or in-memory data: a list of dicts, a DataFrame or an Arrow
    table); for a Parquet file only ``columns`` (those present) are read."""
    fm = field_map or FieldMap()
    if not is_path(path):
        yield from iter_rows(path, component=COMPONENT, field_map=fm)
        return
    p = Path(path)
    if columns is not None and p.exists() and p.is_file() and detect_format(p) == "parquet":
        from ragmeter.io import import_parquet

        pq = import_parquet()
        try:
            pf = pq.ParquetFile(p)
        except Exception as exc:  # pyarrow raises several unrelated types for bad files
            raise InputError(f"is not a readable Parquet file ({exc}).", component=COMPONENT,
                             path=p, fix="check that the file is complete and really Parquet.",
                             ) from None
        present = set(pf.schema_arrow.names)
        wanted = [c for c in dict.fromkeys(fm.source(c) for c in columns) if c in present]
        number = 0
        for batch in pf.iter_batches(batch_size=1024, columns=wanted or None):
            for rec in batch.to_pylist():
                number += 1
                yield Row(fm.apply(rec), number, "row", str(p))
        if number == 0:
            raise InputError("has no rows.", component=COMPONENT, path=p,
                             fix="give a file with at least one row.")
        return
    yield from iter_rows(p, component=COMPONENT, field_map=fm)


def judge_descriptor(data: Any) -> str | None:
    """The judge of a labels row as a signature names it: ``judge@prompt_version`` (for the
    detector, its version and coefficients fingerprint), with the threshold of the choice
    or nli strategy; None for rows no judge of ragmeter wrote (e.g. RAGBench's annotations)."""
    judge = data.get("judge")
    if is_blank(judge) or not isinstance(judge, str):
        return None
    version = data.get("prompt_version")
    text = f"{judge}@{version}" if isinstance(version, str) and version.strip() else judge
    threshold = data.get("threshold")
    if data.get("strategy") in ("choice", "nli") and isinstance(threshold, (int, float)):
        text += f",threshold={threshold}"
    return text


def row_id(row: Row) -> str:
    """The row's ``id`` as text, or ``row-N`` when it has none."""
    value = row.data.get("id")
    if is_blank(value):
        return f"{row.unit}-{row.number}"
    return str(value)


def _as_list(row: Row, name: str, value: Any) -> list[Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise row.error(f"is text that is not a JSON list ({value[:40]!r}).",
                            component=COMPONENT, field=name,
                            fix="give a list, e.g. [\"0a\", \"1c\"].") from None
    if hasattr(value, "tolist"):
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise row.error(f"is a {type(value).__name__}, expected a list.", component=COMPONENT,
                        field=name, fix="give a list, e.g. [\"0a\", \"1c\"].")
    return list(value)


def _keys(row: Row, name: str, value: Any) -> tuple[str, ...]:
    items = _as_list(row, name, value)
    for k, item in enumerate(items):
        if not isinstance(item, str):
            raise row.error(f"item {k} is {json.dumps(item, default=str)[:30]}, expected a "
                            "sentence key string.", component=COMPONENT, field=name,
                            fix="give sentence keys such as \"0a\" (documents) or \"b\".")
    return tuple(items)


def _keyed_sentences(row: Row, name: str, value: Any) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for k, pair in enumerate(_as_list(row, name, value)):
        if hasattr(pair, "tolist"):
            pair = pair.tolist()
        if isinstance(pair, dict) and "key" in pair and "text" in pair:
            pair = [pair["key"], pair["text"]]
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2
                and all(isinstance(x, str) for x in pair)):
            raise row.error(f"sentence {k} is {json.dumps(pair, default=str)[:40]}, expected a "
                            "[key, text] pair.", component=COMPONENT, field=name,
                            fix="give [[\"0a\", \"First sentence.\"], ...].")
        out.append((pair[0], pair[1]))
    return out


@dataclass(frozen=True)
class LabelRow:
    """What scoring needs of one row; ``unscored`` is set for rows that cannot be scored."""

    id: str
    row: int
    n_document_sentences: int
    relevant_keys: tuple[str, ...] | None  # None: not labelled
    utilized_keys: tuple[str, ...] | None
    unsupported_keys: tuple[str, ...] | None
    unscored: tuple[str, str] | None = None  # (reason, detail)
    adherence_probability: float | None = None
    # per response sentence, from sentence_support_information (None: the field is absent)
    fully_supported: tuple[bool | None, ...] | None = None


def _documents_sentences(row: Row) -> list[list[tuple[str, str]]]:
    docs = _as_list(row, "documents_sentences", row.data["documents_sentences"])
    return [_keyed_sentences(row, "documents_sentences", d) for d in docs]


def parse_label_row(row: Row) -> LabelRow:
    """Validate and extract the label fields of one row (see module docstring).

    ``documents_sentences`` is required.  A label field that is null (a task the judge was
    not asked, e.g. ``trace label --tasks support``) leaves the metrics that need it
    uncomputed; a row with no usable label at all is unscored (``missing_labels``).
    """
    rid = row_id(row)
    status = row.data.get("status")
    if status == "unscored":
        return LabelRow(rid, row.number, 0, None, None, None, unscored=(
            str(row.data.get("reason") or "unscored"), str(row.data.get("detail") or "")))
    label_fields = LABEL_FIELDS[1:]
    if "documents_sentences" not in row.data or not any(f in row.data for f in label_fields):
        found = ", ".join(sorted(map(str, row.data))[:15]) or "none"
        missing = "documents_sentences" if "documents_sentences" not in row.data \
            else "all_relevant_sentence_keys"
        raise row.error(f"is missing (required). Found fields: {found}.", component=COMPONENT,
                        field=missing,
                        fix="give RAGBench's label columns (see docs/trace.md), or produce "
                            "them with `ragmeter trace label`.")
    if row.data["documents_sentences"] is None:
        return LabelRow(rid, row.number, 0, None, None, None, unscored=(
            "missing_labels", f"documents_sentences is null at {row.unit} {row.number}"))
    docs = _documents_sentences(row)
    n = sum(len(d) for d in docs)
    raw_rel = row.data.get("all_relevant_sentence_keys")
    raw_util = row.data.get("all_utilized_sentence_keys")
    relevant = None if raw_rel is None else _keys(row, "all_relevant_sentence_keys", raw_rel)
    utilized = None if raw_util is None else _keys(row, "all_utilized_sentence_keys", raw_util)
    raw_unsup = row.data.get("unsupported_response_sentence_keys")
    info = row.data.get("sentence_support_information")
    unsupported: tuple[str, ...] | None = None
    pairs: list[tuple[str, Any]] | None = None
    if info is not None:
        pairs = []
        for k, item in enumerate(_as_list(row, "sentence_support_information", info)):
            if not isinstance(item, dict) or "response_sentence_key" not in item:
                raise row.error(f"item {k} has no response_sentence_key.", component=COMPONENT,
                                field="sentence_support_information",
                                fix="give objects with response_sentence_key and "
                                    "fully_supported.")
            from ragmeter.trace._parse import ParseFailure, read_verdict

            full = read_verdict(item.get("fully_supported"))
            if isinstance(full, ParseFailure):  # "maybe", 2 ...: never read as false (24.6)
                return LabelRow(rid, row.number, 0, None, None, None, unscored=(
                    full.reason, f"sentence_support_information item {k}: fully_supported "
                                 f"{full.detail} at {row.unit} {row.number}"))
            pairs.append((str(item["response_sentence_key"]), full))
    if raw_unsup is not None:
        unsupported = _keys(row, "unsupported_response_sentence_keys", raw_unsup)
    elif pairs is not None:
        from ragmeter.trace._metrics import unsupported_keys

        unsupported = unsupported_keys(pairs)
    if relevant is None and utilized is None and unsupported is None:
        return LabelRow(rid, row.number, n, None, None, None, unscored=(
            "missing_labels", f"every label field is null at {row.unit} {row.number}"))
    if n == 0 and unsupported is None:
        return LabelRow(rid, row.number, 0, relevant, utilized, unsupported, unscored=(
            "no_document_sentences", f"documents_sentences is empty at {row.unit} {row.number}"))
    prob = row.data.get("adherence_probability")
    prob_f = float(prob) if isinstance(prob, (int, float)) and not isinstance(prob, bool) \
        else None
    return LabelRow(rid, row.number, n, relevant, utilized, unsupported,
                    adherence_probability=prob_f,
                    fully_supported=None if pairs is None else tuple(f for _, f in pairs))


@dataclass(frozen=True)
class SourceRow:
    """A row to label: question, documents (plain or already split and keyed), response."""

    id: str
    row: int
    question: str
    documents: tuple[str, ...]
    response: str
    documents_sentences: tuple[tuple[tuple[str, str], ...], ...] | None = None
    response_sentences: tuple[tuple[str, str], ...] | None = None
    # (reason, detail) of a row that carries no answer to label: its ``status`` is unscored
    # (an application that failed on it, as `ragmeter app run` writes it)
    unscored: tuple[str, str] | None = None


def parse_source_row(row: Row) -> SourceRow:
    """``question``, ``documents`` (a list of texts, or one text; else ``retrieved_contexts``,
    as ``ragmeter app run`` writes them) and ``response``; the RAGBench split columns
    ``documents_sentences``/``response_sentences`` are used when present so that keys match
    the annotation exactly.  A row whose ``status`` is ``unscored`` is kept unscored with its
    ``reason`` (nothing is asked of the judge)."""
    if row.data.get("status") == "unscored":
        question = row.data.get("question")
        return SourceRow(row_id(row), row.number,
                         question if isinstance(question, str) else "", (), "",
                         unscored=(str(row.data.get("reason") or "unscored"),
                                   str(row.data.get("detail") or "")))
    for name in ("question", "response"):
        if name not in row.data:
            found = ", ".join(sorted(map(str, row.data))[:15]) or "none"
            raise row.error(f"is missing (required). Found fields: {found}.",
                            component=COMPONENT, field=name,
                            fix=f"add the field or map it with --field {name}=COLUMN.")
    question = as_text(row, "question", row.data["question"], component=COMPONENT)
    response = as_text(row, "response", row.data["response"], component=COMPONENT,
                       allow_none=True)
    docs_sent = None
    if not is_blank(row.data.get("documents_sentences")):
        docs_sent = tuple(tuple(d) for d in _documents_sentences(row))
    resp_sent = None
    if not is_blank(row.data.get("response_sentences")):
        resp_sent = tuple(_keyed_sentences(row, "response_sentences",
                                           row.data["response_sentences"]))
    raw_docs = row.data.get("documents")
    if raw_docs is None:
        raw_docs = row.data.get("retrieved_contexts")
    if raw_docs is None and docs_sent is None:
        raise row.error("is missing (required).", component=COMPONENT, field="documents",
                        fix="give a list of document texts (documents or retrieved_contexts), "
                            "or map your column with --field documents=COLUMN.")
    documents: tuple[str, ...] = ()
    if raw_docs is not None:
        if isinstance(raw_docs, str) and not raw_docs.lstrip().startswith("["):
            documents = (raw_docs,)
        else:
            items = _as_list(row, "documents", raw_docs)
            for k, d in enumerate(items):
                if not isinstance(d, str):
                    raise row.error(f"item {k} is not text.", component=COMPONENT,
                                    field="documents", fix="give a list of strings.")
            documents = tuple(items)
    return SourceRow(row_id(row), row.number, question, documents, response, docs_sent,
                     resp_sent)


SOURCE_COLUMNS = ("id", "question", "documents", "response", "documents_sentences",
                  "response_sentences", "retrieved_contexts", "status", "reason", "detail")


def iter_sources(path: Any, *, field_map: FieldMap | None = None,
                 limit: int | None = None) -> Iterator[SourceRow]:
    """The (question, documents, response) rows of ``path``, read as they are needed, the
    first ``limit`` only."""
    n = 0
    for row in iter_trace_rows(path, SOURCE_COLUMNS, field_map=field_map):
        yield parse_source_row(row)
        n += 1
        if limit and n >= limit:
            break


def read_sources(path: Any, *, field_map: FieldMap | None = None,
                 limit: int | None = None) -> list[SourceRow]:
    """The (question, documents, response) rows of ``path``, the first ``limit`` only."""
    return list(iter_sources(path, field_map=field_map, limit=limit))
