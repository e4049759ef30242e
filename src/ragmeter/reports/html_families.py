"""Per-family sections of the HTML report, in the layouts of the original projects.

Each section reads a family's ``to_json()`` document (a run record's ``result``) and shows the
tables and plots of the original: LBRAG's systems table (multilingual), RGB's tables by noise
rate (RGB paper, AAAI 2024, Tables 1-6 and Figure 3).  A section never computes a metric; it
formats stored values.  Families on the one-spine shape keep theirs in ``<family>/_report.py``
(reliability's annotator matrix, TRACe's metrics and validation statistics, rubric's RAGaliq
results table), found through :mod:`ragmeter._families`.

:data:`PAIRED_UNITS` extracts, per family, the per-item values that the comparison of several
runs pairs on (same item key in both runs): multilingual F1 and EM per system (LBRAG's paired
comparison unit), RGB correct per setting.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ragmeter.reports._html import Markup, cell, esc, figure, generic, kv_table, note, table

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


# ------------------------------------------------------------------ RGB

def _pct(v: Any) -> Any:
    """A rate as a percentage with one decimal, as the paper's tables."""
    return None if v is None else fixed(100.0 * v, 1)


def _pct_cell(value: Any, stat: Any) -> Any:
    """A rate in %, and below it its Wilson 95% interval (%) and n when the run stored them."""
    shown = _pct(value)
    if not isinstance(stat, Mapping) or stat.get("n") is None:
        return shown
    out = str(cell(shown if shown is not None else None, 1))
    ci = stat.get("ci95")
    if ci:
        out += "<br>" + str(cell([100.0 * ci[0], 100.0 * ci[1]], 1))
    out += f'<br><span class="ci">n={esc(str(stat["n"]))}</span>'
    return Markup(out)


def _stat(cells: Any, tab: str, ds: str, col: str) -> Any:
    return ((cells or {}).get(tab) or {}).get(ds, {}).get(col)


def _rate_table(title: str, rows_by_ds: Mapping[str, Mapping[str, Any]],
                cells: Any = None, tab: str = "") -> Markup:
    rates = sorted({float(r) for row in rows_by_ds.values() for r in row})
    rows = []
    for ds, row in rows_by_ds.items():
        by_rate = {float(k): (k, v) for k, v in row.items()}
        out_row: list[Any] = [ds]
        for r in rates:
            key, value = by_rate.get(r, (None, None))
            out_row.append(_pct_cell(value, _stat(cells, tab, ds, str(key))))
        rows.append(out_row)
    return table(["data", *[f"{r:g}" for r in rates]], rows, caption=title)


def _rgb_series(doc: Mapping[str, Any], prefix: str = "") -> dict[str, list[tuple[float, float]]]:
    series: dict[str, list[tuple[float, float]]] = {}
    tables = doc.get("tables") or {}
    for name, suffix in (("noise_robustness", ""), ("integration", " (integration)")):
        for ds, row in (tables.get(name) or {}).items():
            pts = [(float(r), 100.0 * v) for r, v in row.items() if v is not None]
            if pts:
                series[prefix + ds + suffix] = pts
    return series


def rgb(doc: Mapping[str, Any]) -> Markup:
    """RGB's tables (values in %): noise robustness, rejection, integration, counterfactual;
    the accuracy-vs-noise plot (paper Figure 3).  A single-setting ``rgb score`` document
    (no ``tables``) is shown as its metrics."""
    from ragmeter.reports.plots import lines_png

    if "tables" not in doc:
        return generic(doc)
    t = doc["tables"]
    parts: list[str] = []
    if doc.get("model"):
        parts.append(kv_table([("model", doc.get("model")), ("prompts", doc.get("prompts")),
                               ("judge", doc.get("judge"))]))
    cells = t.get("cells")
    if cells:
        parts.append(note("Each cell: the rate (%), its Wilson 95% interval (%) and n."))
    if t.get("noise_robustness"):
        parts.append(_rate_table("Noise robustness: accuracy (%) by noise rate",
                                 t["noise_robustness"], cells, "noise_robustness"))
    if t.get("rejection"):
        parts.append(table(["data", "Rej", "Rej*"],
                           [[ds, _pct_cell(r.get("rej"), _stat(cells, "rejection", ds, "rej")),
                             _pct_cell(r.get("rej_judged"),
                                       _stat(cells, "rejection", ds, "rej_judged"))]
                            for ds, r in t["rejection"].items()],
                           caption="Negative rejection (noise 1.0): rejection rate (%)"))
    if t.get("integration"):
        parts.append(_rate_table("Information integration: accuracy (%) by noise rate",
                                 t["integration"], cells, "integration"))
    if t.get("counterfactual"):
        keys = (("acc", "Acc"), ("acc_doc", "Acc_doc"), ("ed", "ED"), ("ed_judged", "ED*"),
                ("cr", "CR"), ("cr_judged", "CR*"))
        parts.append(table(["data", *[h for _, h in keys]],
                           [[ds, *[_pct_cell(r.get(k), _stat(cells, "counterfactual", ds, k))
                                   for k, _ in keys]]
                            for ds, r in t["counterfactual"].items()],
                           caption="Counterfactual robustness (%)"))
    if t.get("lenient"):
        parts.append(table(["setting", "strict acc", "lenient acc", "wrong→right",
                            "right→wrong"],
                           [[n, _pct(r.get("strict_accuracy")), _pct(r.get("accuracy")),
                             (r.get("flips") or {}).get("wrong_to_right"),
                             (r.get("flips") or {}).get("right_to_wrong")]
                            for n, r in t["lenient"].items()],
                           caption="Lenient labels (NOT the paper's metric; not comparable)"))
    if t.get("refactor"):
        parts.append(table(["setting", "paper rate", "strict", "refactor rate", "refactor",
                            "gained", "lost"],
                           [[name, r["paper"], _pct(r["strict_value"]), r["refactor"],
                             _pct(r["refactor_value"]), r["gained"], r["lost"]]
                            for name, row in t["refactor"].items() for r in row["rates"]],
                           caption="Refactor labels (write-up 000; NOT the paper's metric): "
                                   "gained = counted by the refactor only, lost = by strict "
                                   "only"))
    for alarm in doc.get("alarms") or []:
        parts.append(note(f"WARNING: {alarm.get('message', alarm)}"))
    if doc.get("settings"):
        keep = ("setting", "role", "accuracy", "n", "coverage")
        parts.append("<details><summary>settings</summary>" + str(table(
            list(keep), [[s.get(k) if k != "coverage" else
                          f"{(s.get('coverage') or {}).get('scored')}/"
                          f"{(s.get('coverage') or {}).get('total')}" for k in keep]
                         for s in doc["settings"]])) + "</details>")
    series = _rgb_series(doc)
    parts.append(figure(lambda: lines_png("RGB: accuracy vs noise rate", series,
                                          xlabel="noise rate", ylabel="accuracy (%)",
                                          ylim=(-2, 102)), "RGB accuracy vs noise rate"))
    return Markup("".join(parts) + notes_html(doc))


def rgb_comparison_plot(records: Sequence[Any]) -> Markup:
    """Accuracy vs noise rate with one line per model (and data file) over several runs."""
    from ragmeter.reports.plots import lines_png

    series: dict[str, list[tuple[float, float]]] = {}
    for i, r in enumerate(records, 1):
        label = str(r.result.get("model") or (r.models[0] if r.models else f"run {i}"))
        series.update(_rgb_series(r.result, prefix=f"{label} · "))
    return figure(lambda: lines_png("RGB: accuracy vs noise rate, by model", series,
                                    xlabel="noise rate", ylabel="accuracy (%)",
                                    ylim=(-2, 102)), "RGB accuracy vs noise rate by model")


SECTIONS: dict[str, Callable[[Mapping[str, Any]], Markup]] = {
    "multilingual": multilingual, "rgb": rgb,
}

COMPARISON_PLOTS: dict[str, Callable[[Sequence[Any]], Markup]] = {"rgb": rgb_comparison_plot}


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
    "rgb": lambda items: collect_units(items, lambda it: str(it.get("setting", "all")),
                                  lambda it: f"{it.get('dataset', '')}/{it.get('id')}",
                                  ("correct",)),
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
