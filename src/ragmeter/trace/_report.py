"""How a TRACe result is shown: the console tables (rich) of ``trace score`` and of a judge
validation, the HTML report's section (the four metrics, or the validation statistics per
judge as in RAGBench's Table 3) and the per-item values a comparison of runs pairs on.  Reads
stored results only; never computes a metric.  Names, labels and directions come from
:data:`~ragmeter.trace._metrics.METRICS`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.reports._html import Markup, esc, figure, generic, kv_table, table
from ragmeter.reports.html_families import Units, collect_units, notes_html, with_ci
from ragmeter.trace._metrics import (
    METRICS,
    SCORE_METRICS,
    VALIDATION_METRICS,
    WRITEUP_VERSION,
    table_for,
)

__all__ = ["print_score", "print_validation", "section", "paired_units", "diagnosis_html"]


def _ci(entry: Mapping[str, Any] | None, digits: int = 4) -> str:
    """``value [lo, hi]`` of a ``{"mean"|"value", "ci95"}`` entry; ``—`` when absent."""
    from ragmeter.reports.console import fmt

    if not entry:
        return "—"
    value = entry.get("value", entry.get("mean"))
    text = fmt(value, digits)
    ci = entry.get("ci95")
    if ci:
        text += f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"
    return text


def print_score(result: Any) -> None:
    """``trace score``'s table (``result``: its ScoreResult): one row per metric."""
    from rich.table import Table

    from ragmeter.reports.console import console, coverage_line, fmt

    con = console()
    writeup = f"metrics:{WRITEUP_VERSION}" in (result.signature or "")
    metrics = table_for("writeup" if writeup else "ragbench")
    out = Table(title="TRACe (write-up variant)" if writeup else "TRACe (RAGBench metrics)",
                title_justify="left")
    for col in ("metric", "mean [95% CI]", "std", "n"):
        out.add_column(col, justify="left" if col == "metric" else "right")
    for metric, entry in result.summary.items():
        label = metrics.get(metric).label if metric in metrics else metric
        out.add_row(label, _ci(entry), fmt(entry["std"]), fmt(entry["n"]))
    con.print(out)
    con.print(coverage_line(result.coverage))
    for note in result.notes:
        con.print(f"note: {note}")
    con.print(f"signature: {result.signature}", style="dim")


def print_validation(result: Any) -> None:
    """A validation's table (``result``: its ValidateResult): one row per judge, one column
    per statistic (arrow: the better direction)."""
    from rich.table import Table

    from ragmeter.reports.console import console

    con = console()
    out = Table(title=f"TRACe judge validation ({result.scored_reference} annotated rows)",
                title_justify="left")
    out.add_column("judge")
    for stat in VALIDATION_METRICS:
        m = METRICS.get(stat)
        out.add_column(m.label + ("↑" if m.higher_is_better else "↓"), justify="right")
    for judge, est in result.judges.items():
        cells = []
        for stat in VALIDATION_METRICS:
            e = est.get(stat)
            cells.append("—" if e is None else f"{_ci(e.to_dict(), 3)}\n(n={e.n})")
        out.add_row(judge, *cells)
    con.print(out)
    con.print("cells: value [95% bootstrap CI] (rows used)")
    for judge, cov in result.coverage.items():
        con.print(f"coverage {judge}: " + ", ".join(f"{k} {v}" for k, v in cov.items()))
    for note in result.notes:
        con.print(f"note: {note}")
    con.print(f"signature: {result.signature}", style="dim")


# ------------------------------------------------------------------ HTML

# a kind of validation statistic: (plot title, axis label)
_KINDS = {"auroc": ("Hallucination AUROC per judge", "AUROC (higher is better)"),
          "rmse": ("RMSE against annotations per judge", "RMSE (lower is better)")}


def _by_kind(names: Sequence[str]) -> dict[str, list[str]]:
    """The validation statistics grouped by their kind of number (``METRICS``' aggregation:
    an AUROC, RMSEs): each kind gets its own plot, so no axis mixes two scales."""
    out: dict[str, list[str]] = {}
    for name in names:
        kind = METRICS.get(name).aggregation if name in METRICS else name
        out.setdefault(kind, []).append(name)
    return out



def _validation_plot(judges: Mapping[str, Any], labels: list[str], kind: str,
                     names: list[str]) -> Markup:
    """One plot of the judges' validation statistics of one kind (AUROC, or RMSEs)."""
    from ragmeter.reports.plots import bars_png

    title, what = _KINDS.get(kind, (f"{kind} per judge", kind))
    series = {METRICS.get(s).label: [(judges[j].get(s) or {}).get("value") for j in labels]
              for s in names}
    cis = {METRICS.get(s).label: [(judges[j].get(s) or {}).get("ci95") for j in labels]
           for s in names}
    ylim = (0.0, 1.05) if kind == "auroc" else None
    return figure(lambda: bars_png(title, labels, series, ci=cis, ylabel=what, ylim=ylim),
                  f"TRACe validation per judge: {title}")


def _group_means(doc: Mapping[str, Any]) -> dict[str, dict[str, float | None]]:
    """The four metrics' means per group (``all`` first): from the stored headline rows, else
    from ``metrics``."""
    out: dict[str, dict[str, float | None]] = {}
    for row in doc.get("headline") or []:
        if isinstance(row, Mapping) and row.get("metric") in SCORE_METRICS:
            value = row.get("value")
            out.setdefault(str(row.get("group")), {})[str(row["metric"])] = \
                float(value) if isinstance(value, (int, float)) else None
    if not out and isinstance(doc.get("metrics"), Mapping):
        out["all"] = {m: (doc["metrics"].get(m) or {}).get("mean") for m in SCORE_METRICS
                      if isinstance(doc["metrics"].get(m), Mapping)}
    return out


def diagnosis_html(doc: Mapping[str, Any]) -> Markup:
    """The diagnostic patterns the metrics show (:func:`ragmeter.trace._diagnose.diagnose`),
    overall and per group; empty for a result without the four metrics."""
    from ragmeter.trace._diagnose import diagnose

    writeup = f"metrics:{WRITEUP_VERSION}" in str(doc.get("signature") or "")
    groups = _group_means(doc)
    if not groups:
        return Markup("")
    lines = []
    for group, values in groups.items():
        where = "" if group == "all" else f"{group}: "
        for d in diagnose(values, writeup=writeup):
            lines.append(f"<li><b>{esc(where)}{esc(d.title)}</b> — {esc(d.advice)} "
                         f'<span class="muted">({esc(d.evidence)}; {esc(d.source)})</span></li>')
    if not lines:
        return Markup('<div class="diagnosis"><b>Diagnosis</b>: no pattern of the TRACe '
                      "write-up shows in these numbers (thresholds in ragmeter.trace._diagnose)."
                      "</div>")
    return Markup(f'<div class="diagnosis"><b>Diagnosis</b><ul>{"".join(lines)}</ul></div>')


def section(doc: Mapping[str, Any]) -> Markup:
    """TRACe's four metrics (score) or the validation statistics of judges against
    annotations (validate, run: hallucination AUROC and RMSEs, RAGBench Table 3)."""
    from ragmeter.reports.plots import bars_png

    parts: list[str] = []
    if "source" in doc:
        parts.append(kv_table([("source", doc.get("source"))]))
    metrics = doc.get("metrics")
    if isinstance(metrics, Mapping):
        parts.insert(0, diagnosis_html(doc))
        names = [m for m in SCORE_METRICS if m in metrics] \
            + [m for m in metrics if m not in SCORE_METRICS]
        parts.append(table(["metric", "mean", "95% CI", "std", "n", "not labelled"],
                           [[m, metrics[m].get("mean"), metrics[m].get("ci95"),
                             metrics[m].get("std"), metrics[m].get("n"),
                             metrics[m].get("not_labelled")] for m in names],
                           caption="TRACe metrics (RAGBench)"))
        parts.append(figure(lambda: bars_png(
            "TRACe metrics", names, {"mean": [metrics[m].get("mean") for m in names]},
            ci={"mean": [metrics[m].get("ci95") for m in names]}, ylim=(0, 1.05)),
            "TRACe metrics"))
    judges = doc.get("judges")
    if isinstance(judges, Mapping) and judges:
        stats = [s for s in VALIDATION_METRICS if any(s in j for j in judges.values())]
        rows = [[name, *[with_ci((est.get(s) or {}).get("value"), (est.get(s) or {}).get("ci95"))
                         for s in stats], max((est.get(s) or {}).get("n") or 0 for s in stats)]
                for name, est in judges.items()]
        parts.append(table(["judge", *stats, "rows"], rows,
                           caption="Validation against annotated labels (AUROC higher is "
                                   "better; RMSE lower is better)"))
        labels = list(judges)
        plots = [_validation_plot(judges, labels, kind, names)
                 for kind, names in _by_kind(stats).items()]  # one kind of number per axis
        parts.append(f'<div class="plots">{"".join(plots)}</div>')
        # the headline rows repeat the tables above
        rest = {k: v for k, v in doc.items()
                if k not in ("judges", "metrics", "source", "headline")}
        parts.append(generic(rest))
    if not parts:  # label, fit: the document as it is, less its headline rows
        return generic({k: v for k, v in doc.items() if k != "headline"})
    return Markup("".join(parts) + notes_html(doc))


def paired_units(items: Sequence[Mapping[str, Any]]) -> Units:
    """Each scored row's four metrics (the unit two runs of ``trace score`` pair on)."""
    return collect_units(items, lambda it: "all", lambda it: str(it.get("id")), SCORE_METRICS)
