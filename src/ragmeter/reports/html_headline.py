"""The headline every report section opens with, and the web app's run list reads (issue 25).

A stored result carries its headline rows (``summary["headline"]``: metric, group, value, CI,
n, coverage, direction, flag; :class:`ragmeter.stats.Headline`).  This module reads them from a
run record (:func:`rows_of`), picks the family's main metric (:func:`main_rows`, the run list's
number) and renders them as one table for every family (:func:`headline_table`): metrics as
columns and groups as rows when that grid is mostly filled, else one row per number.  Labels,
digits, directions and the glossary (:func:`legend`, and a tooltip on every metric's heading)
come from the family's ``METRICS`` (:meth:`ragmeter.stats.Metric.glossary_line`).  A flagged
number (a degenerate judge ...) is marked in its cell and its reason given below the table,
never shown as a plain measurement.

Everything from data is escaped; nothing here computes a metric.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

from ragmeter.reports._html import Markup, esc, number
from ragmeter.stats import ALL_GROUP, Headline, MetricTable

__all__ = ["rows_of", "metrics_of", "main_rows", "headline_table", "legend", "headline_cell",
           "headline_inline", "digits_of", "label_of",
           "data_label", "FLAG_MARK", "WIDE_FILL"]

FLAG_MARK = "⚑"  # beside a flagged number (not a measurement: see its reason)
WIDE_FILL = 0.6  # a groups × metrics grid is used when at least this share of it is filled
WIDE_MAX_METRICS = 8  # more metrics than this read better one per row
LEGEND_OPEN = 6  # a legend of more metrics is folded


def metrics_of(family: str) -> MetricTable | None:
    """The family's ``METRICS`` (None for a family ragmeter does not know, e.g. an old record)."""
    from ragmeter._families import family_part

    found = family_part(family, "_metrics", "METRICS")
    return found if isinstance(found, MetricTable) else None


def rows_of(family: str, doc: Mapping[str, Any]) -> list[Headline]:
    """The headline rows of a stored result: the ones stored with it; for a record written
    before them, the family's ``headline(summary)``; else the summary's ``metrics``/``ci95``
    (:func:`ragmeter.result.headline_of`).  Empty when none can be read."""
    from ragmeter._families import family_part
    from ragmeter.result import headline_of

    if isinstance(doc.get("headline"), list):
        return headline_of(doc)
    build = family_part(family, "_metrics", "headline")
    if build is not None:
        try:
            return list(build(doc))
        except (KeyError, TypeError, ValueError, AttributeError, IndexError):
            pass  # an older or newer shape than the family reads: the generic rows below
    return headline_of(doc)


def _stem(name: str) -> tuple[str, int | None]:
    """``("ndcg", 10)`` for ``ndcg@10``; ``(name, None)`` for a name without a cutoff."""
    stem, at, k = name.rpartition("@")
    return (stem, int(k)) if at and k.isascii() and k.isdigit() else (name, None)


def main_rows(family: str, rows: Sequence[Headline]) -> list[Headline]:
    """The rows of the family's main metric (``ragmeter._families.FAMILIES[family]
    .main_metric``), in their stored order.  A cutoff metric falls back to the same measure at
    the largest cutoff the result has (``ndcg@20`` when ``ndcg@10`` was not asked for); a
    result without the main metric (a judge validation, a build) gives its first metric's
    rows."""
    from ragmeter._families import FAMILIES

    fam = FAMILIES.get(family)
    main = fam.main_metric if fam is not None else None
    if main is not None and not any(h.metric == main for h in rows):
        stem, k = _stem(main)
        cuts = sorted(c for h in rows for s, c in [_stem(h.metric)] if s == stem and c)
        main = f"{stem}@{cuts[-1]}" if k is not None and cuts else None
    if main is None and rows:
        main = rows[0].metric
    return [h for h in rows if h.metric == main]


def label_of(metrics: MetricTable | None, name: str) -> str:
    return metrics.get(name).label if metrics is not None and name in metrics else name


def _glossary(metrics: MetricTable | None, name: str) -> str:
    return metrics.get(name).glossary_line() if metrics is not None and name in metrics else ""


def digits_of(metrics: MetricTable | None, name: str) -> int:
    return metrics.get(name).digits if metrics is not None and name in metrics else 4


def _arrow(h: Headline) -> str:
    return "↑" if h.higher_is_better else "↓"


def _bound(x: float, digits: int) -> str:
    """An interval's bound: at most three decimals, more only when the metric keeps more than
    four and they are not zeros (CNBE's ``-0.000732``, not ``-7.32e-04``; a weighted score's
    ``0.300``, not ``0.300000``)."""
    text = number(x, digits if digits > 4 else min(digits, 3))
    if "." in text and "e" not in text:
        whole, frac = text.split(".")
        text = f"{whole}.{frac[:3]}{frac[3:].rstrip('0')}"
    return text


def _parts(h: Headline, digits: int) -> tuple[str, str, str]:
    """The value, the ``[lo, hi]`` interval and ``n=`` of a number as escaped markup (empty
    parts when absent); a number over no item (n = 0) is '—' without an interval."""
    value = None if h.n == 0 else h.value
    ci = (f'<span class="ci">[{esc(_bound(h.ci[0], digits))}, '
          f'{esc(_bound(h.ci[1], digits))}]</span>'
          if h.ci is not None and value is not None else "")
    n = f'<span class="ci">n={esc(h.n)}</span>' if h.n is not None else ""
    return f'<span class="v">{esc(number(value, digits))}</span>', ci, n


def _marked(h: Headline, out: str, sep: str) -> str:
    """``out`` marked as flagged (its reason as the tooltip) when ``h`` is."""
    if not h.flag:
        return out
    return (f'<span class="flagged" title="{esc(h.flag)}"><span class="flag-mark">'
            f"{FLAG_MARK} flagged</span>{sep}{out}</span>")


def headline_cell(h: Headline, digits: int = 4, sep: str = "<br>") -> Markup:
    """One number as a cell: the value, its 95% interval below, then n (``sep`` between
    them); a flagged number is marked (:data:`FLAG_MARK`, its reason as the tooltip); a
    number over no item is '—'."""
    return Markup(_marked(h, sep.join(p for p in _parts(h, digits) if p), sep))


def headline_inline(h: Headline, digits: int = 4) -> Markup:
    """One number on one line: ``0.9500 [0.878, 0.980] n=80`` (at most four decimals)."""
    return headline_cell(h, min(digits, 4), sep=" ")


def _shown_label(metrics: MetricTable | None, name: str, names: Sequence[str]) -> str:
    """The metric's label, with its name beside it when another metric shown has the same
    label (RGB's three ``Acc``)."""
    label = label_of(metrics, name)
    if sum(1 for n in names if label_of(metrics, n) == label) > 1:
        return f"{label} ({name})"
    return label


def _metric_head(metrics: MetricTable | None, name: str, h: Headline,
                 names: Sequence[str] = ()) -> str:
    tip = _glossary(metrics, name)
    title = f' title="{esc(tip)}"' if tip else ""
    return (f'<span class="metric"{title}>{esc(_shown_label(metrics, name, names))}</span>'
            f' <span class="dir">{_arrow(h)}</span>')


def _flags(rows: Sequence[Headline], metrics: MetricTable | None) -> str:
    flagged = [h for h in rows if h.flag]
    if not flagged:
        return ""
    lines = "".join(f"<li>{esc(label_of(metrics, h.metric))}"
                    f"{'' if h.group == ALL_GROUP else ' (' + esc(h.group) + ')'}: "
                    f"{esc(h.flag)}</li>" for h in flagged)
    return (f'<div class="flags"><b>{FLAG_MARK} flagged: not measurements</b>'
            f'<ul>{lines}</ul></div>')


def _coverage(h: Headline) -> str:
    return "—" if h.coverage is None else f"{100 * h.coverage:.1f}%"


def headline_table(rows: Sequence[Headline], metrics: MetricTable | None, *,
                   caption: str | None = None) -> Markup:
    """The headline rows as one table (see the module's docstring), the reasons of flagged
    numbers below it.  Empty markup for no rows."""
    if not rows:
        return Markup("")
    groups = list(dict.fromkeys(h.group for h in rows))
    names = list(dict.fromkeys(h.metric for h in rows))
    cells = {(h.group, h.metric): h for h in rows}
    wide = (len(groups) > 1 and len(names) > 1 and len(names) <= WIDE_MAX_METRICS
            and len(cells) >= WIDE_FILL * len(groups) * len(names))
    show_cov = any(h.coverage is not None and h.coverage < 1 for h in rows)
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    out = [f'<table class="headline">{cap}<thead><tr>']
    if wide:
        first = {n: next(h for h in rows if h.metric == n) for n in names}
        out.append("<th>group</th>" + "".join(
            f'<th class="num">{_metric_head(metrics, n, first[n], names)}</th>'
            for n in names))
        if show_cov:
            out.append('<th class="num">coverage</th>')
        out.append("</tr></thead><tbody>")
        for g in groups:
            out.append(f"<tr><th>{esc(g)}</th>")
            for n in names:
                h = cells.get((g, n))
                out.append('<td class="num">' + (headline_cell(h, digits_of(metrics, n))
                                                 if h is not None else "—") + "</td>")
            if show_cov:
                out.append(f'<td class="num">{_coverage(next(h for h in rows if h.group == g))}'
                           "</td>")
            out.append("</tr>")
    else:
        grouped = groups != [ALL_GROUP]
        out.append(("<th>group</th>" if grouped else "") + "<th>metric</th>"
                   '<th class="num">value</th><th class="num">95% CI</th><th class="num">n</th>'
                   + ('<th class="num">coverage</th>' if show_cov else "")
                   + "</tr></thead><tbody>")
        for h in rows:
            value, ci, n = _parts(h, digits_of(metrics, h.metric))
            out.append(f'<tr{" class=flagged-row" if h.flag else ""}>'
                       + (f"<td>{esc(h.group)}</td>" if grouped else "")
                       + f"<td>{_metric_head(metrics, h.metric, h, names)}</td>"
                       f'<td class="num">{_marked(h, value, " ")}</td>'
                       f'<td class="num">{ci or "—"}</td>'
                       f'<td class="num">{esc(number(h.n))}</td>'
                       + (f'<td class="num">{_coverage(h)}</td>' if show_cov else "")
                       + "</tr>")
    out.append("</tbody></table>")
    return Markup("".join(out) + _flags(rows, metrics))


def legend(rows: Sequence[Headline], metrics: MetricTable | None) -> Markup:
    """One line per metric of ``rows``: its label, definition and source (the glossary, from
    ``METRICS``), and which way is better; folded under a summary beyond
    :data:`LEGEND_OPEN` metrics."""
    lines = []
    names = list(dict.fromkeys(h.metric for h in rows))
    for name in names:
        if metrics is None or name not in metrics:
            continue
        m = metrics.get(name)
        better = "higher is better" if m.higher_is_better else "lower is better"
        lines.append(f"<li><b>{esc(_shown_label(metrics, name, names))}</b>: "
                     f"{esc(m.description)} ({better}; source: {esc(m.source)})</li>")
    if not lines:
        return Markup("")
    body = f'<ul class="legend">{"".join(lines)}</ul>'
    if len(lines) <= LEGEND_OPEN:
        return Markup(body)
    return Markup(f'<details class="legend"><summary>What these {len(lines)} metrics mean '
                  f"(definitions and sources)</summary>{body}</details>")


# Hugging Face dataset shards: ``test-00000-of-00001.parquet`` (RAGBench's files).
_SHARD = re.compile(r"(?P<split>[A-Za-z][\w.]*?)-(?P<index>\d{5})-of-(?P<count>\d{5})\.\w+")


def data_label(path: str) -> str:
    """A data file's short name: the file name, or for a dataset shard named only by its split
    (``ragbench/hotpotqa/test-00000-of-00001.parquet``) its folder and split
    (``hotpotqa/test``; ``hotpotqa/test 2/4`` for the second of four shards), so that runs on
    different domains and splits can be told apart."""
    p = PurePath(path)
    found = _SHARD.fullmatch(p.name)
    if found is None:
        return p.name
    count = int(found["count"])
    label = found["split"] + (f" {int(found['index']) + 1}/{count}" if count > 1 else "")
    return f"{p.parent.name}/{label}" if p.parent.name else label
