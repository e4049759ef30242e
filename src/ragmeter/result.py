"""The one result type that every public verb returns (``ragmeter.<family>.<verb>(...)``).

A :class:`Result` holds exactly what the CLI prints and writes for the same call:

* ``summary``: the dict ``--json`` writes (the family's aggregate document, with its
  ``signature`` and ``coverage``);
* ``items``: the per-item dicts ``--items`` writes (unscored items carry ``status`` and
  ``reason``);
* ``to_pandas()``: one row per input item in input order (needs pandas: ``ragmeter[pandas]``);
* ``save()``: a run record that ``ragmeter report`` and ``ragmeter view`` show;
* ``_repr_html_``: a compact table in a notebook (headline numbers, CIs, coverage).

Judged verbs also carry ``judges`` (one card per judge: its identity and its validation, or
"unvalidated") and ``alarms`` (e.g. the degenerate-judge alarm), which travel into the run
record and every report: the cards as ``summary["judges"]``, or as ``summary["judge_cards"]``
when ``judges`` already holds each judge's measured agreement (``trace run``, ``multilingual
judge`` on data with reference scores).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from ragmeter.stats._metric import ALL_GROUP, Headline

__all__ = ["Result", "headline_of"]

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
        """How many items the aggregates cover: rows, scored, unscored and the reasons."""
        cov = self.summary.get("coverage")
        if isinstance(cov, Mapping):
            return dict(cov)
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
        import html

        esc = html.escape
        cov = self.coverage
        rows = "".join(
            f"<tr><td>{esc(str(g))}</td><td>{esc(m)}</td><td>{esc(_fmt(v))}</td>"
            f"<td>{esc(_fmt_ci(h.ci))}</td></tr>"
            for g, m, v, h in ((h.group, h.metric, h.value, h) for h in self.headline[:60]))
        alarms = "".join(f"<p style='color:#b00'>⚠ {esc(str(a.get('message', a)))}</p>"
                         for a in self.alarms)
        judges = "".join(f"<p>judge: {esc(judge_card_line(j))}</p>" for j in self.judges)
        return (f"<div><b>ragmeter {esc(self.family)} {esc(self.verb)}</b> "
                f"<small>coverage {cov.get('scored', '?')}/{cov.get('rows', '?')} scored"
                f"</small>{alarms}{judges}<table><thead><tr><th>group</th><th>metric</th>"
                f"<th>value</th><th>95% CI</th></tr></thead><tbody>{rows}</tbody></table>"
                f"<small>{esc(self.signature or '')}</small></div>")

    def __repr__(self) -> str:
        cov = self.coverage
        return (f"<Result {self.family}.{self.verb}: {cov.get('scored', '?')}/"
                f"{cov.get('rows', '?')} scored, signature={self.signature!r}>")


def judge_card_line(card: Mapping[str, Any]) -> str:
    """One line for a judge card: identity, then its validation or "unvalidated"."""
    from ragmeter.judges._card import card_line

    return card_line(card)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4f}"
    return "—" if v is None else str(v)


def _fmt_ci(ci: Any) -> str:
    if isinstance(ci, (list, tuple)) and len(ci) == 2 and all(
            isinstance(x, (int, float)) for x in ci):
        return f"[{ci[0]:.4f}, {ci[1]:.4f}]"
    return ""


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


def find_metric(summary: Mapping[str, Any], metric: str, group: str | None = None
                ) -> tuple[Any, Any, int | None]:
    """``(value, ci, n)`` of ``metric`` (in ``group``) in a summary; KeyError when absent.

    Looks in the headline rows when the summary has them, else in
    ``summary["metrics"][group][metric]`` (grouped summaries: systems, languages,
    evaluators), else ``summary["metrics"][metric]``, else ``summary[metric]``.
    """
    if isinstance(summary.get("headline"), list) and summary["headline"]:
        return _find_in_headline(headline_of(summary), metric, group)
    metrics = summary.get("metrics")
    cis = summary.get("ci95") or summary.get("ci") or {}
    if isinstance(metrics, Mapping):
        if group is not None:
            values = metrics.get(group)
            if isinstance(values, Mapping) and metric in values:
                gci = cis.get(group, {}) if isinstance(cis, Mapping) else {}
                n = values.get("n")
                return (values[metric], gci.get(metric) if isinstance(gci, Mapping) else None,
                        n if isinstance(n, int) else None)
            raise KeyError(f"no metric {metric!r} for group {group!r}; groups: "
                           f"{', '.join(map(str, metrics))}")
        if metric in metrics and not isinstance(metrics[metric], Mapping):
            n = metrics.get("n")
            return (metrics[metric], cis.get(metric) if isinstance(cis, Mapping) else None,
                    n if isinstance(n, int) else None)
        groups = [g for g, v in metrics.items() if isinstance(v, Mapping) and metric in v]
        if len(groups) == 1:
            return find_metric(summary, metric, groups[0])
        if groups:
            raise KeyError(f"metric {metric!r} exists for several groups "
                           f"({', '.join(groups)}): name one with group=")
    if metric in summary and not isinstance(summary[metric], (Mapping, list)):
        return summary[metric], None, None
    raise KeyError(f"no metric {metric!r} in this result")


def _find_in_headline(rows: Sequence[Headline], metric: str, group: str | None
                      ) -> tuple[Any, Any, int | None]:
    matches = [h for h in rows if h.metric == metric]
    if not matches:
        names = ", ".join(dict.fromkeys(h.metric for h in rows))
        raise KeyError(f"no metric {metric!r} in this result; its metrics: {names}")
    if group is not None:
        chosen = [h for h in matches if h.group == group]
        if not chosen:
            groups = ", ".join(h.group for h in matches)
            raise KeyError(f"no group {group!r} for metric {metric!r}; its groups: {groups}")
    elif len(matches) == 1:
        chosen = matches
    else:
        chosen = [h for h in matches if h.group == ALL_GROUP]
        if not chosen:
            groups = ", ".join(h.group for h in matches)
            raise KeyError(f"metric {metric!r} exists for several groups ({groups}): name one "
                           "of them as the group")
    h = chosen[0]
    return h.value, list(h.ci) if h.ci is not None else None, h.n
