"""How an application run is shown: the console table (rich) and the HTML report's section.
Reads stored results only; never computes a metric."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.markup import escape
from rich.table import Table

from ragmeter.app._metrics import METRICS
from ragmeter.reports._html import Markup, kv_table, note, table
from ragmeter.reports.console import console, fmt
from ragmeter.reports.html_families import notes_html, with_ci

__all__ = ["print_app", "section"]


def _as_json(result: Any) -> Mapping[str, Any]:
    return result if isinstance(result, Mapping) else result.to_json()


def _value(name: str, value: Any) -> str:
    """A rate with 4 digits; a count or a latency with the metric's own fixed decimals."""
    m = METRICS.get(name)
    if value is None:
        return "—"
    if m.aggregation == "rate":
        return fmt(value, m.digits)
    return f"{float(value):.{m.digits}f}"


def _target_line(doc: Mapping[str, Any]) -> str:
    t = doc.get("target") or {}
    where = t.get("function") or f"{t.get('method', '')} {t.get('url', '')}".strip()
    version = f", version {t['version']}" if t.get("version") else ""
    return f"{t.get('name')} ({t.get('kind')}: {where}{version})"


def print_app(result: Any) -> None:
    """The share answered, contexts and latency; the failures by reason; the store and the
    signature."""
    doc = _as_json(result)
    con = console()
    con.print(escape(f"App run: {_target_line(doc)}"), soft_wrap=True)
    metrics: Mapping[str, Any] = doc.get("metrics") or {}
    cis: Mapping[str, Any] = doc.get("ci95") or {}
    out = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 0, 0, 1))
    out.add_column("metric", no_wrap=True)
    out.add_column("value", justify="right", no_wrap=True)
    out.add_column("95% CI", justify="right", no_wrap=True)
    out.add_column("n", justify="right")
    n: Mapping[str, Any] = doc.get("n") or {}
    for m in METRICS:
        if m.name in metrics:
            ci = cis.get(m.name)
            out.add_row(m.label, _value(m.name, metrics[m.name]),
                        f"{ci[0]:.3f}-{ci[1]:.3f}" if isinstance(ci, list) else "",
                        str(n.get(m.name, "")))
    con.print(out)
    cov = doc.get("coverage") or {}
    line = f"rows: {cov.get('scored')} answered of {cov.get('rows')}"
    if doc.get("from_store"):
        line += f" ({doc['from_store']} from the store)"
    if cov.get("reasons"):
        line += "; unscored: " + ", ".join(f"{k} {v}" for k, v in cov["reasons"].items())
    con.print(escape(line))
    for n_ in doc.get("notes") or []:
        con.print(escape(f"note: {n_}"))
    con.print(escape(f"store: {doc.get('store')}"), style="dim", soft_wrap=True)
    con.print(escape(f"signature: {doc.get('signature')}"), style="dim", soft_wrap=True)


def section(doc: Mapping[str, Any]) -> Markup:
    """The metrics with their 95% CIs, the rows answered and why the others were not, and the
    application called (no secret: URLs without credentials, header names only)."""
    metrics: Mapping[str, Any] = doc.get("metrics") or {}
    cis: Mapping[str, Any] = doc.get("ci95") or {}
    n: Mapping[str, Any] = doc.get("n") or {}
    rows = [[m.label, with_ci(metrics[m.name], cis.get(m.name), m.digits), n.get(m.name)]
            for m in METRICS if m.name in metrics and metrics[m.name] is not None]
    cov = doc.get("coverage") or {}
    t = doc.get("target") or {}
    paths = t.get("paths") or {}
    pairs = [("application", _target_line(doc)), ("rows", cov.get("rows")),
             ("answered", cov.get("scored")), ("from the store", doc.get("from_store")),
             *[(f"unscored: {k}", v) for k, v in (cov.get("reasons") or {}).items()],
             ("answer path", paths.get("answer") or "(the usual names)"),
             ("contexts path", paths.get("contexts") or "(the usual names)"),
             ("ids path", paths.get("ids") or "(the usual names)")]
    if t.get("headers"):
        pairs.append(("headers", ", ".join(t["headers"])))
    legend = "".join(str(note(m.glossary_line())) for m in METRICS if m.name in metrics)
    parts = [table(["metric", "value", "n"], rows, caption="The application on the test set"
                   + (" (95% Wilson CI under a rate)" if cis else "")),
             kv_table(pairs), legend]
    return Markup("".join(str(p) for p in parts) + notes_html(doc))
