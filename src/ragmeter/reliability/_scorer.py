"""Scoring an annotations file: every evaluator against the QC key (ragmeter issue 7).

Input rows: ``item_id``, ``evaluator``, ``item_flag`` ("Yes" = flagged, not ratable; "No" =
ratable), ``choice`` ("A", "B", "Tie", ...; empty when flagged) and optional ``skipped``.
QC rows are those of the evaluators named in :attr:`ReliabilityConfig.qc`.  The definitions
live in :mod:`ragmeter.reliability._metrics`; this module validates rows, pairs every evaluator
row with the QC verdict of its item, and aggregates.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ragmeter import stats
from ragmeter._util import check_number
from ragmeter.errors import ConfigError, UnknownNameError
from ragmeter.io import FieldMap, Row, as_text, is_blank, iter_rows, require
from ragmeter.reliability import _metrics as rel
from ragmeter.runs._schema import Coverage, ItemResult, Signature

__all__ = [
    "ReliabilityConfig",
    "ReliabilityResult",
    "score_annotations",
    "score_file",
    "DEFAULT_FLAG_YES",
    "DEFAULT_FLAG_NO",
]

COMPONENT = "reliability"
DEFAULT_FLAG_YES = ("yes", "y", "true", "1", "flagged")
DEFAULT_FLAG_NO = ("no", "n", "false", "0")
_SKIP_YES = ("yes", "y", "true", "1")
_SKIP_NO = ("no", "n", "false", "0", "")


@dataclass(frozen=True)
class ReliabilityConfig:
    """Options of one scoring run.

    ``flag_yes`` / ``flag_no`` are the ``item_flag`` values (case-insensitive, trimmed) that
    mean flagged / ratable; JSON booleans are always accepted.  An empty string in
    ``flag_no`` makes an empty cell mean "ratable".
    """

    qc: tuple[str, ...]
    min_applicable: int = 30
    flag_yes: tuple[str, ...] = DEFAULT_FLAG_YES
    flag_no: tuple[str, ...] = DEFAULT_FLAG_NO
    field_map: FieldMap = field(default_factory=FieldMap)

    def signature(self) -> Signature:
        settings = {
            "qc": "+".join(self.qc),
            "consensus": "majority" if len(self.qc) > 1 else "single",
            "interval": "wilson95",
            "min_applicable": self.min_applicable,
        }
        return Signature.make(COMPONENT, rel.METRIC_VERSION, settings)


@dataclass
class ReliabilityResult:
    """Per-evaluator reliability against QC, pooled numbers, coverage and notes."""

    qc: list[str]
    evaluators: dict[str, dict[str, Any]]  # sorted: reliability desc, None last
    overall_reliability: float | None
    mean_evaluator_reliability: float | None
    mean_evaluator_reliability_n: int
    overall_flag_mismatch_pct: float | None
    qc_items: int
    qc_flagged_items: int
    qc_flagged_pct: float | None
    qc_skipped_items: int
    qc_no_consensus_items: int
    items_not_in_qc: int
    pairs_not_in_qc: int
    min_applicable: int
    coverage: Coverage
    signature: str
    rows: int
    notes: list[str] = field(default_factory=list)
    items: list[ItemResult] = field(default_factory=list, repr=False)
    # (item_id, evaluator) -> position of its row in the input, for ordered_items
    positions: dict[tuple[str, str], int] = field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The JSON document of ``--json`` (schema_version 1)."""
        return {
            "schema_version": 1,
            "family": COMPONENT,
            "signature": self.signature,
            "qc": self.qc,
            "evaluators": self.evaluators,
            "overall_reliability": self.overall_reliability,
            "overall_reliability_definition": "pooled: sum of matches / sum of applicable_items",
            "mean_evaluator_reliability": self.mean_evaluator_reliability,
            "mean_evaluator_reliability_definition":
                "unweighted mean of the per-evaluator reliabilities that are not null",
            "mean_evaluator_reliability_n": self.mean_evaluator_reliability_n,
            "overall_flag_mismatch_pct": self.overall_flag_mismatch_pct,
            "qc_items": self.qc_items,
            "qc_flagged_items": self.qc_flagged_items,
            "qc_flagged_pct": self.qc_flagged_pct,
            "qc_skipped_items": self.qc_skipped_items,
            "qc_no_consensus_items": self.qc_no_consensus_items,
            "items_not_in_qc": self.items_not_in_qc,
            "pairs_not_in_qc": self.pairs_not_in_qc,
            "min_applicable": self.min_applicable,
            "coverage": {"rows": self.rows, **self.coverage.model_dump()},
            "notes": self.notes,
        }

    def iter_items(self) -> Iterator[dict[str, Any]]:
        """One record per (evaluator, item): ok with its comparison, or unscored + reason."""
        for item in self.items:
            yield {"item_id": item.id, "evaluator": item.group, "status": item.status,
                   **({"reason": item.reason, "detail": item.detail} if not item.ok else {}),
                   **item.values}

    def ordered_items(self) -> list[dict[str, Any]]:
        """:meth:`iter_items` in input order (``Result.to_pandas``): the items are grouped by
        evaluator for ``--items`` and run records; a notebook's table follows the rows."""
        last = len(self.positions)
        return sorted(self.iter_items(), key=lambda i: self.positions.get(
            (str(i["item_id"]), str(i["evaluator"])), last))


# ------------------------------------------------------------------ row validation


@dataclass(frozen=True)
class _Parsed:
    item_id: str
    evaluator: str
    annotation: rel.Annotation
    place: str
    choice_ignored: bool


def _bool_value(row: Row, name: str, value: Any, yes: Iterable[str], no: Iterable[str],
                fix: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value in (0, 1):
        value = str(int(value))
    text = "" if value is None else value
    if isinstance(text, str):
        key = text.strip().lower()
        yes_set = {v.strip().lower() for v in yes}
        no_set = {v.strip().lower() for v in no}
        if key in yes_set:
            return True
        if key in no_set:
            return False
    shown = ", ".join(repr(v) for v in [*yes, *no] if v != "")
    if is_blank(value):
        fix += " To let an empty cell mean not flagged, add --flag-no ''."
    given = "empty" if is_blank(value) else repr(value)
    raise row.error(f"is {given}, expected one of {shown} (or a JSON boolean).",
                    component=COMPONENT, field=name, fix=fix)


def _parse_row(row: Row, config: ReliabilityConfig) -> _Parsed:
    fm = config.field_map
    item_raw = require(row, "item_id", component=COMPONENT, field_map=fm)
    item_id = as_text(row, "item_id", item_raw, component=COMPONENT).strip()
    evaluator = as_text(row, "evaluator", require(row, "evaluator", component=COMPONENT,
                                                  field_map=fm), component=COMPONENT).strip()
    for name, value in (("item_id", item_id), ("evaluator", evaluator)):
        if not value:
            raise row.error("is empty.", component=COMPONENT, field=name,
                            fix=f"give every row its {name}.")
    skipped = _bool_value(row, "skipped", row.data.get("skipped"), _SKIP_YES, _SKIP_NO,
                          "write true/false (or yes/no, 1/0); leave empty for not skipped.")
    choice_raw = row.data.get("choice")
    choice = None if is_blank(choice_raw) else as_text(row, "choice", choice_raw,
                                                       component=COMPONENT).strip()
    if skipped and is_blank(row.data.get("item_flag")):
        return _Parsed(item_id, evaluator, rel.Annotation(skipped=True), _place(row), False)
    flag_raw = require(row, "item_flag", component=COMPONENT, field_map=fm)
    flagged = _bool_value(
        row, "item_flag", flag_raw, config.flag_yes, config.flag_no,
        "use Yes (flagged, not ratable) or No (ratable), or name your values with "
        "--flag-yes VALUE --flag-no VALUE.")
    if not flagged and not skipped and choice is None:
        raise row.error("is empty on a ratable item (item_flag says not flagged).",
                        component=COMPONENT, field="choice",
                        fix="give the choice (e.g. A, B or Tie), flag the item, or mark the "
                            "row skipped.")
    annotation = rel.Annotation(flagged=flagged, choice=None if flagged else choice,
                                skipped=skipped)
    return _Parsed(item_id, evaluator, annotation, _place(row),
                   choice_ignored=flagged and choice is not None and not skipped)


def _place(row: Row) -> str:
    return f"{row.unit} {row.number}"


def _as_rows(rows: Iterable[Row | Mapping[str, Any]], field_map: FieldMap) -> Iterator[Row]:
    for number, row in enumerate(rows, start=1):
        if isinstance(row, Row):
            yield row
        else:
            data = field_map.apply(row) if field_map.mapping else dict(row)
            yield Row(data, number, "row", "input rows")


# ------------------------------------------------------------------ scoring


def _sort_key(item: tuple[str, dict[str, Any]]) -> tuple[int, float, int, str]:
    name, numbers = item
    r = numbers["reliability"]
    return (r is None, -(r or 0.0), -numbers["applicable_items"], name)


def score_annotations(rows: Iterable[Row | Mapping[str, Any]],
                      config: ReliabilityConfig) -> ReliabilityResult:
    """Score annotation rows (``Row`` objects from :func:`ragmeter.io.iter_rows`, or plain
    mappings) against the QC evaluators named in ``config.qc``.
    """
    if not config.qc:
        raise ConfigError("reliability: name the QC evaluator(s) with --qc NAME.")
    check_number(config.min_applicable, "min_applicable=", lo=0, whole=True,
                 component=COMPONENT)
    seen: dict[tuple[str, str], str] = {}
    positions: dict[tuple[str, str], int] = {}
    annotations: dict[str, dict[str, rel.Annotation]] = {}  # evaluator -> item -> annotation
    n_rows = choice_ignored = 0
    for row in _as_rows(rows, config.field_map):
        p = _parse_row(row, config)
        n_rows += 1
        key = (p.item_id, p.evaluator)
        if key in seen:
            raise row.error(
                f"duplicate row for item_id {p.item_id!r} and evaluator {p.evaluator!r} "
                f"(first at {seen[key]}).", component=COMPONENT, field="item_id",
                fix="keep one annotation per (item_id, evaluator).")
        seen[key] = p.place
        positions[key] = n_rows
        annotations.setdefault(p.evaluator, {})[p.item_id] = p.annotation
        choice_ignored += p.choice_ignored
    del seen
    qc = list(dict.fromkeys(config.qc))
    for name in qc:
        if name not in annotations:
            raise UnknownNameError("QC evaluator", name, annotations, component=COMPONENT)
    evaluators = [e for e in annotations if e not in qc]
    if not evaluators:
        raise ConfigError(f"reliability: every evaluator in the input is named by --qc "
                          f"({', '.join(qc)}): there is no one to score against QC.")
    # The QC verdict of every item any QC annotator annotated.
    qc_items = list(dict.fromkeys(i for name in qc for i in annotations[name]))
    consensus = {i: rel.qc_consensus([annotations[n][i] for n in qc if i in annotations[n]])
                 for i in qc_items}
    result = _aggregate(annotations, evaluators, qc, consensus, config, n_rows, choice_ignored)
    result.positions = positions
    return result


def _aggregate(annotations: dict[str, dict[str, rel.Annotation]], evaluators: list[str],
               qc: list[str], consensus: dict[str, rel.Consensus], config: ReliabilityConfig,
               n_rows: int, choice_ignored: int) -> ReliabilityResult:
    per: dict[str, rel.EvaluatorReliability] = {}
    out: dict[str, dict[str, Any]] = {}
    items: list[ItemResult] = []
    not_in_qc_items: set[str] = set()
    pairs_not_in_qc = 0
    for name in evaluators:
        pairs: list[tuple[rel.Annotation, rel.Consensus]] = []
        missing = 0
        for item_id, annotation in annotations[name].items():
            verdict = consensus.get(item_id)
            if verdict is None:
                missing += 1
                not_in_qc_items.add(item_id)
                items.append(ItemResult.unscored(item_id, "not_in_qc",
                                                 "QC did not annotate this item", group=name))
                continue
            pairs.append((annotation, verdict))
            items.append(_item_result(item_id, name, annotation, verdict))
        pairs_not_in_qc += missing
        numbers = rel.evaluator_reliability(pairs, min_applicable=config.min_applicable)
        per[name] = numbers
        record = asdict(numbers)
        ci = record.pop("reliability_ci95")
        record["reliability_ci95"] = list(ci) if ci is not None else None
        record["annotated_items"] = len(annotations[name])
        record["not_in_qc_items"] = missing
        out[name] = record
    ordered = dict(sorted(out.items(), key=_sort_key))
    reliabilities = [r["reliability"] for r in ordered.values() if r["reliability"] is not None]
    total = sum(e.total_items for e in per.values())
    verdicts = list(consensus.values())
    ok = [v for v in verdicts if v.status == "ok"]
    flagged = sum(1 for v in ok if v.annotation is not None and v.annotation.flagged)
    notes = _notes(ordered, config, pairs_not_in_qc, len(not_in_qc_items), choice_ignored,
                   verdicts)
    return ReliabilityResult(
        qc=qc,
        evaluators=ordered,
        overall_reliability=rel.pooled_reliability(list(per.values())),
        mean_evaluator_reliability=stats.mean(reliabilities),
        mean_evaluator_reliability_n=len(reliabilities),
        overall_flag_mismatch_pct=rel.percent(sum(e.flag_mismatch_items for e in per.values()),
                                              total),
        qc_items=len(ok),
        qc_flagged_items=flagged,
        qc_flagged_pct=rel.percent(flagged, len(ok)),
        qc_skipped_items=sum(1 for v in verdicts if v.status == "skipped"),
        qc_no_consensus_items=sum(1 for v in verdicts if v.status == "no_consensus"),
        items_not_in_qc=len(not_in_qc_items),
        pairs_not_in_qc=pairs_not_in_qc,
        min_applicable=config.min_applicable,
        coverage=Coverage.of(items),
        signature=config.signature().render(),
        rows=n_rows,
        notes=notes,
        items=items,
    )


def _item_result(item_id: str, evaluator: str, annotation: rel.Annotation,
                 verdict: rel.Consensus) -> ItemResult:
    outcome = rel.compare_to_qc(annotation, verdict)
    if outcome.status == "skipped":
        side = "the evaluator" if annotation.skipped else "QC"
        return ItemResult.unscored(item_id, "skipped", f"skipped by {side}", group=evaluator)
    if outcome.status == "qc_no_consensus":
        return ItemResult.unscored(
            item_id, "qc_no_consensus",
            f"no QC majority ({verdict.agreeing} of {verdict.votes} agree)", group=evaluator)
    assert verdict.annotation is not None  # status "ok" implies a verdict
    return ItemResult(id=item_id, group=evaluator, values={
        "evaluator_label": annotation.label(), "qc_label": verdict.annotation.label(),
        "flag_mismatch": outcome.flag_mismatch, "both_flagged": outcome.both_flagged,
        "applicable": outcome.applicable, "match": outcome.match if outcome.applicable else None,
    })


def _notes(ordered: dict[str, dict[str, Any]], config: ReliabilityConfig, pairs_not_in_qc: int,
           items_not_in_qc: int, choice_ignored: int, verdicts: list[rel.Consensus]) -> list[str]:
    notes: list[str] = []
    low = [n for n, r in ordered.items() if r["low_sample"]]
    if low:
        shown = ", ".join(f"{n} ({ordered[n]['applicable_items']})" for n in low)
        notes.append(f"low sample: {len(low)} evaluator(s) have fewer than "
                     f"{config.min_applicable} applicable items, so their reliability means "
                     f"little: {shown}.")
    if pairs_not_in_qc:
        notes.append(f"{pairs_not_in_qc} annotation(s) of {items_not_in_qc} item(s) have no QC "
                     f"annotation: they are counted as not_in_qc and not scored.")
    no_consensus = sum(1 for v in verdicts if v.status == "no_consensus")
    if no_consensus:
        notes.append(f"{no_consensus} item(s) have no QC majority among {', '.join(config.qc)}: "
                     f"excluded from every evaluator's denominators and counted.")
    if choice_ignored:
        notes.append(f"{choice_ignored} flagged row(s) also have a choice; a flagged item has "
                     f"no choice, so it was ignored.")
    return notes


def score_file(path: str | Path, config: ReliabilityConfig) -> ReliabilityResult:
    """Score an annotations file (JSONL, JSON, CSV or Parquet)."""
    rows = iter_rows(path, component=COMPONENT, field_map=config.field_map)
    return score_annotations(rows, config)
