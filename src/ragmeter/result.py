"""The one result type that every public verb returns (``ragmeter.<family>.<verb>(...)``).

A :class:`Result` holds exactly what the CLI prints and writes for the same call:

* ``summary``: the dict ``--json`` writes (the family's aggregate document, with its
  ``signature`` and ``coverage``);
* ``items``: the per-item dicts ``--items`` writes (unscored items carry ``status`` and
  ``reason``);
* ``to_pandas()``: one row per input item in input order (needs pandas: ``ragmeter[pandas]``);
* ``headline``: the numbers every door reads (metric, group, value, CI, n, coverage,
  direction, flag), from the family's ``METRICS``; ``coverage``: rows, scored, unscored and
  the reasons, in one shape for every verb;
* ``save()``: a run record that ``ragmeter report``, ``ragmeter view`` and ``ragmeter gate``
  read (its repr is one line naming the file);
* ``_repr_html_``: the notebook view: the headline as a wide table (groups × metrics, each
  value with its CI and n), judge cards and alarms beside it, everything escaped.

The gates find one number with :func:`lookup_headline`; a metric or group that is not there
is a :class:`MetricLookupError` carrying the facts, which each door phrases in its own words.

Judged verbs also carry ``judges`` (one card per judge: its identity and its validation, or
"unvalidated") and ``alarms`` (e.g. the degenerate-judge alarm), which travel into the run
record and every report: the cards as ``summary["judges"]``, or as ``summary["judge_cards"]``
when ``judges`` already holds each judge's measured agreement (``trace run``, ``multilingual
judge`` on data with reference scores).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from ragmeter.stats._metric import ALL_GROUP, Headline

__all__ = ["Result", "MetricLookupError", "coverage_counts", "coverage_text", "find_metric",
           "headline_of", "headline_table_html", "lookup_headline"]

# Called with every new Result (the pytest plugin's --ragmeter-report collects them here).
_CREATED: list[Callable[[Result], None]] = []


class Result:
    """What one verb produced.  Construct through the family functions, not by hand."""

    def __init__(self, family: str, verb: str, summary: Mapping[str, Any], *,
                 items: Iterable[Mapping[str, Any]] | Callable[[], Iterable[Mapping[str, Any]]]
                 | None = None,
                 ordered_items: Callable[[], Iterable[Mapping[str, Any]]] | None = None,
                 detail: Any = None, inputs: Sequence[Any] = (), backends: Sequence[Any] = (),
                 models: Sequence[str] = (), prompt_versions: Mapping[str, str] | None = None,
                 judges: Sequence[Mapping[str, Any]] = (),
                 alarms: Sequence[Mapping[str, Any]] = (), engine: str | None = None,
                 item_columns: Callable[[], Any] | None = None,
                 headline: Sequence[Headline] | None = None) -> None:
        self.family = family
        self.verb = verb
        self.summary: dict[str, Any] = dict(summary)
        sig = self.summary.get("signature")
        if engine not in (None, "local") and isinstance(sig, str) \
                and f"|engine:{engine}" not in sig:
            # Results are identical to one process; the signature still says where they ran.
            self.summary["signature"] = f"{sig}|engine:{engine}"
        self.detail = detail  # the family's own result object (console tables, plots)
        self.inputs = list(inputs)
        self.backends = list(backends)
        self.models = list(models)
        self.prompt_versions = dict(prompt_versions or {})
        self.judges = [dict(j) for j in judges]
        self.alarms = [dict(a) for a in alarms]
        if self.judges and "judges" not in self.summary:
            self.summary["judges"] = self.judges
        elif self.judges and "judge_cards" not in self.summary:
            # "judges" holds a validation per judge (trace run, multilingual judge on data
            # with references): the cards travel beside it
            self.summary["judge_cards"] = self.judges
        if self.alarms and "alarms" not in self.summary:
            self.summary["alarms"] = self.alarms
        if headline is not None:
            self.summary["headline"] = [h.to_dict() for h in headline]
        self._items_source = items
        self._ordered_source = ordered_items
        # the items as ragmeter.runs._columns.ItemColumns (or None): a run record built from
        # them builds only the items it keeps
        self._item_columns = item_columns
        self._items: list[dict[str, Any]] | None = None
        for listener in list(_CREATED):
            listener(self)

    # ------------------------------------------------------------------ content

    @property
    def coverage(self) -> dict[str, Any]:
        """How many items the aggregates cover: ``rows``, ``scored``, ``unscored`` and the
        ``reasons`` (the family's own coverage keys beside them); counted from the items when
        the summary has no coverage in that shape."""
        counts = coverage_counts(self.summary)
        if counts:
            return counts
        items = self.items
        unscored = [i for i in items if i.get("status", "ok") != "ok"]
        reasons: dict[str, int] = {}
        for i in unscored:
            reasons[str(i.get("reason"))] = reasons.get(str(i.get("reason")), 0) + 1
        return {"rows": len(items), "scored": len(items) - len(unscored),
                "unscored": len(unscored), "reasons": reasons}

    @property
    def signature(self) -> str | None:
        """What produced the numbers; compare two results only when their signatures agree."""
        sig = self.summary.get("signature")
        return sig if isinstance(sig, str) else None

    def iter_items(self) -> Iterator[dict[str, Any]]:
        """The per-item dicts, streamed (what ``--items`` writes)."""
        if self._items is not None:
            yield from self._items
            return
        source = self._items_source
        if source is None:
            return
        yield from (dict(i) for i in (source() if callable(source) else source))

    def record_items(self) -> Iterable[Mapping[str, Any]]:
        """The items for a run record: columns when the family has them (a record then
        builds only the items it keeps), else :meth:`iter_items`."""
        if self._items is None and self._item_columns is not None:
            columns = self._item_columns()
            if columns is not None:
                return columns  # type: ignore[no-any-return]
        return self.iter_items()

    @property
    def items(self) -> list[dict[str, Any]]:
        """The per-item dicts (what ``--items`` writes), as a list."""
        if self._items is None:
            self._items = list(self.iter_items())
        return self._items

    def to_json(self) -> dict[str, Any]:
        """The summary (``--json``); the same dict as :attr:`summary`."""
        return self.summary

    def to_pandas(self) -> Any:
        """One row per input item, in input order: ids, per-item metrics, status and reason.

        Needs pandas (``pip install 'ragmeter[pandas]'``).
        """
        try:
            import pandas as pd
        except ImportError:
            from ragmeter.errors import MissingDependencyError

            raise MissingDependencyError("pandas", "pip install 'ragmeter[pandas]'") from None
        rows = list(self._ordered_source()) if self._ordered_source else self.items
        frame = pd.DataFrame.from_records([dict(r) for r in rows])
        for col in ("status", "reason"):
            if col not in frame.columns:
                frame[col] = "ok" if col == "status" else None
        return frame

    # ------------------------------------------------------------------ saving

    def to_record(self, *, command: Sequence[str] | None = None) -> Any:
        """This result as a run record in memory (what :meth:`save` writes)."""
        from ragmeter.runs._records import build_record

        return build_record(self.family, self.summary, self.record_items(), inputs=self.inputs,
                            command=list(command) if command is not None
                            else ["python", f"ragmeter.{self.family}.{self.verb}"],
                            backends=self.backends, models=self.models,
                            prompt_versions=self.prompt_versions)

    def save(self, runs_dir: str | None = None, *, command: Sequence[str] | None = None
             ) -> Any:
        """Write a run record (``$RAGMETER_HOME/runs`` or ``runs_dir``) and return it."""
        from ragmeter.runs._records import record_run

        return record_run(self.family, self.summary, self.record_items(), inputs=self.inputs,
                          command=list(command) if command is not None
                          else ["python", f"ragmeter.{self.family}.{self.verb}"],
                          backends=self.backends, models=self.models,
                          prompt_versions=self.prompt_versions, runs_dir_override=runs_dir)

    # ------------------------------------------------------------------ display

    @property
    def headline(self) -> list[Headline]:
        """The headline numbers every door reads: one :class:`~ragmeter.stats.Headline` per
        (metric, group) with value, 95% CI, n, coverage and direction."""
        return headline_of(self.summary)

    def _repr_html_(self) -> str:
        """The notebook view: the headline as a wide table (groups × metrics, each value with
        its 95% CI and n), the judge cards and alarms beside it, coverage above, signature
        below.  Everything from data is escaped."""
        esc = html.escape
        parts = [f"<div class='ragmeter-result'><p><b>ragmeter {esc(self.family)}."
                 f"{esc(self.verb)}</b> · {esc(self._status_text())}</p>"]
        if self.summary.get("dry_run"):
            text = getattr(self, "dry_run_text", None)
            if isinstance(text, str):
                parts.append(f"<pre>{esc(text)}</pre>")
        else:
            side = "".join(f"<p style='color:#b00000'>⚠ {esc(str(a.get('message', a)))}</p>"
                           for a in self.alarms)
            side += "".join(f"<p>judge: {esc(judge_card_line(j))}</p>" for j in self.judges)
            table = headline_table_html(self.headline, self.family)
            parts.append("<div style='display:flex;flex-wrap:wrap;gap:1.5em;"
                         f"align-items:flex-start'><div>{table}</div>"
                         + (f"<div style='max-width:28em'>{side}</div>" if side else "")
                         + "</div>")
        parts.append(f"<p><small>signature: {esc(self.signature or '—')}</small></p></div>")
        return "".join(parts)

    def _status_text(self) -> str:
        if self.summary.get("dry_run"):
            return "dry run: nothing was called"
        return "coverage " + coverage_text(self.coverage)

    def __repr__(self) -> str:
        n = len(self.headline)
        numbers = f"{n} headline number{'' if n == 1 else 's'}"
        return (f"<Result {self.family}.{self.verb}: {self._status_text()}; {numbers}; "
                f"signature={self.signature!r}>")


def judge_card_line(card: Mapping[str, Any]) -> str:
    """One line for a judge card: identity, then its validation or "unvalidated"."""
    from ragmeter.judges._card import card_line

    return card_line(card)


# ------------------------------------------------------------------ coverage


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else None


def coverage_counts(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A summary's coverage in the shape every door reads: ``rows``, ``scored``, ``unscored``
    (counts) and ``reasons`` (``{reason: count}``), beside the family's own keys.

    ``total`` (RGB, rubric) stands for ``rows`` where there is none.  ``{}`` when the summary
    has no coverage of that shape (e.g. a record written before the contract)."""
    cov = summary.get("coverage")
    if not isinstance(cov, Mapping):
        return {}
    rows = _count(cov.get("rows"))
    rows = _count(cov.get("total")) if rows is None else rows
    scored, unscored = _count(cov.get("scored")), _count(cov.get("unscored"))
    if scored is None:
        return {}
    if rows is None and unscored is not None:
        rows = scored + unscored
    if rows is None:
        return {}
    if unscored is None:
        unscored = max(rows - scored, 0)
    given = cov.get("reasons")
    reasons = {str(k): v for k, v in given.items() if _count(v) is not None} \
        if isinstance(given, Mapping) else {}
    return {**cov, "rows": rows, "scored": scored, "unscored": unscored, "reasons": reasons}


def coverage_text(counts: Mapping[str, Any]) -> str:
    """``8/10 scored (2 unscored, most often connection: 2)``; ``?/? scored`` when unknown."""
    rows, scored, unscored = (counts.get(k) for k in ("rows", "scored", "unscored"))
    if isinstance(scored, int) and isinstance(unscored, int):
        rows = scored + unscored  # the items the aggregates consider (reliability: not QC's)
    text = f"{'?' if scored is None else scored}/{'?' if rows is None else rows} scored"
    reasons = counts.get("reasons") or {}
    if unscored:
        text += f" ({unscored} unscored"
        if reasons:
            reason, count = max(reasons.items(), key=lambda kv: (kv[1], kv[0]))
            text += f", most often {reason}: {count}"
        text += ")"
    return text


# ------------------------------------------------------------------ the wide headline table


_CELL = "padding:2px 8px;text-align:right;vertical-align:top;white-space:nowrap"


def _metric_rows(family: str | None) -> Any:
    """The family's METRICS table (None for a family ragmeter does not know)."""
    from ragmeter._families import family_part

    return family_part(family, "_metrics", "METRICS") if family else None


def _number(value: float | None, digits: int) -> str:
    if value is None:
        return "—"
    if value != 0 and abs(value) < 10 ** -digits:
        return f"{value:.2e}"
    return f"{value:.{digits}f}"


def headline_table_html(rows: Sequence[Headline], family: str | None = None, *,
                        max_groups: int = 60) -> str:
    """Headline rows as one wide HTML table: a row per group, a column per metric (the
    family's label, its definition and source as the header's tooltip, ↑/↓ its direction);
    each cell the value, then its 95% CI and n.  A flagged number is marked ⚑ on a pink
    ground with the flag as tooltip.  Every text from data is escaped."""
    esc = html.escape
    if not rows:
        return "<p><i>no headline numbers: this verb measures nothing (see .items)</i></p>"
    table = _metric_rows(family)
    groups = list(dict.fromkeys(h.group for h in rows))
    metrics = list(dict.fromkeys(h.metric for h in rows))
    cells = {(h.group, h.metric): h for h in rows}
    meta: dict[str, Any] = {}
    for name in metrics:
        try:
            meta[name] = table.get(name) if table is not None else None
        except KeyError:
            meta[name] = None
    head = ["<th style='padding:2px 8px;text-align:left'>group</th>"]
    for name in metrics:
        m = meta[name]
        up = next((cells[g, name].higher_is_better for g in groups if (g, name) in cells), True)
        label = (m.label if m is not None else name) + (" ↑" if up else " ↓")
        tip = m.glossary_line() if m is not None else name
        head.append(f"<th style='{_CELL}' title='{esc(tip)}'>{esc(label)}</th>")
    body = []
    flagged = False
    for group in groups[:max_groups]:
        tds = [f"<th style='padding:2px 8px;text-align:left'>{esc(group)}</th>"]
        for name in metrics:
            h = cells.get((group, name))
            if h is None:
                tds.append(f"<td style='{_CELL}'></td>")
                continue
            digits = meta[name].digits if meta[name] is not None else 4
            sub = []
            if h.ci is not None:
                sub.append(f"[{_number(h.ci[0], digits)}, {_number(h.ci[1], digits)}]")
            if h.n is not None:
                sub.append(f"n={h.n}")
            value = esc(_number(h.value, digits))
            style, title = _CELL, ""
            if h.flag:
                flagged = True
                value = f"⚑ {value}"
                style += ";background:#fde2e2;color:#8b0000"
                title = f" title='flagged: {esc(h.flag)}'"
            small = f"<br><small>{esc(' · '.join(sub))}</small>" if sub else ""
            tds.append(f"<td style='{style}'{title}>{value}{small}</td>")
        body.append("<tr>" + "".join(tds) + "</tr>")
    more = len(groups) - max_groups
    notes = ["cells: value, [95% CI] · n; hover a heading for its definition"]
    if flagged:
        notes.append("⚑ flagged: not a measurement (hover the number for why)")
    if more > 0:
        notes.append(f"{more} more group(s) not shown: see .headline")
    return (f"<table><thead><tr>{''.join(head)}</tr></thead><tbody>{''.join(body)}</tbody>"
            f"</table><small>{esc('; '.join(notes))}</small>")


# ------------------------------------------------------------------ finding one number


_SKIP = {"n", "schema_version"}


def headline_rows(summary: Mapping[str, Any]) -> list[tuple[str, str, Any, Any]]:
    """The numbers of a summary as ``(group, metric, value, ci)``.

    Groups are the keys of ``summary["metrics"]`` when it maps groups to dicts (systems,
    languages, evaluators); a flat ``metrics`` dict is one group, ``all``.  CIs come from
    ``ci95``/``ci`` beside them when present.
    """
    metrics = summary.get("metrics")
    cis = summary.get("ci95") or summary.get("ci") or {}
    out: list[tuple[str, str, Any, Any]] = []
    if not isinstance(metrics, Mapping):
        return out
    nested = all(isinstance(v, Mapping) for v in metrics.values()) and metrics
    groups: Mapping[str, Any] = metrics if nested else {"all": metrics}
    for group, values in groups.items():
        if not isinstance(values, Mapping):
            continue
        group_ci = cis.get(group, {}) if nested and isinstance(cis, Mapping) else cis
        for key, value in values.items():
            if key in _SKIP or key.endswith("_std") or key.endswith("_n"):
                continue
            if isinstance(value, (int, float)) or value is None:
                ci = group_ci.get(key) if isinstance(group_ci, Mapping) else None
                out.append((str(group), str(key), value, ci))
    return out


def headline_of(summary: Mapping[str, Any]) -> list[Headline]:
    """The headline rows of a result's summary (or a stored run record's ``result``): the
    family's own (``summary["headline"]``), else rows read from the summary's ``metrics`` and
    ``ci95`` (records written before the headline existed)."""
    rows = summary.get("headline")
    if isinstance(rows, list) and all(isinstance(r, Mapping) and "metric" in r for r in rows):
        return [Headline.from_dict(r) for r in rows]
    out = []
    for group, metric, value, ci in headline_rows(summary):
        out.append(Headline.from_dict({"metric": metric, "group": group, "value": value,
                                       "ci": ci}))
    return out


class MetricLookupError(KeyError):
    """A metric, or a group of it, that a result does not have.

    It carries the facts (``kind``: ``"metric"`` unknown, ``"group"`` unknown for this metric,
    ``"ambiguous"`` several groups and none named; the ``metric`` and ``group`` asked; the valid
    ``metrics`` and the metric's ``groups``) and each door phrases them (:meth:`message`):
    Python names the argument (``group=``), the command line the flag (``--group``)."""

    def __init__(self, kind: str, metric: str, group: str | None, metrics: Sequence[str],
                 groups: Sequence[str] = ()) -> None:
        super().__init__(metric)
        self.kind = kind
        self.metric = metric
        self.group = group
        self.metrics = tuple(metrics)
        self.groups = tuple(groups)

    def message(self, door: str = "python") -> str:
        """The message in the words of ``door``: ``"python"`` or ``"cli"``."""
        import difflib

        cli = door == "cli"
        if self.kind == "metric":
            close = difflib.get_close_matches(self.metric, self.metrics, n=1, cutoff=0.5)
            hint = f" Did you mean: {close[0]}?" if close else ""
            names = ", ".join(self.metrics) or "none (nothing was measured)"
            where = "--require METRIC>=N" if cli else "the metric argument"
            return (f"no metric {self.metric!r} in this result; its metrics: {names}.{hint} "
                    f"Fix: name one of them in {where}")
        groups = ", ".join(self.groups)
        example = self.groups[0] if self.groups else "NAME"
        fix = f"--group {example}" if cli else f"group={example!r}"
        if self.kind == "group":
            return (f"no group {self.group!r} for metric {self.metric!r}; its groups: "
                    f"{groups}. Fix: name one of them, e.g. {fix}")
        return (f"metric {self.metric!r} exists for several groups ({groups}): name one of "
                f"them, e.g. {fix}")

    def __str__(self) -> str:
        return self.message("python")


def lookup_headline(summary: Mapping[str, Any], metric: str, group: str | None = None
                    ) -> Headline:
    """The headline row of ``metric`` (in ``group``) of a summary; :class:`MetricLookupError`
    when there is none, or several and no ``group`` (then the ``all`` row is taken when
    there is one).  Summaries without headline rows (records written before them) are read
    through :func:`headline_of`, and a plain number at the top of the summary is found
    too."""
    rows = headline_of(summary)
    matches = [h for h in rows if h.metric == metric]
    if not matches:
        legacy = summary.get(metric)
        if not summary.get("headline") and isinstance(legacy, (int, float)) \
                and not isinstance(legacy, bool):
            return Headline(metric, ALL_GROUP, float(legacy))
        raise MetricLookupError("metric", metric, group, list(dict.fromkeys(h.metric
                                                                         for h in rows)))
    groups = [h.group for h in matches]
    if group is not None:
        chosen = [h for h in matches if h.group == group]
        if not chosen:
            raise MetricLookupError("group", metric, group, [], groups)
        return chosen[0]
    if len(matches) == 1:
        return matches[0]
    chosen = [h for h in matches if h.group == ALL_GROUP]
    if not chosen:
        raise MetricLookupError("ambiguous", metric, None, [], groups)
    return chosen[0]


def find_metric(summary: Mapping[str, Any], metric: str, group: str | None = None
                ) -> tuple[Any, Any, int | None]:
    """``(value, ci, n)`` of ``metric`` (in ``group``) in a summary, read from its headline
    rows (:func:`lookup_headline`); :class:`MetricLookupError` (a KeyError) when absent."""
    h = lookup_headline(summary, metric, group)
    return h.value, list(h.ci) if h.ci is not None else None, h.n
