"""How an RGB result is shown: the console tables (rich) and the HTML report's section, in the
shape of the paper's tables (Chen et al., AAAI 2024: noise robustness, negative rejection,
information integration, counterfactual robustness; the accuracy-vs-noise figure), the
per-item values a comparison of runs pairs on, and the comparison plot over several runs.

Column headings are the labels of :data:`ragmeter.rgb._metrics.METRICS`, and the glossary of
the HTML section is its definitions.  Reads stored results only; never computes a metric.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from ragmeter.judges._card import card_line
from ragmeter.reports._html import Markup, cell, esc, figure, generic
from ragmeter.reports._html import note as html_note
from ragmeter.reports._html import table as html_table
from ragmeter.reports.console import console as make_console
from ragmeter.reports.console import fmt
from ragmeter.reports.html_families import Units, collect_units, fixed, notes_html
from ragmeter.rgb._metrics import METRICS, ROLE_METRICS, TABLE_COLUMNS, headline, judged_rates
from ragmeter.rgb._plot import accuracy_series

__all__ = ["print_score", "print_run", "coverage_line", "print_refactor", "print_judged",
           "print_judge_cards", "section", "paired_units", "comparison_plot", "glossary"]


def _columns(tab: str) -> list[tuple[str, str]]:
    """``(tables key, heading)`` of a table's columns: the metrics' labels."""
    return [(key, METRICS.get(metric).label) for key, metric in TABLE_COLUMNS[tab]]


def coverage_line(cov: Any) -> str:
    line = f"coverage: {cov.scored}/{cov.total} items scored"
    if cov.unscored:
        line += " (unscored: " + ", ".join(f"{k} {v}" for k, v in cov.reasons.items()) + ")"
    return line


def print_score(result: Any, con: Console | None = None) -> None:
    """One RGB setting: accuracy (and ED/CR for counterfactual data), coverage, signature."""
    con = con or make_console()
    title = f"RGB {result.dataset} ({result.kind}, {result.lang}) at {result.config.label()}"
    table = Table(title=title, title_justify="left", min_width=len(title) + 4)
    cols = [("accuracy", "accuracy"), ("tt", "correct"), ("n", "n")]
    if result.kind == "fact":
        cols[1:1] = [("fact_check_rate", f"{METRICS.get('ed').label} (fact_check_rate)"),
                     ("correct_rate", f"{METRICS.get('cr').label} (correct_rate)")]
    table.add_column("labels")
    for _, head in cols:
        table.add_column(head, justify="right")
    table.add_row("strict (paper)", *[fmt(result.metrics.get(k)) for k, _ in cols])
    if result.lenient is not None:
        table.add_row("lenient (NOT paper)", *[fmt(result.lenient.get(k)) for k, _ in cols])
    con.print(table)
    if result.lenient is not None:
        fl = result.lenient["flips"]
        con.print(f"lenient vs strict: {fl['wrong_to_right']} item(s) wrong->right, "
                  f"{fl['right_to_wrong']} right->wrong (lenient numbers are not comparable "
                  "with the paper)")
    con.print(coverage_line(result.coverage))
    for note in result.notes:
        con.print(f"note: {note}")
    con.print(f"signature: {result.signature}", style="dim")


def _rate_cell(value: Any, stat: Any = None) -> str:
    """Rates as percentages, like the paper's tables; with ``stat`` (``{"n", "ci95"}``) a second
    line holds the Wilson 95% interval (in %) and n."""
    text = "—" if value is None else f"{100 * value:.1f}"
    if isinstance(stat, dict) and stat.get("n") is not None:
        ci = stat.get("ci95")
        text += "\n" + (f"[{100 * ci[0]:.0f}, {100 * ci[1]:.0f}] " if ci else "") + \
            f"n={stat['n']}"
    return text


def _stat(tables: Mapping[str, Any], tab: str, ds: str, col: str) -> Any:
    """The ``{"n", "ci95"}`` a run stored for one cell of one of the paper's tables."""
    return ((tables.get("cells") or {}).get(tab) or {}).get(ds, {}).get(col)


def _setting_coverage(result: Any) -> dict[str, str]:
    return {s.name: f"{sc.coverage.scored}/{sc.coverage.total}" for s, sc in result.scores}


def _by_rate_table(title: str, min_width: int, tab: str, tables: Mapping[str, Any]) -> Table:
    """A table of accuracy (%) by noise rate (noise robustness, integration), one row per
    data file."""
    rates = sorted({float(r) for row in tables[tab].values() for r in row})
    table = Table(title=title, min_width=min_width, title_justify="left")
    table.add_column("data")
    for r in rates:
        table.add_column(f"{r:g}", justify="right")
    for ds, row in tables[tab].items():
        table.add_row(ds, *[_rate_cell(row.get(str(r)), _stat(tables, tab, ds, str(r)))
                            for r in rates])
    return table


def print_run(result: Any, con: Console | None = None) -> None:
    """The paper's tables (values in %), then coverage, notes and the signature."""
    con = con or make_console()
    t = result.tables
    cov = _setting_coverage(result)
    by_role: dict[str, list[Any]] = {}
    for s, _ in result.scores:
        by_role.setdefault(s.role, []).append(s)
    if t["noise_robustness"]:
        con.print(_by_rate_table("Noise robustness: accuracy (%) by noise rate", 48,
                                 "noise_robustness", t))
    if t["rejection"]:
        table = Table(title="Negative rejection (noise 1.0): rejection rate (%)", min_width=54,
                      title_justify="left")
        cols = _columns("rejection")
        for c in ("data", *[head for _, head in cols], "items"):
            table.add_column(c, justify="left" if c == "data" else "right")
        for s in by_role.get("rejection", []):
            row = t["rejection"][s.dataset.name]
            ds = s.dataset.name
            table.add_row(ds, *[_rate_cell(row[k], _stat(t, "rejection", ds, k))
                                for k, _ in cols], cov[s.name])
        con.print(table)
    if t["integration"]:
        con.print(_by_rate_table("Information integration: accuracy (%) by noise rate", 55,
                                 "integration", t))
    if t["counterfactual"]:
        table = Table(title="Counterfactual robustness (%)", min_width=33, title_justify="left")
        cols = _columns("counterfactual")
        table.add_column("data")
        for _, head in cols:
            table.add_column(head, justify="right")
        for ds, row in t["counterfactual"].items():
            table.add_row(ds, *[_rate_cell(row.get(k), _stat(t, "counterfactual", ds, k))
                                for k, _ in cols])
        con.print(table)
    if t.get("cells"):
        con.print("cells: rate (%), then its Wilson 95% interval (%) and n")
    if "lenient" in t:
        table = Table(title="Lenient labels (NOT the paper's metric; not comparable)", min_width=59,
                      title_justify="left")
        for c in ("setting", "strict acc", "lenient acc", "wrong->right", "right->wrong"):
            table.add_column(c, justify="left" if c == "setting" else "right")
        for name, row in t["lenient"].items():
            table.add_row(name, _rate_cell(row["strict_accuracy"]), _rate_cell(row["accuracy"]),
                          str(row["flips"]["wrong_to_right"]), str(row["flips"]["right_to_wrong"]))
        con.print(table)
    if "refactor" in t:
        print_refactor(t["refactor"], con)
    total = result.coverage()
    con.print(coverage_line(total))
    for s, sc in result.scores:
        if sc.coverage.unscored:
            con.print(f"  {s.name}: " + coverage_line(sc.coverage))
    for name, j in result.judged.items():
        jc = j["coverage"]
        if jc["unscored"]:
            con.print(f"  judge {name}: {jc['scored']}/{jc['total']} judged (" +
                      ", ".join(f"{k} {v}" for k, v in jc["reasons"].items()) + ")")
    if result.judge_info:
        ji = result.judge_info
        con.print(f"judge: {ji['backend']}:{ji['model']}, method {ji['method']}, prompts "
                  f"{ji['prompts']}")
        print_judge_cards(result.judged, con)
    for alarm in getattr(result, "alarms", []):
        con.print(f"WARNING: {alarm.get('message', alarm)}", style="bold red")
    for note in result.notes:
        con.print(f"note: {note}")
    con.print(f"signature: {result.signature}", style="dim")


def print_refactor(rows: dict[str, Any], con: Console) -> None:
    """The refactor's rates beside the paper's, per setting, with the flips."""
    table = Table(title="Refactor labels (write-up 000; NOT the paper's metric)", min_width=56,
                  title_justify="left")
    for c in ("setting", "paper rate", "strict", "refactor rate", "refactor", "gained", "lost"):
        table.add_column(c, justify="left" if c in ("setting", "paper rate", "refactor rate")
                         else "right")
    for name, row in rows.items():
        for r in row["rates"]:
            table.add_row(name, r["paper"], _rate_cell(r["strict_value"]), r["refactor"],
                          _rate_cell(r["refactor_value"]), str(r["gained"]), str(r["lost"]))
    con.print(table)
    con.print("gained: items the refactor counts and strict does not; lost: the reverse")


def print_judge_cards(judged: dict[str, Any], con: Console) -> None:
    """Each task's judge and whether it is validated (issue 12: a card beside every number)."""
    seen: set[str] = set()
    for row in judged.values():
        card = row.get("card")
        if card and card.get("judge") not in seen:
            seen.add(card["judge"])
            if card.get("validation"):
                con.print(f"judge card: {card_line(card)}")
            else:
                con.print(f"judge card: {card['judge']}: unvalidated")


def print_judged(result: Any, con: Console | None = None) -> None:
    """``rgb judge``: the judged rates with n and Wilson 95% intervals, coverage, judge."""
    con = con or make_console()
    table = Table(title=f"RGB judged rates on {result.dataset} ({result.kind}, {result.lang}) (%)",
                  title_justify="left", min_width=50)
    for c in ("rate", "value", "95% CI", "n", "judged", "method"):
        table.add_column(c, justify="left" if c in ("rate", "method") else "right")
    row = result.rates
    ci = row.get("ci95") or {}
    for rate in judged_rates(row):
        bounds = ci.get(rate.metric)
        interval = f"[{100 * bounds[0]:.1f}, {100 * bounds[1]:.1f}]" if bounds else "—"
        table.add_row(METRICS.get(rate.metric).label, _rate_cell(rate.value),
                      interval, str(rate.n), f"{row['coverage']['scored']}/"
                      f"{row['coverage']['total']}", row.get("method", ""))
    con.print(table)
    print_judge_cards({"x": row}, con)
    if row.get("alarm"):
        con.print(f"WARNING: {row['alarm'].get('message')}", style="bold red")
    con.print(coverage_line(result.score.coverage))
    con.print(f"signature: {result.signature}", style="dim")


# ------------------------------------------------------------------ HTML


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


def _rate_table(title: str, tab: str, tables: Mapping[str, Any]) -> Markup:
    rows_by_ds: Mapping[str, Mapping[str, Any]] = tables[tab]
    rates = sorted({float(r) for row in rows_by_ds.values() for r in row})
    rows = []
    for ds, row in rows_by_ds.items():
        by_rate = {float(k): (k, v) for k, v in row.items()}
        out_row: list[Any] = [ds]
        for r in rates:
            key, value = by_rate.get(r, (None, None))
            out_row.append(_pct_cell(value, _stat(tables, tab, ds, str(key))))
        rows.append(out_row)
    return html_table(["data", *[f"{r:g}" for r in rates]], rows, caption=title)


def _column_table(title: str, tab: str, tables: Mapping[str, Any]) -> Markup:
    rows_by_ds: Mapping[str, Mapping[str, Any]] = tables[tab]
    cols = _columns(tab)
    return html_table(["data", *[head for _, head in cols]],
                 [[ds, *[_pct_cell(r.get(k), _stat(tables, tab, ds, k)) for k, _ in cols]]
                  for ds, r in rows_by_ds.items()], caption=title)


def glossary(doc: Mapping[str, Any]) -> Markup:
    """What each number means: the paper's numbers, and the lenient or refactor ones the
    result holds, from :data:`METRICS` (label, name, definition, source)."""
    shown = {h.metric for h in headline(doc)}.union(*ROLE_METRICS.values())
    rows = [[m.label, m.name, m.description, m.source] for m in METRICS if m.name in shown]
    return Markup("<details><summary>glossary</summary>" + str(html_table(
        ["symbol", "metric", "definition", "source"], rows, numeric_from=4,
        caption="RGB's numbers (Chen et al., AAAI 2024); * = judged by a model")) +
        "</details>")


def section(doc: Mapping[str, Any]) -> Markup:
    """RGB's tables (values in %): noise robustness, rejection, integration, counterfactual;
    the accuracy-vs-noise plot (paper Figure 3) and the glossary.  The model, prompts and
    judge are in the report's provenance and judge cards, the alarms beside the cards.  A single-setting ``rgb
    score`` document (no ``tables``) is shown as its metrics."""
    from ragmeter.reports.plots import lines_png

    if "tables" not in doc:
        return Markup(str(generic(doc)) + str(glossary(doc)))
    t = doc["tables"]
    parts: list[str] = []
    if t.get("cells"):
        parts.append(html_note("Each cell: the rate (%), its Wilson 95% interval (%) and n."))
    if t.get("noise_robustness"):
        parts.append(_rate_table("Noise robustness: accuracy (%) by noise rate",
                                 "noise_robustness", t))
    if t.get("rejection"):
        parts.append(_column_table("Negative rejection (noise 1.0): rejection rate (%)",
                                   "rejection", t))
    if t.get("integration"):
        parts.append(_rate_table("Information integration: accuracy (%) by noise rate",
                                 "integration", t))
    if t.get("counterfactual"):
        parts.append(_column_table("Counterfactual robustness (%)", "counterfactual", t))
    if t.get("lenient"):
        parts.append(html_table(["setting", "strict acc", "lenient acc", "wrong→right",
                            "right→wrong"],
                           [[n, _pct(r.get("strict_accuracy")), _pct(r.get("accuracy")),
                             (r.get("flips") or {}).get("wrong_to_right"),
                             (r.get("flips") or {}).get("right_to_wrong")]
                            for n, r in t["lenient"].items()],
                           caption="Lenient labels (NOT the paper's metric; not comparable)"))
    if t.get("refactor"):
        parts.append(html_table(["setting", "paper rate", "strict", "refactor rate", "refactor",
                            "gained", "lost"],
                           [[name, r["paper"], _pct(r["strict_value"]), r["refactor"],
                             _pct(r["refactor_value"]), r["gained"], r["lost"]]
                            for name, row in t["refactor"].items() for r in row["rates"]],
                           caption="Refactor labels (write-up 000; NOT the paper's metric): "
                                   "gained = counted by the refactor only, lost = by strict "
                                   "only"))
    if doc.get("settings"):
        keep = ("setting", "role", "accuracy", "n", "coverage")
        parts.append("<details><summary>settings</summary>" + str(html_table(
            list(keep), [[s.get(k) if k != "coverage" else
                          f"{(s.get('coverage') or {}).get('scored')}/"
                          f"{(s.get('coverage') or {}).get('total')}" for k in keep]
                         for s in doc["settings"]])) + "</details>")
    series = accuracy_series(t)
    parts.append(figure(lambda: lines_png("RGB: accuracy vs noise rate", series,
                                          xlabel="noise rate", ylabel="accuracy (%)",
                                          ylim=(-2, 102)), "RGB accuracy vs noise rate"))
    parts.append(glossary(doc))
    return Markup("".join(parts) + notes_html(doc))


def comparison_plot(records: Sequence[Any]) -> Markup:
    """Accuracy vs noise rate with one line per model (and data file) over several runs."""
    from ragmeter.reports.plots import lines_png

    series: dict[str, list[tuple[float, float]]] = {}
    for i, r in enumerate(records, 1):
        model = r.result.get("model")
        if isinstance(model, Mapping):  # the model's identity: its name
            model = model.get("model")
        label = str(model or (r.models[0] if r.models else f"run {i}"))
        series.update(accuracy_series(r.result.get("tables") or {}, prefix=f"{label} · "))
    return figure(lambda: lines_png("RGB: accuracy vs noise rate, by model", series,
                                    xlabel="noise rate", ylabel="accuracy (%)",
                                    ylim=(-2, 102)), "RGB accuracy vs noise rate by model")


def paired_units(items: Sequence[Mapping[str, Any]]) -> Units:
    """Per setting, the correctness of each (data file, instance): the unit two runs pair
    on."""
    return collect_units(items, lambda it: str(it.get("setting", "all")),
                         lambda it: f"{it.get('dataset', '')}/{it.get('id')}", ("correct",))
