"""How a multilingual result is shown: the console table (plain text, no rich, so that
``multilingual score`` stays fast), the ``--by`` table, the HTML report's section (LBRAG's
systems table, paired tests, plots) and the per-item values a comparison of runs pairs on.
Reads stored results only; never computes a metric.  The columns are the rows of
:data:`~ragmeter.multilingual._metrics.METRICS`, in its order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragmeter.multilingual._metrics import PAIRED_METRICS, ROWS, RowMetric

if TYPE_CHECKING:  # the HTML kit only when a report is written: the console path stays light
    from ragmeter.reports._html import Markup

__all__ = ["print_multilingual", "print_groups", "section", "paired_units", "console_heading"]


def console_heading(m: RowMetric) -> str:
    """A metric's console column heading: LBRAG's key in capitals (``EM``, ``RLC_OK``,
    ``COST``), a judged number by its label (``semantic``)."""
    return m.label if m.judged else m.name.upper()


def _with_ci(result: Any, system: str, key: str, digits: int = 4) -> str:
    """The value, ``±`` its sample std, the count when it covers fewer rows than ``n`` (e.g.
    semantic scores), and the CI on a second line."""
    from ragmeter.reports.console import fmt

    m = result.metrics[system]
    value = fmt(m.get(key), digits)
    std = m.get(f"{key}_std")
    if m.get(key) is not None and isinstance(std, float):
        value += f" ±{std:.{min(digits, 4)}f}"
    if f"{key}_n" in m:
        value += f" ({m[f'{key}_n']}/{m.get('n')})"
    ci = result.ci.get(system, {}).get(key) if result.ci else None
    if ci:
        d = min(digits, 3)
        value += f"\n[{ci[0]:.{d}f}, {ci[1]:.{d}f}]"
    return value


def _shown_in_console(m: RowMetric, metrics: Mapping[str, Mapping[str, Any]]) -> bool:
    """A column for every metric the scorer computed; a judged one only when some system has
    a value (semantic scores are optional input)."""
    if m.judged:
        return any(v.get(m.name) is not None for v in metrics.values())
    return any(m.name in v for v in metrics.values())


def print_multilingual(result: Any) -> None:
    """One table, systems as rows (LBRAG's metrics.json keys as columns), in plain text.
    ``result``: a :class:`~ragmeter.multilingual._scorer.MultilingualResult`."""
    from ragmeter.reports.console import coverage_line, fmt
    from ragmeter.reports.plain import box_table, write_lines

    cols = [m for m in ROWS if _shown_in_console(m, result.metrics)]
    headers = [("system", "left")]
    headers += [(console_heading(m), "right") for m in cols]
    headers.append(("n", "right"))
    rows = [[system + (" (baseline)" if system == result.baseline else ""),
             *[_with_ci(result, system, m.name, m.digits) for m in cols],
             fmt(result.metrics[system]["n"])] for system in result.systems]
    lines = [box_table("Multilingual QA (LBRAG metrics)", headers, rows),
             coverage_line(result.coverage)]
    if result.paired_tests:
        pt_rows = []
        for system, tests in result.paired_tests.items():
            for metric, t in tests.items():
                sig = " *" if t["significant"] == "yes" else ""
                pt_rows.append([system, metric, f"{t['mean_diff']:+.4f}{sig}",
                                f"[{t['ci_low']:+.4f}, {t['ci_high']:+.4f}]",
                                f"{t['p_bootstrap']:.4f}", f"{t['p_permutation']:.4f}",
                                str(t["n"])])
        pt_cols = [(c, "left" if c in ("system", "metric") else "right")
                   for c in ("system", "metric", "mean diff", "95% CI", "p (bootstrap)",
                             "p (permutation)", "n")]
        lines += [box_table(f"Paired tests against {result.baseline}", pt_cols, pt_rows),
                  "* p (permutation) < 0.05"]
    lines += [f"note: {note}" for note in result.notes]
    lines.append(f"signature: {result.signature}")
    write_lines(*lines)


def print_groups(groups: Any, keys: tuple[str, ...] | None = None) -> None:
    """One table of per-group results (``--by``): group, system, the metrics (``keys``,
    default: the table's compact ones) with their CI when computed, n and coverage."""
    from rich.markup import escape
    from rich.table import Table

    from ragmeter.reports.console import console, fmt

    by_name = {m.name: m for m in ROWS}
    shown = [m for m in ROWS if m.compact] if keys is None else [by_name[k] for k in keys]
    con = console()
    table = Table(title=f"By {groups['by']}", title_justify="left")
    for c in ("group", "system", *(m.name for m in shown), "n", "coverage"):
        table.add_column(c, justify="left" if c in ("group", "system") else "right")
    for value, part in groups["values"].items():
        cov = part.get("coverage", {})
        for system, m in part["metrics"].items():
            cis = part.get("ci95", {}).get(system, {})
            cells = []
            for metric in shown:
                cell = fmt(m.get(metric.name), metric.digits)
                ci = cis.get(metric.name)
                if ci:
                    cell += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
                cells.append(cell)
            table.add_row(escape(value or "(empty)"), escape(system), *cells, fmt(m.get("n")),
                          f"{cov.get('scored', '?')}/{cov.get('rows', '?')}")
    con.print(table)


# ------------------------------------------------------------------ HTML


def section(doc: Mapping[str, Any]) -> Markup:
    """LBRAG's systems table (metrics.json keys as columns) with CIs, paired tests, plots; for
    ``multilingual judge`` the mean semantic score and the judged rows' summary."""
    from ragmeter.reports._html import Markup, figure, generic, note, table
    from ragmeter.reports.html_families import notes_html, with_ci
    from ragmeter.reports.plots import bars_png

    if doc.get("verb") == "judge":
        # `multilingual judge` adds semantic scores to the answers (its items) and reports their
        # mean; the LBRAG table per system comes from `multilingual score` over them.
        mean = (doc.get("metrics") or {}).get("semantic_score")
        head = ""
        if mean is not None:
            head = table(["metric", "value (95% CI)", "n"],
                         [["mean semantic score",
                           with_ci(mean, (doc.get("ci95") or {}).get("semantic_score")),
                           doc["metrics"].get("n")]], caption="Semantic judge")
        head += _agreement_table(doc)
        rest = {k: v for k, v in doc.items()
                if k not in ("metrics", "ci95", "judges", "judge_cards")}  # shown above
        return Markup(head + note("Semantic scores added to the answers (see the items); score "
                                  "them with ragmeter multilingual score for LBRAG's table "
                                  "per system.") + generic(rest))
    if doc.get("verb") == "fit":
        return Markup(_held_out_table(doc) + generic(
            {k: v for k, v in doc.items() if k not in ("headline", "model")}))
    metrics: Mapping[str, Mapping[str, Any]] = doc["metrics"]
    ci: Mapping[str, Mapping[str, Any]] = doc.get("ci95") or {}
    baseline = doc.get("baseline")
    systems = list(metrics)
    cols = [m for m in ROWS if any(metrics[s].get(m.name) is not None for s in systems)]
    rows = []
    for s in systems:
        label = f"{s} (baseline)" if s == baseline else s
        rows.append([label, *[with_ci(metrics[s].get(m.name), ci.get(s, {}).get(m.name),
                                      m.digits) for m in cols],
                     metrics[s].get("n")])
    parts: list[str] = [table(["system", *[m.label for m in cols], "n"], rows,
                              caption="Systems (LBRAG metrics; 95% bootstrap CI below a value "
                                      "when computed)", cls="systems")]
    paired = doc.get("paired_tests") or {}
    if paired:
        prow, pcls = [], []
        for system, tests in paired.items():
            for metric, t in tests.items():
                sig = t.get("significant") == "yes"
                prow.append([system, metric, t.get("mean_diff"),
                             [t.get("ci_low"), t.get("ci_high")], t.get("p_bootstrap"),
                             t.get("p_permutation"), t.get("n")])
                pcls.append("sig" if sig else "")
        parts.append(table(["system", "metric", "mean diff", "95% CI", "p (bootstrap)",
                            "p (permutation)", "n"], prow, numeric_from=2, row_classes=pcls,
                           caption=f"Paired tests against {baseline} (highlighted: "
                                   "p (permutation) < 0.05)"))
    f1 = [metrics[s].get("f1") for s in systems]
    f1_ci = [ci.get(s, {}).get("f1") for s in systems]
    plots = [figure(lambda: bars_png("F1 per system", systems, {"F1": f1}, ci={"F1": f1_ci},
                                     ylabel="F1", ylim=(0, 1.05)), "F1 per system")]
    if any(metrics[s].get("cost") for s in systems):
        plots.append(figure(lambda: bars_png(
            "Translation cost per system", systems,
            {"cost": [metrics[s].get("cost") for s in systems]},
            ci={"cost": [ci.get(s, {}).get("cost") for s in systems]},
            ylabel="tokens translated per item"), "cost per system"))
    if any(metrics[s].get("cnbe") is not None for s in systems):
        plots.append(figure(lambda: bars_png(
            f"CNBE per system (against {baseline})", systems,
            {"CNBE": [metrics[s].get("cnbe") for s in systems]},
            ci={"CNBE": [ci.get(s, {}).get("cnbe") for s in systems]},
            ylabel="F1 gain per translated token"), "CNBE per system"))
    parts.append(f'<div class="plots">{"".join(plots)}</div>')
    return Markup("".join(parts) + notes_html(doc))


_AGREEMENT = (("semantic_auroc", "AUROC (reference >= 0.5) ↑"), ("semantic_spearman",
              "Spearman ↑"), ("semantic_mae", "MAE ↓"))


def _agreement_table(doc: Mapping[str, Any]) -> str:
    """``multilingual judge`` on data with reference scores: the judge's agreement with them,
    overall and per ``--by`` group, each with its 95% CI."""
    from ragmeter.reports._html import table
    from ragmeter.reports.html_families import with_ci

    judges = doc.get("judges")
    if not isinstance(judges, Mapping) or not judges:
        return ""
    rows = []
    for judge, found in judges.items():
        blocks = [(str(judge), found)]
        groups = doc.get("groups")
        for key, block in ((groups or {}).get("values") or {}).items() \
                if isinstance(groups, Mapping) else ():
            if isinstance(block.get("agreement"), Mapping):
                blocks.append((f"{judge} / {key}", block["agreement"]))
        for label, ests in blocks:
            if isinstance(ests, Mapping):
                rows.append([label, *[with_ci((ests.get(k) or {}).get("value"),
                                              (ests.get(k) or {}).get("ci95"))
                                      for k, _ in _AGREEMENT],
                             (ests.get("semantic_auroc") or {}).get("n")])
    field = (doc.get("reference") or {}).get("field", "reference")
    return table(["judge", *[label for _, label in _AGREEMENT], "rows"], rows,
                 caption=f"Agreement with the reference scores ({field}); 95% bootstrap CI "
                         "below a value")


def _held_out_table(doc: Mapping[str, Any]) -> str:
    """``multilingual fit``: the held-out agreement of the fitted judge and of F1 alone."""
    from ragmeter.reports._html import table
    from ragmeter.reports.html_families import with_ci

    held = (doc.get("provenance") or {}).get("held_out") or {}
    rows = []
    for scheme, found in held.items():
        for who, label in (("judge", "fitted judge"), ("f1", "F1 alone")):
            ests = found.get(who) or {}
            rows.append([f"{label}, leave-one-{scheme}-out",
                         *[with_ci((ests.get(k[9:]) or {}).get("value"),
                                   (ests.get(k[9:]) or {}).get("ci95")) for k, _ in _AGREEMENT],
                         (ests.get("auroc") or {}).get("n")])
    return table(["model", *[label for _, label in _AGREEMENT], "rows"], rows,
                 caption="Held-out agreement with the reference semantic scores")


def paired_units(items: Sequence[Mapping[str, Any]]) -> Any:
    """Per system, each sample's F1 and EM (LBRAG's paired comparison unit)."""
    from ragmeter.reports.html_families import collect_units

    return collect_units(items, lambda it: str(it.get("system")),
                         lambda it: str(it.get("sample_id")), PAIRED_METRICS)
