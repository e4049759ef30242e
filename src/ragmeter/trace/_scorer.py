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

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter
from typing import TYPE_CHECKING, Any

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
from ragmeter.trace._fast import LabelBlock
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

if TYPE_CHECKING:
    from ragmeter.io._spill import EncodedLines

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


_VALUES = ("relevance", "utilization", "completeness", "adherence", "adherence_probability",
           "average")
_NAN = float("nan")


class ScoredRows:
    """The scored rows of a file in input order, as columns that move to a temporary file
    past :data:`~ragmeter.io._spill.SPILL_AT` rows (memory does not grow with the rows,
    issue 26.3); iterating gives :class:`ScoredRow` again.  Unscored rows keep their reason
    and detail in memory."""

    def __init__(self) -> None:
        from ragmeter.io._spill import NumberColumn, SpillDir, TextColumn

        self._spill = SpillDir()
        self.ids = TextColumn(self._spill)
        self.numbers = NumberColumn("q", self._spill)
        self.values = {name: NumberColumn("d", self._spill) for name in _VALUES}
        self.unscored: dict[int, tuple[str | None, str | None]] = {}  # position -> reason
        self._pending: list[ScoredRow] = []
        self._n_scored = 0
        self._extra_keys = False  # a scored row has an average or adherence_probability

    @property
    def n_scored(self) -> int:
        self._flush()
        return self._n_scored

    def append(self, row: ScoredRow) -> None:
        self._pending.append(row)
        if len(self._pending) >= 4096:
            self._flush()

    def extend_scored(self, ids: list[str] | EncodedLines, numbers: Iterable[int],
                      values: dict[str, Any]) -> None:
        """Append scored rows given as columns (every name of ``_VALUES``: floats, NaN for
        none), after the pending rows."""
        self._flush()
        self.ids.extend(ids)
        if isinstance(numbers, range) and numbers.step == 1 and len(numbers) > 64:
            import numpy as np  # the numbers as one copy, not one int at a time

            numbers = np.arange(numbers.start, numbers.stop, dtype=np.int64)
        self.numbers.extend(numbers)
        for name, column in self.values.items():
            column.extend(values[name])
        self._n_scored += len(ids)

    def _flush(self) -> None:
        if not self._pending:
            return
        rows, self._pending = self._pending, []
        start = len(self.ids)
        self.ids.extend([r.id for r in rows])
        self.numbers.extend([r.row for r in rows])
        for name, column in self.values.items():
            column.extend([_NAN if v is None else float(v)
                           for v in map(attrgetter(name), rows)])
        for i, r in enumerate(rows):
            if r.reason is not None:
                self.unscored[start + i] = (r.reason, r.detail)
            elif r.average is not None or r.adherence_probability is not None:
                self._extra_keys = True
        self._n_scored += len(rows) - sum(1 for r in rows if r.reason is not None)

    def __len__(self) -> int:
        return len(self.ids) + len(self._pending)

    def __bool__(self) -> bool:
        return len(self) > 0

    def __iter__(self) -> Iterator[ScoredRow]:
        self._flush()
        n = len(self.ids)
        for start in range(0, n, 4096):
            span = range(start, min(n, start + 4096))
            ids, numbers = self.ids.take(span), self.numbers.take(span)
            values = [self.values[name].take(span) for name in _VALUES]
            for i, rid, number, *vals in zip(span, ids, numbers, *values, strict=True):
                if i in self.unscored:
                    reason, detail = self.unscored[i]
                    yield ScoredRow(rid, number, reason=reason, detail=detail)
                    continue
                rel, util, comp, adh, prob, avg = (None if v != v else v for v in vals)
                yield ScoredRow(rid, number, rel, util, comp,
                                None if adh is None else adh == 1.0, prob, average=avg)

    def item_columns(self) -> Any:
        """The items (:meth:`ScoredRow.to_item`) as
        :class:`ragmeter.runs._columns.ItemColumns`, so that a run record builds only the
        items it keeps; None when scored items differ in their keys (an ``average`` or an
        ``adherence_probability``)."""
        from ragmeter.runs._columns import ItemColumns, ItemPart

        self._flush()
        if self._extra_keys:
            return None
        keys = ("id", "row", "status", *SCORE_METRICS)
        parts, start = [], 0
        for stop in [*sorted(self.unscored), len(self)]:  # scored runs between unscored rows
            if stop > start:
                parts.append(ItemPart(keys, stop - start, self._scored_rows(start)))
            start = stop + 1
        unscored = [{"id": rid, "row": number, "status": "unscored", "reason": reason,
                     "detail": detail}
                    for (reason, detail), rid, number in zip(
                        (self.unscored[i] for i in sorted(self.unscored)),
                        self.ids.take(sorted(self.unscored)),
                        self.numbers.take(sorted(self.unscored)), strict=True)]
        return ItemColumns(parts, unscored)

    def _scored_rows(self, offset: int) -> Any:
        """The item tuples of scored rows at positions from ``offset`` (as :meth:`__iter__`
        and :meth:`ScoredRow.to_item` make them: NaN is None, adherence a bool)."""

        def rows(positions: Sequence[int]) -> list[tuple[Any, ...]]:
            import numpy as np  # the columns gathered in numpy, not a value at a time

            at = np.asarray(positions, dtype=np.int64) + offset
            columns: list[list[Any]] = [self.ids.take(at.tolist()),
                                        self.numbers.gather(at).tolist()]
            for m in SCORE_METRICS:
                values = self.values[m].gather(at)
                column = (values == 1.0).tolist() if m == "adherence" else values.tolist()
                for i in np.flatnonzero(np.isnan(values)).tolist():
                    column[i] = None
                columns.append(column)
            ids, numbers, *vals = columns
            return list(zip(ids, numbers, repeat("ok", len(ids)), *vals, strict=True))
        return rows

    def metric_chunks(self, name: str) -> Any:
        """The scored rows' present values of one metric, chunk by chunk (a factory, for
        :func:`ragmeter.stats.mean_std_chunks`)."""
        self._flush()
        column = self.values[name]

        def chunks() -> Iterator[Any]:
            import numpy as np

            for chunk in column.chunks():
                values = np.frombuffer(chunk, dtype=np.float64)
                absent = np.isnan(values)  # unscored rows hold NaN too
                yield values[~absent].tolist() if absent.any() else chunk
        return chunks


@dataclass
class ScoreResult:
    rows: ScoredRows | list[ScoredRow]
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

    def item_columns(self) -> Any:
        """:meth:`iter_items` as columns for a run record (None when they are a list, or
        differ in their keys): see :meth:`ScoredRows.item_columns`."""
        return self.rows.item_columns() if isinstance(self.rows, ScoredRows) else None


def aggregate(rows: ScoredRows | list[ScoredRow], config: ScoreConfig
              ) -> dict[str, dict[str, Any]]:
    """Mean, sample std, n and (optionally) a bootstrap 95% CI of each metric over scored rows
    (:class:`ScoredRows`: read chunk by chunk; the same numbers, the same exact sums)."""
    summary: dict[str, dict[str, Any]] = {}
    if isinstance(rows, ScoredRows):
        n_scored = rows.n_scored
        sources = {metric: rows.metric_chunks(metric) for metric in config.metrics}
    else:
        scored = [r for r in rows if r.ok]
        n_scored = len(scored)
        sources = {metric: (lambda values: lambda: iter((values,)))(
            [float(getattr(r, metric)) for r in scored if getattr(r, metric) is not None])
            for metric in config.metrics}
    for metric in config.metrics:
        # each distinct value's count, taken once for the mean and the CI (spilled rows)
        counts = stats.distinct_counts(sources[metric]) if isinstance(rows, ScoredRows) \
            else None
        mean, std, n = stats.mean_std_chunks(sources[metric], counts)
        entry: dict[str, Any] = {"mean": mean, "std": std, "n": n,
                                 "not_labelled": n_scored - n}
        if config.ci:
            ci = _interval(sources[metric], n, config, counts)
            entry["ci95"] = list(ci) if ci else None
        summary[metric] = entry
    return summary


CI_ROWS = 100_000
"""Above this many values a metric's bootstrap draws value counts
(:func:`ragmeter.stats.bootstrap_ci_counts`: memory and time grow with the distinct values,
not the rows); up to it, rows (:func:`ragmeter.stats.bootstrap_ci`, the released numbers)."""
CI_NOTE = (f"ci95: over {CI_ROWS:,} values, the bootstrap resamples value counts "
           "(multinomial draws: the same estimator, in memory independent of the rows).")


def _interval(chunks: Any, n: int, config: ScoreConfig,
              counted: dict[float, int] | None = None) -> tuple[float, float] | None:
    """The bootstrap CI of the values of ``chunks`` (``counted``: their
    :func:`~ragmeter.stats.distinct_counts`, when taken)."""
    if n > CI_ROWS and counted is not None:  # finite values, at most 4,096 distinct
        return stats.bootstrap_ci_counts(counted, n_resamples=config.n_resamples,
                                         seed=config.seed)
    if n > CI_ROWS:
        import numpy as np

        counts: dict[float, int] = {}  # each distinct value's count, chunk by chunk in numpy
        for chunk in chunks():
            distinct, times = np.unique(np.asarray(chunk, dtype=np.float64),
                                        return_counts=True)
            for v, k in zip(distinct.tolist(), times.tolist(), strict=True):
                counts[v] = counts.get(v, 0) + k
            if len(counts) > 1 << 16:
                break
        else:
            return stats.bootstrap_ci_counts(counts, n_resamples=config.n_resamples,
                                             seed=config.seed)
    values = [v for chunk in chunks() for v in chunk]
    return stats.bootstrap_ci(values, n_resamples=config.n_resamples, seed=config.seed)


def coverage_of(rows: ScoredRows | list[ScoredRow]) -> dict[str, Any]:
    reasons: dict[str, int] = {}
    if isinstance(rows, ScoredRows):
        rows.n_scored  # noqa: B018 - writes the pending rows first
        unscored = list(rows.unscored.values())
    else:
        unscored = [(r.reason, r.detail) for r in rows if not r.ok]
    for reason, _ in unscored:
        reasons[reason or "unknown"] = reasons.get(reason or "unknown", 0) + 1
    n_unscored = sum(reasons.values())
    return {"rows": len(rows), "scored": len(rows) - n_unscored, "unscored": n_unscored,
            "reasons": dict(sorted(reasons.items()))}


def _block_values(block: LabelBlock) -> tuple[list[str] | EncodedLines, dict[str, Any]]:
    """The ids and metric columns of a block of clean rows: the numbers of
    :func:`score_label_row` (the same divisions, in numpy)."""
    import numpy as np

    ids = block.ids
    counts = block.counts.astype(np.float64)
    n, n_rel, n_util, both = counts[:, 0], counts[:, 1], counts[:, 2], counts[:, 3]
    with np.errstate(divide="ignore", invalid="ignore"):
        comp = np.where(n_rel > 0, both / n_rel, 1.0)
    adh = counts[:, 4] == 0
    nan = np.full(len(ids), np.nan)
    columns = {"relevance": n_rel / n, "utilization": n_util / n, "completeness": comp,
               "adherence": adh.astype(np.float64), "adherence_probability": nan,
               "average": nan}
    return ids, columns  # float64 arrays: a column's extend copies their bytes once


def _score_into(scored: ScoredRows, rows: Iterable[Row | LabelBlock], config: ScoreConfig,
                judges: set[str]) -> None:
    from ragmeter._util._gc import paused_gc

    with paused_gc():  # no cycle is made here (see paused_gc)
        _score_all(scored, rows, config, judges)


def _score_all(scored: ScoredRows, rows: Iterable[Row | LabelBlock], config: ScoreConfig,
               judges: set[str]) -> None:
    one = score_label_row_writeup if config.definitions == "writeup" else score_label_row
    for r in rows:
        if isinstance(r, LabelBlock):
            ids, values = _block_values(r)
            scored.extend_scored(ids, r.numbers, values)
            continue
        judge = judge_descriptor(r.data)
        if judge is not None:
            judges.add(judge)
        scored.append(one(parse_label_row(r)))


def score_rows(rows: Iterable[Row | LabelBlock], config: ScoreConfig,
               source: str = "input") -> ScoreResult:
    """Score rows (or, from :func:`ragmeter.trace._fast.iter_label_blocks`, blocks of clean
    rows among them)."""
    judges: set[str] = set()
    scored = ScoredRows()
    _score_into(scored, rows, config, judges)
    notes: list[str] = []
    summary = aggregate(scored, config)
    n_ok = scored.n_scored
    if config.definitions == "writeup":
        notes.append("definitions: the GPT-labelling write-up's (relevance min(1, R/20), "
                     "utilization U/R, set completeness, adherence from fully_supported, "
                     "average of the four), not RAGBench's; see docs/trace.md.")
    if config.ci and any(summary[m]["n"] > CI_ROWS for m in config.metrics):
        notes.append(CI_NOTE)
    for metric in config.metrics:
        missing = summary[metric]["not_labelled"]
        if missing:
            notes.append(f"{metric}: {missing} of {n_ok} scored rows have no labels for it "
                         "(a task the judge was not asked); its mean covers the others.")
    return ScoreResult(scored, summary, coverage_of(scored),
                       config.signature(judges).render(), notes, source)


def score_file(path: Any, config: ScoreConfig) -> ScoreResult:
    """Score a labels file (Parquet, JSONL, JSON or CSV) or in-memory label rows."""
    from ragmeter.io import source_label
    from ragmeter.trace._fast import fast_jsonl, iter_label_blocks

    rows: Iterable[Row | LabelBlock]
    if config.definitions == "ragbench" and not config.field_map.renames \
            and fast_jsonl(path):
        rows = iter_label_blocks(path)  # clean lines decoded in C, the others as rows
    else:
        rows = iter_trace_rows(path, (*SCORE_COLUMNS, *JUDGE_FIELDS),
                               field_map=config.field_map)
    return score_rows(rows, config, source=source_label(path))
