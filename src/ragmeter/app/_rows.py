"""The test set in, the output rows out.  Pure but for reading the test set.

**The test set**: any question file: ``rubric build``'s output, the built-in samples, your own
rows (JSON Lines, JSON, CSV, Parquet, a list of dicts, a DataFrame).  Read under these names,
each also found under the aliases listed (``--field NAME=COLUMN`` maps any other column):

=============  ==============================================================================
``id``         ``query_id``, ``sample_id``, ``question_id``, ``qid`` (default: the row number)
``question``   ``query``, ``user_input``, ``instruction``, ``input`` (required)
``reference``  ``answer``, ``gold_answer``, ``true_answer``, ``reference_answer``,
               ``ground_truth``, ``expected_output`` (optional: the reference answer)
``lang``       ``sample_lang``, ``language`` (optional)
=============  ==============================================================================

**The output**: one row per test-set row, in order, with these columns (docs/app.md):
``id``, ``question``, ``reference`` and ``lang`` (when the test set has them), the test set's
other columns as they are (``relevant_ids``, ``reference_contexts``, ``topic`` ...; not those
that describe an earlier answer, :data:`ANSWER_SIDE`), then ``system`` (the application's
label), ``response`` (its answer), ``retrieved_contexts`` and ``retrieved_ids`` (when it
returns them), ``status`` (``ok`` or ``unscored``), ``reason`` and ``detail``, ``latency_ms``
and ``cached``.  ``trace label``, ``retrieval score``, ``rubric judge``, ``multilingual score``
and ``criteria judge`` read these names as they are.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ragmeter.app._reply import Reply
from ragmeter.app._types import Case
from ragmeter.io import FieldMap, Row, as_text, is_blank, iter_rows

__all__ = ["read_cases", "output_row", "ALIASES", "ANSWER_SIDE", "OUTPUT_COLUMNS", "COMPONENT",
           "missing_field"]

COMPONENT = "app"
ALIASES: Mapping[str, tuple[str, ...]] = {
    "id": ("query_id", "sample_id", "question_id", "qid"),
    "question": ("query", "user_input", "instruction", "input"),
    "reference": ("answer", "gold_answer", "true_answer", "reference_answer", "ground_truth",
                  "expected_output"),
    "lang": ("sample_lang", "language"),
}
# Columns of a test set that describe an earlier answer (a previous app run, a scored or
# labelled file): not carried into the output, whose own columns replace them.
ANSWER_SIDE = frozenset({
    "system", "response", "pred_answer", "generated_answer", "prediction", "documents",
    "documents_sentences", "response_sentences", "retrieved_contexts", "retrieved_ids", "scores",
    "context_scores", "status", "reason", "detail", "latency_ms", "cached", "usage",
    "all_relevant_sentence_keys", "all_utilized_sentence_keys",
    "unsupported_response_sentence_keys", "sentence_support_information"})
OUTPUT_COLUMNS = ("system", "response", "retrieved_contexts", "retrieved_ids", "status",
                  "reason", "detail", "latency_ms", "cached")


def _consumed(raw: Mapping[str, Any], fm: FieldMap) -> set[str]:
    """The columns of ``raw`` read as one of the canonical fields (so not kept as others)."""
    used = {src for canonical, src in fm.mapping.items() if canonical in ALIASES}
    for canonical, names in ALIASES.items():
        if canonical in raw or canonical in fm.mapping:
            continue
        first = next((n for n in names if n in raw), None)
        if first is not None:
            used.add(first)
    return used


def _reference(value: Any) -> Any:
    """A reference answer as given; a list of one text becomes that text (RGB's gold lists)."""
    if isinstance(value, (list, tuple)) and len(value) == 1 and isinstance(value[0], str):
        return value[0]
    if isinstance(value, tuple):
        return list(value)
    return value


def missing_field(row: Row, name: str, fix: str) -> Exception:
    found = ", ".join(sorted(map(str, row.data))[:15]) or "none"
    return row.error(f"is missing (required). Found fields: {found}.", component=COMPONENT,
                     field=name, fix=fix)


def _case(raw: Row, fm: FieldMap) -> Case:
    row = Row(fm.apply(raw.data), raw.number, raw.unit, raw.path)
    data = row.data
    if "question" not in data:
        raise missing_field(row, "question", "give each row a question, or map your column "
                                             "with --field question=COLUMN.")
    question = as_text(row, "question", data["question"], component=COMPONENT)
    if not question.strip():
        raise row.error("is empty.", component=COMPONENT, field="question",
                        fix="give every row a question.")
    rid = data.get("id")
    if isinstance(rid, (dict, list, bool)):
        raise row.error("is not a string or number.", component=COMPONENT, field="id",
                        fix='give a string such as "q17".')
    case_id = str(row.number) if is_blank(rid) else str(rid)
    reference = None if is_blank(data.get("reference")) else _reference(data["reference"])
    lang = None if is_blank(data.get("lang")) else as_text(row, "lang", data["lang"],
                                                           component=COMPONENT)
    skip = _consumed(raw.data, fm) | set(ALIASES) | ANSWER_SIDE
    extra = {k: v for k, v in data.items() if k not in skip}
    values = {**data, "id": case_id, "question": question}
    if reference is not None:
        values["reference"] = reference
    return Case(case_id, question, reference, lang, extra, values, row.number, row.unit,
                row.path)


def read_cases(data: Any, field_map: FieldMap, limit: int | None = None) -> list[Case]:
    """The test set's rows as :class:`Case` objects (the first ``limit``); an
    :class:`~ragmeter.errors.InputError` names the row of a missing question or a repeated id."""
    cases: list[Case] = []
    seen: dict[str, int] = {}
    rows: Iterator[Row] = iter_rows(data, component=COMPONENT)
    for raw in rows:
        case = _case(raw, field_map)
        if case.id in seen:
            raise raw.error(f"repeats id {case.id!r} (first on {raw.unit} {seen[case.id]}).",
                            component=COMPONENT, field="id",
                            fix="give every row its own id: the output rows are matched to "
                                "judgments and labels by it.")
        seen[case.id] = case.number
        cases.append(case)
        if limit is not None and len(cases) >= limit:
            break
    return cases


def output_row(case: Case, system: str, reply: Reply, outcome: Any,
               columns: Sequence[str]) -> dict[str, Any]:
    """The output row of one test-set row (see the module docstring); ``columns`` says whether
    ``retrieved_contexts`` and ``retrieved_ids`` are written."""
    out: dict[str, Any] = {"id": case.id, "question": case.question}
    if case.reference is not None:
        out["reference"] = case.reference
    if case.lang is not None:
        out["lang"] = case.lang
    out.update(case.extra)
    out["system"] = system
    out["response"] = reply.answer
    if "retrieved_contexts" in columns:
        out["retrieved_contexts"] = reply.contexts
    if "retrieved_ids" in columns:
        out["retrieved_ids"] = reply.ids
    ok = outcome.ok and reply.ok
    out["status"] = "ok" if ok else "unscored"
    out["reason"] = None if ok else (reply.reason if outcome.ok else outcome.reason)
    out["detail"] = None if ok else (reply.detail if outcome.ok else outcome.detail)
    response = outcome.response
    out["latency_ms"] = round(response.latency_ms, 3) if response is not None else None
    out["cached"] = bool(outcome.cached)
    return out
