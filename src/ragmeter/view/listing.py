"""The run list of the web app: one row per stored run record, with its headline numbers.

Rows come from :func:`ragmeter.runs._records.list_runs` only (never from the files themselves), kept
for 30 seconds so that paging and filtering a large store do not re-read it; a job finishing in
the app, an unknown run id or the page's *refresh* link re-reads it at once.  Headline numbers are read from each record's stored result
(the family's ``to_json()``): nothing is recomputed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.runs._records import RunRecord, list_runs

__all__ = ["Headline", "RunRow", "RunIndex", "headlines", "flags"]

MAX_HEADLINES = 4


@dataclass(frozen=True)
class Headline:
    """One number of a run: label, value, 95% interval when stored."""

    label: str
    value: float | None
    ci: tuple[float, float] | None = None


@dataclass(frozen=True)
class RunRow:
    run_id: str
    family: str
    kind: str
    created_at: str
    data: str
    models: str
    items_total: int
    items_unscored: int
    headlines: list[Headline] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)

    @property
    def coverage(self) -> float | None:
        if not self.items_total:
            return None
        return (self.items_total - self.items_unscored) / self.items_total


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v:
        return None
    return float(v)


def _ci(v: Any) -> tuple[float, float] | None:
    if isinstance(v, (list, tuple)) and len(v) == 2:
        lo, hi = _num(v[0]), _num(v[1])
        if lo is not None and hi is not None:
            return (lo, hi)
    return None


def _family_rows(family: str, doc: Mapping[str, Any]) -> tuple[Any, list[Any]]:
    """A family's ``METRICS`` and the headline rows of a stored result: stored with it, else
    built by the family's ``_metrics.headline`` (records written before the headline)."""
    from ragmeter._families import family_part
    from ragmeter.result import headline_of

    table = family_part(family, "_metrics", "METRICS")
    rows = headline_of(doc) if doc.get("headline") else \
        family_part(family, "_metrics", "headline")(doc)
    return table, rows


def _from_metrics_table(family: str, doc: Mapping[str, Any], per_metric: int = 2
                        ) -> list[Headline]:
    """A family's headline rows (:func:`_family_rows`) labelled ``<group> <label>`` from its
    ``METRICS``; at most ``per_metric`` rows of one metric, so that the few shown span its
    tables.  Flagged numbers (a degenerate judge) are left out: the flags column says why."""
    table, rows = _family_rows(family, doc)
    out: list[Headline] = []
    seen: dict[str, int] = {}
    for h in rows:
        seen[h.metric] = seen.get(h.metric, 0) + 1
        if h.flag is None and seen[h.metric] <= per_metric:
            label = table.get(h.metric).label if h.metric in table else h.metric
            out.append(Headline(f"{h.group} {label}", _num(h.value), _ci(h.ci)))
    return out


def _rgb(doc: Mapping[str, Any]) -> list[Headline]:
    return _from_metrics_table("rgb", doc)


def _multilingual(doc: Mapping[str, Any]) -> list[Headline]:
    """The family's main metric (F1) per system, labelled from its METRICS table; for
    ``multilingual judge`` the mean semantic score over every row (group ``all``) and, on
    data with reference scores, the judge's AUROC and Spearman against them.  Read from
    the stored headline rows, or built by the family's ``headline`` from an older record."""
    from ragmeter._families import FAMILIES

    table, rows = _family_rows("multilingual", doc)
    main = FAMILIES["multilingual"].main_metric
    picked = [h for h in rows if h.metric == main] or [h for h in rows if h.group == "all"]
    out = [Headline(h.metric.replace("_", " ") if h.group == "all"
                    else f"{h.group} {table.get(h.metric).label}", h.value, h.ci)
           for h in picked if h.metric in table]
    # multilingual judge on data with reference scores: the judge's agreement with them
    from ragmeter._families import family_part

    agreement = family_part("multilingual", "_metrics", "AGREEMENT_METRICS")
    out += [Headline(agreement.get(h.metric).label, h.value, h.ci) for h in rows
            if agreement is not None and h.metric in ("semantic_auroc", "semantic_spearman")
            and " / " not in h.group]
    return out


def _trace(doc: Mapping[str, Any]) -> list[Headline]:
    out: list[Headline] = []
    for name, m in (doc.get("metrics") or {}).items():
        if isinstance(m, Mapping):
            out.append(Headline(name, _num(m.get("mean")), _ci(m.get("ci95"))))
    judges = doc.get("judges") or {}
    for judge, vals in judges.items():
        for name, v in (vals or {}).items():
            if isinstance(v, Mapping):  # one judge: it is in the model column already
                label = name if len(judges) == 1 else f"{judge} {name}"
                out.append(Headline(label, _num(v.get("value")), _ci(v.get("ci95"))))
    return out


def _rubric(doc: Mapping[str, Any]) -> list[Headline]:
    """The family's main metric per group (the weighted score; validate's and build's own
    first metric when a result has none), labelled from its METRICS table.  Read from the
    stored headline rows, or built by the family's ``headline`` from a record written before
    them."""
    from ragmeter._families import FAMILIES

    table, rows = _family_rows("rubric", doc)
    main = FAMILIES["rubric"].main_metric
    if rows and not any(h.metric == main for h in rows):
        main = rows[0].metric
    label = table.get(main).label if main in table else main
    return [Headline(f"{h.group} {label}", h.value, h.ci) for h in rows if h.metric == main]


def _retrieval(doc: Mapping[str, Any]) -> list[Headline]:
    """nDCG and recall at the largest cutoff, MRR and MAP from the stored headline rows (a
    comparison: their differences, second run minus first)."""
    group = "difference" if doc.get("verb") == "compare" else "all"
    rows = {r.get("metric"): r for r in doc.get("headline") or []
            if isinstance(r, Mapping) and r.get("group") == group}
    cuts = [k for k in doc.get("k") or [] if isinstance(k, int)]
    top = max(cuts, default=10)
    prefix = "Δ " if group == "difference" else ""
    return [Headline(prefix + name, _num(rows[name].get("value")), _ci(rows[name].get("ci")))
            for name in (f"ndcg@{top}", f"recall@{top}", "mrr", "map") if name in rows]


def _criteria(doc: Mapping[str, Any]) -> list[Headline]:
    """Across criteria (group ``all``) the normalized score and the share of rows passing
    every criterion, then each criterion's mean score; flagged numbers are left out."""
    table, rows = _family_rows("criteria", doc)
    keep = [h for h in rows if h.flag is None and h.group == "all"]
    keep += [h for h in rows if h.flag is None and h.metric == "criterion_score"
             and h.group != "all" and "@" not in h.group]
    return [Headline(f"{h.group} {table.get(h.metric).label}", _num(h.value), _ci(h.ci))
            for h in keep]


def _generic(doc: Mapping[str, Any]) -> list[Headline]:
    from ragmeter.reports.compare import flat_numbers

    skip = ("coverage.", "config.", "n", "rows")
    return [Headline(k, float(v)) for k, v in flat_numbers(doc).items()
            if not k.startswith(skip) and not k.endswith((".n", ".total", ".rows"))]


_FAMILY_HEADLINES = {"rgb": _rgb, "multilingual": _multilingual, "trace": _trace,
                     "rubric": _rubric, "retrieval": _retrieval, "criteria": _criteria}


def headlines(record: RunRecord) -> list[Headline]:
    """Up to four headline numbers of a run, read from its stored result."""
    doc = record.result if isinstance(record.result, Mapping) else {}
    pick = _FAMILY_HEADLINES.get(record.family, _generic)
    try:
        found = pick(doc)
    except (AttributeError, TypeError, ValueError):  # a result of another shape: fall back
        found = _generic(doc)
    return [h for h in found if h.value is not None][:MAX_HEADLINES]


def flags(record: RunRecord) -> list[str]:
    """Short warnings shown beside a run: judge alarms, truncation, newer schema, notes."""
    out: list[str] = []
    doc = record.result if isinstance(record.result, Mapping) else {}
    notes = [str(n) for n in (doc.get("notes") or []) if isinstance(n, str)] + record.notes
    kinds = [a.get("kind") if isinstance(a, Mapping) else str(a) for a in doc.get("alarms") or []]
    if "degenerate_judge" in kinds or any("degenerate" in n.lower() for n in notes):
        out.append("degenerate judge")
    if "judge_at_chance" in kinds:
        out.append("judge at chance")
    out += [f"alarm: {k}" for k in dict.fromkeys(kinds)
            if k and k not in ("degenerate_judge", "judge_at_chance")]
    if any("lenient" in n.lower() and "not" in n.lower() for n in notes):
        out.append("lenient (not paper)")
    if record.items_truncated:
        out.append("items sampled")
    if record.items_total and record.items_unscored:
        out.append(f"{record.items_unscored} unscored")
    return out


def _row(record: RunRecord) -> RunRow:
    doc = record.result if isinstance(record.result, Mapping) else {}
    data = ", ".join(Path(i.path).name for i in record.inputs[:3])
    if len(record.inputs) > 3:
        data += f" (+{len(record.inputs) - 3})"
    models = ", ".join(record.models) or str(doc.get("model") or "")
    judge = doc.get("judge")
    if isinstance(judge, Mapping) and judge.get("model"):
        models += f" · judge {judge.get('model')}"
    return RunRow(run_id=record.run_id, family=record.family, kind=str(doc.get("kind") or doc.get("verb") or ""),
                  created_at=record.created_at.replace("T", " ").replace("+00:00", " UTC"),
                  data=data, models=models, items_total=record.items_total,
                  items_unscored=record.items_unscored, headlines=headlines(record),
                  flags=flags(record))


class RunIndex:
    """The rows of every stored run, newest first, re-read at most every ``ttl_s`` seconds."""

    def __init__(self, runs_dir: str | Path | None = None, ttl_s: float = 30.0) -> None:
        self.runs_dir = runs_dir
        self.ttl_s = ttl_s
        self._rows: list[RunRow] = []
        self._stamp = -1e9
        self._lock = threading.Lock()

    def invalidate(self) -> None:
        with self._lock:
            self._stamp = -1e9

    def rows(self) -> list[RunRow]:
        with self._lock:
            if time.monotonic() - self._stamp > self.ttl_s:
                records = list_runs(runs_dir_override=self.runs_dir)
                self._rows = [_row(r) for r in reversed(records)]
                self._stamp = time.monotonic()
            return self._rows

    def known(self, run_id: str) -> bool:
        """Whether ``run_id`` is a stored run: the kept list first, re-read only on a miss."""
        with self._lock:
            if any(r.run_id == run_id for r in self._rows):
                return True
        self.invalidate()  # a run written since the last listing
        return any(r.run_id == run_id for r in self.rows())
