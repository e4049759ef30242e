"""Console tables of RGB results (rich), in the shape of the paper's tables."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from ragmeter.reports.console import console as make_console
from ragmeter.reports.console import fmt

__all__ = ["print_score", "coverage_line", "print_refactor", "print_judged",
           "print_judge_cards"]


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
        cols[1:1] = [("fact_check_rate", "ED (fact_check_rate)"),
                     ("correct_rate", "CR (correct_rate)")]
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


def _stat(tables: dict[str, Any], table: str, ds: str, col: str) -> Any:
    return ((tables.get("cells") or {}).get(table) or {}).get(ds, {}).get(col)


def _setting_coverage(result: Any) -> dict[str, str]:
    return {s.name: f"{sc.coverage.scored}/{sc.coverage.total}" for s, sc in result.scores}


def print_run(result: Any, con: Console | None = None) -> None:
    """The paper's tables (values in %), then coverage, notes and the signature."""
    con = con or make_console()
    t = result.tables
    cov = _setting_coverage(result)
    by_role: dict[str, list[Any]] = {}
    for s, _ in result.scores:
        by_role.setdefault(s.role, []).append(s)
    if t["noise_robustness"]:
        rates = sorted({float(r) for row in t["noise_robustness"].values() for r in row})
        table = Table(title="Noise robustness: accuracy (%) by noise rate", min_width=48,
                      title_justify="left")
        table.add_column("data")
        for r in rates:
            table.add_column(f"{r:g}", justify="right")
        for ds, row in t["noise_robustness"].items():
            table.add_row(ds, *[_rate_cell(row.get(str(r)),
                                           _stat(t, "noise_robustness", ds, str(r)))
                                for r in rates])
        con.print(table)
    if t["rejection"]:
        table = Table(title="Negative rejection (noise 1.0): rejection rate (%)", min_width=54,
                      title_justify="left")
        for c in ("data", "Rej", "Rej*", "items"):
            table.add_column(c, justify="left" if c == "data" else "right")
        for s in by_role.get("rejection", []):
            row = t["rejection"][s.dataset.name]
            ds = s.dataset.name
            table.add_row(ds, _rate_cell(row["rej"], _stat(t, "rejection", ds, "rej")),
                          _rate_cell(row["rej_judged"], _stat(t, "rejection", ds, "rej_judged")),
                          cov[s.name])
        con.print(table)
    if t["integration"]:
        rates = sorted({float(r) for row in t["integration"].values() for r in row})
        table = Table(title="Information integration: accuracy (%) by noise rate", min_width=55,
                      title_justify="left")
        table.add_column("data")
        for r in rates:
            table.add_column(f"{r:g}", justify="right")
        for ds, row in t["integration"].items():
            table.add_row(ds, *[_rate_cell(row.get(str(r)), _stat(t, "integration", ds, str(r)))
                                for r in rates])
        con.print(table)
    if t["counterfactual"]:
        table = Table(title="Counterfactual robustness (%)", min_width=33, title_justify="left")
        cols = [("acc", "Acc"), ("acc_doc", "Acc_doc"), ("ed", "ED"), ("ed_judged", "ED*"),
                ("cr", "CR"), ("cr_judged", "CR*")]
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
            v = card.get("validation")
            if v:
                con.print(f"judge card: {card['judge']}: {v.get('metric')} {v.get('value'):.3f} "
                          f"[{v['ci'][0]:.3f}, {v['ci'][1]:.3f}], {v.get('data')}")
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
    keys = (("reject_rate_judged", "Rej*", "n"),) if result.kind == "reject" else (
        ("ed_judged", "ED*", "n"), ("cr_judged", "CR*", "detected"))
    for key, label, n_key in keys:
        bounds = ci.get(key)
        interval = f"[{100 * bounds[0]:.1f}, {100 * bounds[1]:.1f}]" if bounds else "—"
        table.add_row(label, _rate_cell(row.get(key)),
                      interval, str(row.get(n_key)), f"{row['coverage']['scored']}/"
                      f"{row['coverage']['total']}", row.get("method", ""))
    con.print(table)
    print_judge_cards({"x": row}, con)
    if row.get("alarm"):
        con.print(f"WARNING: {row['alarm'].get('message')}", style="bold red")
    con.print(coverage_line(result.score.coverage))
    con.print(f"signature: {result.signature}", style="dim")
