"""``trace validate``: a judge's TRACe predictions against annotated labels.

Truth per row is computed from the reference file's sentence labels (exactly the released
scores, see the golden test).  Predictions come from a labels file (``--pred``, the output of
``trace label``, joined on its ``row`` field, else on ``id``) and/or from columns of the
reference file (``--pred-column METRIC=COLUMN``).  Statistics (RAGBench
``ragbench/evaluation.py``, paper Table 3), each with a percentile-bootstrap 95% CI and the
number of rows used:

- hallucination AUROC: positive class = not adherent, score = 1 - predicted adherence (a
  probability when the judge gives one, else 0/1);
- relevance, utilization and completeness RMSE.

On RAGBench's released files the baseline columns are evaluated the same way (gpt-3.5,
RAGAS, TruLens; see :data:`~ragmeter.trace._data.BASELINE_COLUMNS`).  Rows whose
prediction is missing or NaN are left out of that statistic and counted, as RAGBench drops NaN
predictions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ragmeter import stats
from ragmeter.errors import InputError, UnknownNameError
from ragmeter.io import FieldMap, Row, is_blank, source_label
from ragmeter.signature import Signature
from ragmeter.trace._data import (
    BASELINE_COLUMNS,
    COMPONENT,
    JUDGE_FIELDS,
    iter_trace_rows,
    judge_descriptor,
    parse_label_row,
)
from ragmeter.trace._metrics import (
    METRIC_VERSION,
    METRICS,
    SCORE_METRICS,
    VALIDATES,
    VALIDATION_METRICS,
    Estimate,
    auroc_estimate,
    rmse_estimate,
    validation_settings,
)
from ragmeter.trace._scorer import SCORE_COLUMNS, ScoredRow, coverage_of, score_label_row

__all__ = ["ValidateConfig", "ValidateResult", "validate_file", "UTILIZATION_NOTE"]
UTILIZATION_NOTE = (
    "utilization RMSE compares predicted utilization with utilization_score. RAGBench's "
    "ragbench/evaluation.py (calculate_metrics) computes its utilization_rmse from the "
    "relevance arrays by accident, so numbers from that function equal the relevance RMSE.")


@dataclass(frozen=True)
class ValidateConfig:
    pred_path: Any = None  # a labels file, or in-memory label rows (list of dicts, DataFrame)
    pred_columns: Mapping[str, str] = field(default_factory=dict)  # metric -> column
    judge_name: str = "judge"
    baselines: bool = True
    subset_only: bool = False  # evaluate every judge on the rows that have a prediction
    n_resamples: int = stats.DEFAULT_RESAMPLES
    seed: int = stats.DEFAULT_SEED
    field_map: FieldMap = field(default_factory=FieldMap)
    # only these reference rows (1-based row numbers; ``--by`` groups), None = all
    only_rows: frozenset[int] | None = None

    def signature(self, judge: str | None = None, labelled_by: Iterable[str] = ()
                  ) -> Signature:
        """The bootstrap, the AUROC's definition (from ``METRICS``), the judge's name and,
        when its labels say (``trace label`` writes it), the judge that wrote them with its
        prompt or detector version (:func:`~ragmeter.trace._data.judge_descriptor`)."""
        settings: dict[str, Any] = {"bootstrap": f"{self.n_resamples}@seed{self.seed}",
                                    **validation_settings()}
        if judge:
            settings["judge"] = judge
        if labelled_by:
            settings["labelled_by"] = ",".join(sorted(set(labelled_by)))
        return Signature.make(COMPONENT, METRIC_VERSION, settings)


@dataclass
class ValidateResult:
    rows: int
    scored_reference: int
    judges: dict[str, dict[str, Estimate]]
    coverage: dict[str, dict[str, int]]
    signature: str
    notes: list[str] = field(default_factory=list)
    source: str = ""
    reference_coverage: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": 1, "family": COMPONENT, "signature": self.signature,
            "source": self.source, "rows": self.rows,
            "reference_rows_scored": self.scored_reference,
            "judges": {name: {k: e.to_dict() for k, e in est.items()}
                       for name, est in self.judges.items()},
            # the reference rows in the shape every door reads (issue 25); each judge's
            # predictions (matched, unscored, missing) under judge_coverage
            "coverage": self.reference_coverage or {
                "rows": self.rows, "scored": self.scored_reference,
                "unscored": self.rows - self.scored_reference, "reasons": {}},
            "judge_coverage": self.coverage, "notes": self.notes,
        }


def _number(value: Any) -> float | None:
    """A prediction value as float; None for missing, NaN or non-numeric."""
    if is_blank(value):
        return None
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    try:
        num = float(value)
    except (TypeError, ValueError):
        return None
    return num if math.isfinite(num) else None


def _estimates(truth: list[ScoredRow], preds: list[dict[str, float | None]],
               config: ValidateConfig) -> dict[str, Estimate]:
    """The four statistics over rows where both truth and prediction exist."""
    out: dict[str, Estimate] = {}
    for stat in VALIDATION_METRICS:
        metric = VALIDATES[stat]
        pairs = [(p[metric], t) for p, t in zip(preds, truth, strict=True)
                 if t.ok and p.get(metric) is not None and getattr(t, metric) is not None]
        if not pairs:
            continue
        if METRICS.get(stat).aggregation == "auroc":
            scores = [1.0 - float(p) for p, _ in pairs]  # type: ignore[arg-type]
            positives = [not t.adherence for _, t in pairs]
            out[stat] = auroc_estimate(scores, positives, n_resamples=config.n_resamples,
                                       seed=config.seed)
        else:
            out[stat] = rmse_estimate([float(p) for p, _ in pairs],  # type: ignore[arg-type]
                                      [float(getattr(t, metric)) for _, t in pairs],
                                      n_resamples=config.n_resamples, seed=config.seed)
    return out


def _pred_from_scored(s: ScoredRow) -> dict[str, float | None]:
    if not s.ok:
        return {}
    adh: float | None = s.adherence_probability
    if adh is None and s.adherence is not None:
        adh = 1.0 if s.adherence else 0.0
    return {m: adh if m == "adherence" else getattr(s, m) for m in SCORE_METRICS}


def _read_pred_file(path: Any, config: ValidateConfig, judges: set[str]
                    ) -> tuple[dict[str, ScoredRow], dict[str, ScoredRow], int]:
    """Scored predictions keyed by source row number (``row`` field) and by ``id``; adds the
    judges the rows name to ``judges``."""
    by_row: dict[str, ScoredRow] = {}
    by_id: dict[str, ScoredRow] = {}
    n = 0
    for row in iter_trace_rows(path, (*SCORE_COLUMNS, *JUDGE_FIELDS, "row"), field_map=None):
        n += 1
        judge = judge_descriptor(row.data)
        if judge is not None:
            judges.add(judge)
        s = score_label_row(parse_label_row(row))
        src = row.data.get("row")
        if not is_blank(src):
            key = str(int(src)) if isinstance(src, (int, float)) else str(src)
            by_row[key] = s
        by_id.setdefault(s.id, s)
    return by_row, by_id, n


def validate_file(reference: Any, config: ValidateConfig) -> ValidateResult:
    """Validate predictions against the annotated ``reference`` file (see module docstring)."""
    for metric in config.pred_columns:
        if metric not in SCORE_METRICS:
            raise UnknownNameError("metric for --pred-column", metric, SCORE_METRICS,
                                   component=COMPONENT)
    columns = [*SCORE_COLUMNS, *config.pred_columns.values()]
    if config.baselines:
        columns += list(BASELINE_COLUMNS)
    truth: list[ScoredRow] = []
    raw: list[Row] = []
    notes: list[str] = []
    seen_columns: set[str] = set()
    for row in iter_trace_rows(reference, columns, field_map=config.field_map):
        if config.only_rows is not None and row.number not in config.only_rows:
            continue
        seen_columns.update(c for c in config.pred_columns.values() if c in row.data)
        truth.append(score_label_row(parse_label_row(row)))
        raw.append(Row({k: row.data.get(k) for k in (*config.pred_columns.values(),
                                                    *BASELINE_COLUMNS)},
                       row.number, row.unit, row.path))
    for metric, column in config.pred_columns.items():
        if column not in seen_columns:
            raise InputError(f"has no column {column!r} in any row (given by --pred-column "
                             f"{metric}={column}).", component=COMPONENT, path=reference,
                             fix="check the column name; `ragmeter trace validate --help` "
                                 "shows the form METRIC=COLUMN.")
    judges: dict[str, dict[str, Estimate]] = {}
    coverage: dict[str, dict[str, int]] = {}
    pred_label = None if config.pred_path is None else source_label(config.pred_path)
    labelled_by: set[str] = set()
    if config.pred_path is not None:
        by_row, by_id, n_pred = _read_pred_file(config.pred_path, config, labelled_by)
        if by_row:
            lookup = [by_row.get(str(t.row)) for t in truth]
        else:
            ids = [t.id for t in truth]
            if len(set(ids)) != len(ids):
                dup = next(i for i in ids if ids.count(i) > 1)
                raise InputError(
                    f"the reference has duplicate ids (first {dup!r}) and the predictions "
                    "have no \"row\" field to join on.", component=COMPONENT,
                    path=pred_label, field="row",
                    fix="give each prediction the 1-based row number of its reference row "
                        "in a \"row\" field (`trace label` writes it).")
            lookup = [by_id.get(t.id) for t in truth]
        n_pred_rows = sum(1 for s in lookup if s is not None)
        if config.subset_only:
            # rows whose prediction is scored: an unscored prediction has no values, so
            # keeping its row would evaluate the baselines on rows the judge is not
            keep = [i for i, s in enumerate(lookup) if s is not None and s.ok]
            unscored_here = n_pred_rows - len(keep)
            truth = [truth[i] for i in keep]
            raw = [raw[i] for i in keep]
            lookup = [lookup[i] for i in keep]
            note = (f"every judge is evaluated on the {len(keep)} rows that have a scored "
                    "prediction, so the numbers are comparable")
            if unscored_here:
                note += (f" ({unscored_here} row(s) whose prediction is unscored are left "
                         "out; see coverage)")
            notes.append(note + ".")
        preds = [_pred_from_scored(s) if s is not None else {} for s in lookup]
        matched = n_pred_rows
        unscored = n_pred_rows - sum(1 for s in lookup if s is not None and s.ok)
        coverage[config.judge_name] = {"predictions": n_pred, "matched_rows": matched,
                                       "unscored_predictions": unscored,
                                       "rows_without_prediction":
                                           len(truth) - sum(1 for s in lookup if s is not None)}
        judges[config.judge_name] = _estimates(truth, preds, config)
        if matched == 0:
            notes.append(f"no prediction in {pred_label} matches a reference row.")
    if config.pred_columns:
        name = config.judge_name if config.pred_path is None \
            else f"{config.judge_name} (columns)"
        preds = [{m: _number(r.data.get(c)) for m, c in config.pred_columns.items()}
                 for r in raw]
        judges[name] = _estimates(truth, preds, config)
    if config.baselines:
        by_judge: dict[str, dict[str, str]] = {}
        for column, (judge, metric) in BASELINE_COLUMNS.items():
            if any(column in r.data and r.data[column] is not None for r in raw):
                by_judge.setdefault(judge, {})[metric] = column
        for judge, cols in by_judge.items():
            preds = [{m: _number(r.data.get(c)) for m, c in cols.items()} for r in raw]
            judges[judge] = _estimates(truth, preds, config)
    if not judges:
        raise InputError("has nothing to validate: no --pred, no --pred-column and no "
                         "baseline columns.", component=COMPONENT, path=source_label(reference),
                         fix="give --pred LABELS.jsonl (from `ragmeter trace label`) or "
                             "--pred-column adherence=COLUMN.")
    if any("utilization_rmse" in est for est in judges.values()):
        notes.append(UTILIZATION_NOTE)
    scored_ref = sum(1 for t in truth if t.ok)
    named = config.pred_path is not None or config.pred_columns
    return ValidateResult(len(truth), scored_ref, judges, coverage,
                          config.signature(config.judge_name if named else None,
                                           labelled_by).render(), notes,
                          source_label(reference), coverage_of(truth))
