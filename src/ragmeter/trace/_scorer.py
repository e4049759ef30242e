"""``trace score``: the four TRACe metrics per row from sentence labels, and their aggregates.

With ``definitions="writeup"`` (opt-in) the metrics are those of the GPT-labelling write-up
(:func:`ragmeter.trace._metrics.writeup_scores`) plus their ``average``.

Per row: relevance, utilization, completeness and adherence computed by
:mod:`ragmeter.trace._metrics` from ``documents_sentences``, ``all_relevant_sentence_keys``,
``all_utilized_sentence_keys`` and ``unsupported_response_sentence_keys`` (or, for labels
without that list, ``sentence_support_information``).  Aggregates: mean, sample std, n and a
percentile-bootstrap 95% CI of each metric (adherence as the share of adherent rows), with the
coverage of the file (rows scored, rows unscored by reason).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ragmeter import stats
from ragmeter.io import FieldMap, Row
from ragmeter.signature import Signature
from ragmeter.trace._data import (
    COMPONENT,
    JUDGE_FIELDS,
    LABEL_FIELDS,
    LabelRow,
    iter_trace_rows,
    judge_descriptor,
    parse_label_row,
)
from ragmeter.trace._metrics import (
    SCORE_METRICS,
    TraceLabels,
    adherence,
    completeness,
    constants_setting,
    relevance,
    table_for,
    trace_scores,
    utilization,
    writeup_denominator,
    writeup_scores,
)

__all__ = ["ScoreConfig", "ScoreResult", "ScoredRow", "score_rows", "score_file",
           "score_label_rows"]

DEFINITIONS = ("ragbench", "writeup")
SCORE_COLUMNS = ("id", "status", "reason", "detail", "adherence_probability", *LABEL_FIELDS)


@dataclass(frozen=True)
class ScoreConfig:
    ci: bool = True
    n_resamples: int = stats.DEFAULT_RESAMPLES
    seed: int = stats.DEFAULT_SEED
    field_map: FieldMap = field(default_factory=FieldMap)
    definitions: str = "ragbench"  # or "writeup" (opt-in, see module docstring)

    def __post_init__(self) -> None:
        if self.definitions not in DEFINITIONS:
            from ragmeter.errors import UnknownNameError

            raise UnknownNameError("TRACe definitions", self.definitions, DEFINITIONS,
                                   component=COMPONENT)

    @property
    def metrics(self) -> tuple[str, ...]:
        """The per-row metrics of these definitions, in their table's order."""
        return tuple(m.name for m in table_for(self.definitions) if not m.judged)

    def signature(self, judges: Iterable[str] = ()) -> Signature:
        """The metric version and constants of the definitions' table (RAGBench's metrics
        have none, so their signature is unchanged), the bootstrap, and the judge(s) that
        wrote the labels (``judges``: :func:`~ragmeter.trace._data.judge_descriptor`)."""
        table = table_for(self.definitions)
        settings: dict[str, Any] = {"keys": "ragbench",
                                    "constants": constants_setting(table, self.metrics)}
        if self.definitions != "ragbench":
            settings["definitions"] = self.definitions
        if self.ci:
            settings["bootstrap"] = f"{self.n_resamples}@seed{self.seed}"
        if judges:
            settings["judge"] = ",".join(sorted(set(judges)))
        return Signature.make(COMPONENT, table.version, settings)


@dataclass(frozen=True)
class ScoredRow:
    """One row's result: values when scored, a reason when not."""

    id: str
    row: int
    relevance: float | None = None
    utilization: float | None = None
    completeness: float | None = None
    adherence: bool | None = None
    adherence_probability: float | None = None
    reason: str | None = None
    detail: str | None = None
    average: float | None = None  # the write-up variant only

    @property
    def ok(self) -> bool:
        return self.reason is None

    def to_item(self) -> dict[str, Any]:
        if not self.ok:
            return {"id": self.id, "row": self.row, "status": "unscored",
                    "reason": self.reason, "detail": self.detail}
        item: dict[str, Any] = {"id": self.id, "row": self.row, "status": "ok",
                                **{m: getattr(self, m) for m in SCORE_METRICS}}
        if self.average is not None:
            item["average"] = self.average
        if self.adherence_probability is not None:
            item["adherence_probability"] = self.adherence_probability
        return item


def score_label_row(label: LabelRow) -> ScoredRow:
    """Score one parsed row (pure)."""
    if label.unscored is not None:
        return ScoredRow(label.id, label.row, reason=label.unscored[0],
                         detail=label.unscored[1])
    n = label.n_document_sentences
    rel, util, unsup = label.relevant_keys, label.utilized_keys, label.unsupported_keys
    if n > 0 and rel is not None and util is not None and unsup is not None:
        s = trace_scores(TraceLabels(n, rel, util, unsup))
        return ScoredRow(label.id, label.row, s.relevance, s.utilization, s.completeness,
                         s.adherence, label.adherence_probability)
    # Partial labels (a task not asked of the judge): compute what the labels allow.
    return ScoredRow(
        label.id, label.row,
        relevance=relevance(rel, n) if rel is not None and n > 0 else None,
        utilization=utilization(util, n) if util is not None and n > 0 else None,
        completeness=completeness(rel, util) if rel is not None and util is not None else None,
        adherence=adherence(unsup) if unsup is not None else None,
        adherence_probability=label.adherence_probability)


def score_label_row_writeup(label: LabelRow) -> ScoredRow:
    """Score one parsed row with the write-up's definitions (pure).  Adherence needs
    ``sentence_support_information`` (its ``fully_supported`` values); without it the row's
    adherence and average are not labelled."""
    if label.unscored is not None:
        return ScoredRow(label.id, label.row, reason=label.unscored[0],
                         detail=label.unscored[1])
    rel, util, full = label.relevant_keys, label.utilized_keys, label.fully_supported
    if rel is None or util is None:
        return ScoredRow(label.id, label.row, reason="missing_labels",
                         detail="the write-up's metrics need both relevant and utilized keys")
    s = writeup_scores(rel, util, full or (), denominator=writeup_denominator())
    if full is None:
        return ScoredRow(label.id, label.row, s.relevance, s.utilization, s.completeness,
                         None, label.adherence_probability)
    return ScoredRow(label.id, label.row, s.relevance, s.utilization, s.completeness,
                     s.adherence == 1.0, label.adherence_probability, average=s.average)


def score_label_rows(labels: Iterable[LabelRow], definitions: str = "ragbench"
                     ) -> list[ScoredRow]:
    one = score_label_row_writeup if definitions == "writeup" else score_label_row
    return [one(lb) for lb in labels]


@dataclass
class ScoreResult:
    rows: list[ScoredRow]
    summary: dict[str, dict[str, Any]]
    coverage: dict[str, Any]
    signature: str
    notes: list[str] = field(default_factory=list)
    source: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema_version": 1, "family": COMPONENT,
                               "signature": self.signature, "source": self.source,
                               "metrics": self.summary, "coverage": self.coverage}
        if self.notes:
            out["notes"] = self.notes
        return out

    def iter_items(self) -> Iterator[dict[str, Any]]:
        for r in self.rows:
            yield r.to_item()


def aggregate(rows: list[ScoredRow], config: ScoreConfig) -> dict[str, dict[str, Any]]:
    """Mean, sample std, n and (optionally) a bootstrap 95% CI of each metric over scored rows."""
    summary: dict[str, dict[str, Any]] = {}
    scored = [r for r in rows if r.ok]
    for metric in config.metrics:
        values = [float(getattr(r, metric)) for r in scored if getattr(r, metric) is not None]
        entry: dict[str, Any] = {"mean": stats.mean(values), "std": stats.sample_std(values),
                                 "n": len(values), "not_labelled": len(scored) - len(values)}
        if config.ci:
            ci = stats.bootstrap_ci(values, n_resamples=config.n_resamples, seed=config.seed)
            entry["ci95"] = list(ci) if ci else None
        summary[metric] = entry
    return summary


def coverage_of(rows: list[ScoredRow]) -> dict[str, Any]:
    reasons: dict[str, int] = {}
    for r in rows:
        if not r.ok:
            reasons[r.reason or "unknown"] = reasons.get(r.reason or "unknown", 0) + 1
    scored = sum(1 for r in rows if r.ok)
    return {"rows": len(rows), "scored": scored, "unscored": len(rows) - scored,
            "reasons": dict(sorted(reasons.items()))}


def score_rows(rows: Iterable[Row], config: ScoreConfig, source: str = "input") -> ScoreResult:
    judges: set[str] = set()

    def parsed(row: Row) -> LabelRow:
        judge = judge_descriptor(row.data)
        if judge is not None:
            judges.add(judge)
        return parse_label_row(row)

    scored = score_label_rows((parsed(r) for r in rows), config.definitions)
    notes: list[str] = []
    n_ok = sum(1 for r in scored if r.ok)
    if config.definitions == "writeup":
        notes.append("definitions: the GPT-labelling write-up's (relevance min(1, R/20), "
                     "utilization U/R, set completeness, adherence from fully_supported, "
                     "average of the four), not RAGBench's; see docs/trace.md.")
    for metric in config.metrics:
        missing = sum(1 for r in scored if r.ok and getattr(r, metric) is None)
        if missing:
            notes.append(f"{metric}: {missing} of {n_ok} scored rows have no labels for it "
                         "(a task the judge was not asked); its mean covers the others.")
    return ScoreResult(scored, aggregate(scored, config), coverage_of(scored),
                       config.signature(judges).render(), notes, source)


def score_file(path: Any, config: ScoreConfig) -> ScoreResult:
    """Score a labels file (Parquet, JSONL, JSON or CSV) or in-memory label rows."""
    from ragmeter.io import source_label

    rows = iter_trace_rows(path, (*SCORE_COLUMNS, *JUDGE_FIELDS), field_map=config.field_map)
    return score_rows(rows, config, source=source_label(path))
