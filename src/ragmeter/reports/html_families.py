"""Per-family sections of the HTML report, in the layouts of the original projects.

Each section reads a family's ``to_json()`` document (a run record's ``result``) and shows the
tables and plots of the original: LBRAG's systems table (multilingual).  A section never
computes a metric; it formats stored values.  Families on the one-spine shape keep theirs in
``<family>/_report.py`` (reliability's annotator matrix, RGB's tables by noise rate, TRACe's
metrics and validation statistics, rubric's RAGaliq results table), found through
:mod:`ragmeter._families`.

:data:`PAIRED_UNITS` extracts, per family, the per-item values that the comparison of several
runs pairs on (same item key in both runs): multilingual F1 and EM per system (LBRAG's paired
comparison unit).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ragmeter.reports._html import Markup, cell, esc, figure, generic, note, table

__all__ = ["SECTIONS", "PAIRED_UNITS", "COMPARISON_PLOTS", "section_of", "paired_units_of",
           "comparison_plot_of", "collect_units"]


def with_ci(value: Any, interval: Any, digits: int = 4) -> Markup:
    out = str(cell(value, digits))
    if interval:
        out += "<br>" + str(cell(interval, digits))
    return Markup(out)


def fixed(value: Any, digits: int) -> Any:
    """A float shown with ``digits`` decimals (None stays None: '—')."""
    if isinstance(value, float):
        return Markup(esc(f"{value:.{digits}f}"))
    return value


def notes_html(doc: Mapping[str, Any]) -> str:
    return "".join(note(f"note: {n}") for n in doc.get("notes") or [])


# ------------------------------------------------------------------ multilingual (LBRAG)

_ML_COLS = (("em", "EM"), ("f1", "F1"), ("rlc", "RLC"), ("rlc_ok", "RLC_OK"), ("cost", "cost"),
            ("cnbe", "CNBE"), ("semantic_score", "semantic"), ("rlc_lid", "RLC (LID)"))
_ML_DIGITS = {"cost": 2, "cnbe": 6}


def multilingual(doc: Mapping[str, Any]) -> Markup:
    """LBRAG's systems table (metrics.json keys as columns) with CIs, paired tests, plots."""
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
        rest = {k: v for k, v in doc.items() if k not in ("metrics", "ci95")}
        return Markup(head + note("Semantic scores added to the answers (see the items); score "
                                  "them with ragmeter multilingual score for LBRAG's table "
                                  "per system.") + generic(rest))
    metrics: Mapping[str, Mapping[str, Any]] = doc["metrics"]
    ci: Mapping[str, Mapping[str, Any]] = doc.get("ci95") or {}
    baseline = doc.get("baseline")
    systems = list(metrics)
    cols = [(k, h) for k, h in _ML_COLS
            if any(metrics[s].get(k) is not None for s in systems)]
    rows = []
    for s in systems:
        label = f"{s} (baseline)" if s == baseline else s
        rows.append([label, *[with_ci(metrics[s].get(k), ci.get(s, {}).get(k),
                                       _ML_DIGITS.get(k, 4)) for k, _ in cols],
                     metrics[s].get("n")])
    parts: list[str] = [table(["system", *[h for _, h in cols], "n"], rows,
                   caption="Systems (LBRAG metrics; 95% bootstrap CI below a value when "
                           "computed)", cls="systems")]
    paired = doc.get("paired_tests") or {}
    if paired:
        prow, pcls = [], []
        for system, tests in paired.items():
            for metric, t in tests.items():
                sig = t.get("significant") == "yes"
                prow.append([system, metric, t.get("mean_diff"), [t.get("ci_low"), t.get("ci_high")],
                             t.get("p_bootstrap"), t.get("p_permutation"), t.get("n")])
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


SECTIONS: dict[str, Callable[[Mapping[str, Any]], Markup]] = {
    "multilingual": multilingual,
}

COMPARISON_PLOTS: dict[str, Callable[[Sequence[Any]], Markup]] = {}


# ------------------------------------------------------------------ paired units

Units = dict[tuple[str, str], dict[str, float]]


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return float(v)
    return float(v) if isinstance(v, (int, float)) and v == v else None


def collect_units(items: Sequence[Mapping[str, Any]], group: Callable[[Mapping[str, Any]], str],
             key: Callable[[Mapping[str, Any]], str], metrics: Sequence[str],
             keep: Callable[[Mapping[str, Any]], bool] = lambda it: True) -> Units:
    out: Units = {}
    for it in items:
        if it.get("status", "ok") != "ok" or not keep(it):
            continue
        for m in metrics:
            v = _num(it.get(m))
            if v is not None:
                out.setdefault((group(it), m), {})[key(it)] = v
    return out


PAIRED_UNITS: dict[str, Callable[[Sequence[Mapping[str, Any]]], Units]] = {
    "multilingual": lambda items: collect_units(items, lambda it: str(it.get("system")),
                                           lambda it: str(it.get("sample_id")), ("f1", "em")),
}


def section_of(family: str) -> Callable[[Mapping[str, Any]], Markup] | None:
    """A family's HTML section: its ``_report.section`` (ragmeter._families), else the one
    written here for a family not yet moved into its package."""
    from ragmeter._families import family_part

    found = family_part(family, "_report", "section")
    return found if found is not None else SECTIONS.get(family)


def paired_units_of(family: str) -> Callable[[Sequence[Mapping[str, Any]]], Units] | None:
    """The per-item values a comparison of several runs of ``family`` pairs on."""
    from ragmeter._families import family_part

    found = family_part(family, "_report", "paired_units")
    return found if found is not None else PAIRED_UNITS.get(family)


def comparison_plot_of(family: str) -> Callable[[Sequence[Any]], Markup] | None:
    """A family's plot over several runs (RGB's accuracy against noise rate), or None."""
    from ragmeter._families import family_part

    found = family_part(family, "_report", "comparison_plot")
    return found if found is not None else COMPARISON_PLOTS.get(family)
