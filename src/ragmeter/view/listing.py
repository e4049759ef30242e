"""The run list of the web app: one row per stored run record, with its headline number.

Rows come from :func:`ragmeter.runs._records.list_runs` only (never from the files themselves),
kept for 30 seconds so that paging and filtering a large store do not re-read it; a job
finishing in the app or the page's *refresh* link re-reads it at once, an unknown run id only
when the runs folder changed.  A run's number is its family's main metric
(``ragmeter._families.FAMILIES[name].main_metric``) from the headline rows stored with its
result, with CI and n, read through the report's own :mod:`ragmeter.reports.html_headline`:
the same rows the report, ``--json`` and the gates read.  Nothing is recomputed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.runs._records import RunRecord, list_runs

__all__ = ["Headline", "RunRow", "RunIndex", "headlines", "run_headlines", "flags"]

MAX_HEADLINES = 4
_SETTLE_NS = 2_000_000_000  # a folder's mtime is trusted once it is this old (2 s)


@dataclass(frozen=True)
class Headline:
    """One number of a run as the list shows it: ``<group> <metric label>``, value, 95%
    interval and n when stored, and the flag that says it is not a measurement."""

    label: str
    value: float | None
    ci: tuple[float, float] | None = None
    n: int | None = None
    flag: str | None = None
    digits: int = 3


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
    more: int = 0  # groups of the main metric not shown

    @property
    def coverage(self) -> float | None:
        if not self.items_total:
            return None
        return (self.items_total - self.items_unscored) / self.items_total


def run_headlines(family: str, doc: Mapping[str, Any]) -> tuple[list[Headline], int]:
    """The main metric's rows of a stored result (every group, in stored order; a flagged one
    kept, with its flag), at most :data:`MAX_HEADLINES`, and how many more there are."""
    from ragmeter.reports.html_headline import digits_of, label_of, main_rows, metrics_of, rows_of

    metrics = metrics_of(family)
    rows = [h for h in main_rows(family, rows_of(family, doc)) if h.value is not None]
    out = [Headline(label_of(metrics, h.metric) if h.group == "all"
                    else f"{h.group} {label_of(metrics, h.metric)}",
                    None if h.n == 0 else h.value, h.ci, h.n, h.flag,
                    min(3, digits_of(metrics, h.metric)))
           for h in rows[:MAX_HEADLINES]]
    return out, max(0, len(rows) - MAX_HEADLINES)


def headlines(record: RunRecord) -> list[Headline]:
    """Up to four numbers of a run (its family's main metric), read from its stored result."""
    doc = record.result if isinstance(record.result, Mapping) else {}
    return run_headlines(record.family, doc)[0]


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
    from ragmeter.reports.html_headline import data_label

    doc = record.result if isinstance(record.result, Mapping) else {}
    names = list(dict.fromkeys(data_label(i.path) for i in record.inputs))
    data = ", ".join(names[:3]) + (f" (+{len(names) - 3})" if len(names) > 3 else "")
    model = doc.get("model")
    if isinstance(model, Mapping):  # a backend's identity (RGB): its model's name
        model = model.get("model")
    models = ", ".join(record.models) or str(model or "")
    judge = doc.get("judge")
    if isinstance(judge, Mapping) and judge.get("model"):
        models += f" · judge {judge.get('model')}"
    shown, more = run_headlines(record.family, doc)
    return RunRow(run_id=record.run_id, family=record.family,
                  kind=str(doc.get("kind") or doc.get("verb") or ""),
                  created_at=record.created_at.replace("T", " ").replace("+00:00", " UTC"),
                  data=data, models=models, items_total=record.items_total,
                  items_unscored=record.items_unscored, headlines=shown, more=more,
                  flags=flags(record))


class RunIndex:
    """The rows of every stored run, newest first, re-read at most every ``ttl_s`` seconds.

    A run id that is not among the rows is looked up again only when the runs folder changed
    since the rows were read (a new record changes the folder's modification time): a miss is
    remembered until then, so ``GET /runs/<unknown id>`` costs one ``stat``, not a re-read of
    every record (issue 29.1)."""

    def __init__(self, runs_dir: str | Path | None = None, ttl_s: float = 30.0) -> None:
        self.runs_dir = runs_dir
        self.ttl_s = ttl_s
        self._rows: list[RunRow] = []
        self._ids: frozenset[str] = frozenset()
        self._stamp = -1e9
        self._folder_stamp: int | None = None  # the folder's mtime when the rows were read
        self._lock = threading.Lock()

    def invalidate(self) -> None:
        with self._lock:
            self._stamp = -1e9

    def _folder_changed(self) -> int | None:
        """The runs folder's modification time (ns), or None when it cannot be trusted to
        change with the next record: absent, or changed within the last ``_SETTLE_NS`` (a
        file system with coarse timestamps gives a record written in the same tick the same
        time)."""
        from ragmeter.runs._records import runs_dir

        try:
            stamp = runs_dir(self.runs_dir).stat().st_mtime_ns
        except OSError:
            return None
        return stamp if time.time_ns() - stamp > _SETTLE_NS else None

    def rows(self) -> list[RunRow]:
        with self._lock:
            if time.monotonic() - self._stamp > self.ttl_s:
                stamp = self._folder_changed()  # before reading: a record written meanwhile
                records = list_runs(runs_dir_override=self.runs_dir)  # is read again later
                self._rows = [_row(r) for r in reversed(records)]
                self._ids = frozenset(r.run_id for r in self._rows)
                self._folder_stamp = stamp
                self._stamp = time.monotonic()
            return self._rows

    def known(self, run_id: str) -> bool:
        """Whether ``run_id`` is a stored run: the kept rows first, re-read only when the
        folder changed since (a miss against an unchanged folder is answered at once)."""
        with self._lock:
            if run_id in self._ids:
                return True
            stamp = self._folder_stamp
            if stamp is not None and self._stamp > 0 and self._folder_changed() == stamp:
                return False
        self.invalidate()  # a run written since the last listing
        self.rows()
        with self._lock:
            return run_id in self._ids
