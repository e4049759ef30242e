"""How a retrieval result is shown: the console tables (rich), the HTML report's section and the
per-query values a comparison of runs pairs on.  Reads stored results only; never computes a
metric."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.markup import escape
from rich.table import Table

from ragmeter.reports._html import Markup, kv_table, note, table
from ragmeter.reports.console import console, fmt
from ragmeter.reports.html_families import Units, collect_units, fixed, notes_html, with_ci
from ragmeter.retrieval._metrics import METRICS

__all__ = ["print_retrieval", "section", "paired_units"]


def _as_json(result: Any) -> Mapping[str, Any]:
    return result if isinstance(result, Mapping) else result.to_json()


def _grid(doc: Mapping[str, Any]) -> tuple[list[int], list[tuple[str, list[str]]], list[str]]:
    """``(cutoffs, [(label, [metric at each cutoff])], [metrics without a cutoff])`` of the
    metrics a summary holds, in METRICS order."""
    names = list(doc.get("metrics") or {})
    cuts = [int(k) for k in doc.get("k") or []]
    grid = []
    single = []
    for m in METRICS:
        if m.cutoff:
            row = [m.at(c).name for c in cuts]
            if any(n in names for n in row):
                grid.append((m.label[:-2], row))
        elif m.name in names:
            single.append(m.name)
    return cuts, grid, single


def _ci_text(ci: Any) -> str:
    return f" [{ci[0]:.3f}, {ci[1]:.3f}]" if isinstance(ci, (list, tuple)) and len(ci) == 2 \
        else ""


def print_retrieval(result: Any) -> None:
    """The means per metric and cutoff (95% CI when computed), the queries counted, the
    settings and the signature; a comparison of two runs as its own table."""
    doc = _as_json(result)
    if doc.get("verb") == "compare":
        _print_comparison(doc)
        return
    con = console()
    metrics: Mapping[str, Any] = doc["metrics"]
    cis: Mapping[str, Any] = doc.get("ci95") or {}
    cuts, grid, single = _grid(doc)
    title = f"Retrieval: {doc.get('run')}" + (
        f" against {doc.get('qrels')}" if doc.get("qrels") != doc.get("run") else "")
    con.print(escape(title), soft_wrap=True)
    table_ = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 0, 0, 1))
    table_.add_column("metric", no_wrap=True)
    for c in cuts:
        table_.add_column(f"@{c}", justify="right", no_wrap=True)
    for label, row in grid:
        table_.add_row(label, *[fmt(metrics.get(n)) + _ci_text(cis.get(n)) for n in row])
    for name in single:
        table_.add_row(METRICS.get(name).label, fmt(metrics[name]) + _ci_text(cis.get(name)),
                       *[""] * (len(cuts) - 1))
    con.print(table_)
    q = doc.get("queries") or {}
    cov = doc.get("coverage") or {}
    line = f"queries: {q.get('scored')} scored of {q.get('total')}"
    if cov.get("reasons"):
        line += " (unscored: " + ", ".join(f"{k} {v}" for k, v in cov["reasons"].items()) + ")"
    con.print(escape(line))
    con.print(f"trec_eval: {doc.get('trec_eval')} (MRR and MAP over the whole ranking; "
              "means over the scored queries" + ("; 95% CI: percentile bootstrap" if cis else "")
              + ")", style="dim")
    groups = doc.get("groups")
    if isinstance(groups, Mapping) and groups.get("values"):
        _print_groups(groups, cuts)
    for n in doc.get("notes") or []:
        con.print(escape(f"note: {n}"))
    con.print(escape(f"signature: {doc.get('signature')}"), style="dim", soft_wrap=True)


def _print_groups(groups: Mapping[str, Any], cuts: Sequence[int]) -> None:
    """One row per ``--by`` group: every metric at the largest cutoff, MRR and MAP."""
    top = max(cuts) if cuts else None
    names = [m.at(top).name if m.cutoff and top else m.name for m in METRICS]
    values: Mapping[str, Mapping[str, Any]] = groups["values"]
    names = [n for n in names if any(n in (p.get("metrics") or {}) for p in values.values())]
    table_ = Table(title=escape(f"By {groups.get('by')}") + (
        f" (cutoff {top}; every cutoff in --json)" if top else ""), title_justify="left",
        box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 0, 0, 1))
    table_.add_column("group")
    for n in names:
        table_.add_column(METRICS.get(n).label, justify="right")
    table_.add_column("queries", justify="right")
    for value, part in values.items():
        metrics = part.get("metrics") or {}
        cis = part.get("ci95") or {}
        cov = part.get("coverage") or {}
        table_.add_row(escape(value or "(empty)"),
                       *[fmt(metrics.get(n)) + _ci_text(cis.get(n)) for n in names],
                       f"{cov.get('scored', '?')}/{cov.get('rows', '?')}")
    console().print(table_)


def _print_comparison(doc: Mapping[str, Any]) -> None:
    con = console()
    labels = [str(r["label"]) for r in doc["runs"]]
    con.print(escape(f"Retrieval: {labels[1]} against {labels[0]} on "
                     f"{doc['paired_queries']} paired queries"), soft_wrap=True)
    table_ = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 0, 0, 1))
    for head in ("metric", *labels, f"{labels[1]} - {labels[0]}", "95% CI", "p"):
        table_.add_column(escape(head), justify="left" if head == "metric" else "right",
                          no_wrap=True)
    for name, c in doc["comparison"].items():
        ci = c.get("ci95") or [None, None]
        table_.add_row(METRICS.get(name).label, fmt(c.get("a")), fmt(c.get("b")),
                       fmt(c.get("difference")), f"{fmt(ci[0], 3)}, {fmt(ci[1], 3)}",
                       fmt(c.get("p_value"), 4))
    con.print(table_)
    only = doc.get("scored_in_one_run_only") or {}
    if any(only.values()):
        con.print(escape("scored in one run only (not compared): "
                         + ", ".join(f"{k} {v}" for k, v in only.items())))
    test = doc.get("test") or {}
    con.print(escape(f"p: {test.get('method')}, {test.get('resamples')} resamples; 95% CI: "
                     f"{test.get('ci')}; trec_eval: {doc.get('trec_eval')}"), style="dim")
    for n in doc.get("notes") or []:
        con.print(escape(f"note: {n}"))
    con.print(escape(f"signature: {doc.get('signature')}"), style="dim", soft_wrap=True)


# ------------------------------------------------------------------ HTML


def _legend(names: Sequence[str]) -> str:
    """One line per metric shown: its definition and source (the METRICS glossary)."""
    lines = [m.glossary_line() for m in METRICS
             if any(n == m.name or (m.cutoff and n.startswith(m.name[:-1])) for n in names)]
    return "".join(str(note(line)) for line in lines)


def section(doc: Mapping[str, Any]) -> Markup:
    """The means per metric (rows) and cutoff (columns) with their 95% CIs, MRR and MAP, the
    queries counted and the settings; a comparison's table of differences and p-values."""
    if doc.get("verb") == "compare":
        return _comparison_section(doc)
    metrics: Mapping[str, Any] = doc["metrics"]
    cis: Mapping[str, Any] = doc.get("ci95") or {}
    n: Mapping[str, Any] = doc.get("n") or {}
    cuts, grid, single = _grid(doc)
    rows = [[label, *[with_ci(metrics.get(name), cis.get(name)) for name in names]]
            for label, names in grid]
    rows += [[METRICS.get(name).label, with_ci(metrics[name], cis.get(name)),
              *[""] * (len(cuts) - 1)] for name in single]
    queries = doc.get("queries") or {}
    cov = doc.get("coverage") or {}
    settings = doc.get("settings") or {}
    scored = max((v for v in n.values() if isinstance(v, int)), default=None)
    parts = [table(["metric", *[f"@{c}" for c in cuts]], rows,
                   caption=f"Mean over {scored} scored queries"
                           + (" (95% bootstrap CI under a value)" if cis else "")
                           + "; MRR and MAP over the whole ranking"),
             kv_table([("run", doc.get("run")), ("judgments", doc.get("qrels")),
                       ("queries", queries.get("total")),
                       ("queries scored", queries.get("scored")),
                       *[(f"unscored: {k}", v) for k, v in (cov.get("reasons") or {}).items()],
                       ("trec_eval", doc.get("trec_eval")),
                       *[(k, v) for k, v in settings.items()]]),
             _legend(list(metrics))]
    return Markup("".join(str(p) for p in parts) + notes_html(doc))


def _comparison_section(doc: Mapping[str, Any]) -> Markup:
    labels = [str(r["label"]) for r in doc["runs"]]
    rows = []
    for name, c in doc["comparison"].items():
        rows.append([METRICS.get(name).label, c.get("a"), c.get("b"),
                     with_ci(c.get("difference"), c.get("ci95")), fixed(c.get("p_value"), 4)])
    test = doc.get("test") or {}
    only = doc.get("scored_in_one_run_only") or {}
    parts = [table(["metric", *labels, f"{labels[1]} − {labels[0]} [95% CI]", "p"], rows,
                   caption=f"{labels[1]} against {labels[0]} on {doc.get('paired_queries')} "
                           "paired queries"),
             kv_table([("paired queries", doc.get("paired_queries")),
                       *[(f"scored in {k} only", v) for k, v in only.items()],
                       ("p-value", f"{test.get('method')}, {test.get('resamples')} resamples"),
                       ("95% CI", test.get("ci")), ("judgments", doc.get("qrels")),
                       ("trec_eval", doc.get("trec_eval"))]),
             _legend(list(doc["comparison"]))]
    return Markup("".join(str(p) for p in parts) + notes_html(doc))


def paired_units(items: Sequence[Mapping[str, Any]]) -> Units:
    """Per run (a comparison's items) or ``all``, each metric of each scored query (the unit two
    runs pair on is the query)."""
    names = list(dict.fromkeys(k for it in items for k in it if k in METRICS))
    return collect_units(items, lambda it: str(it.get("run", "all")),
                         lambda it: str(it.get("query_id")), names)
