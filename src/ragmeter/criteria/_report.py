"""How a criteria result is shown: the console tables (rich), the HTML report's section and the
per-row values a comparison of runs pairs on.  Reads stored results only; never computes a
metric."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.markup import escape
from rich.table import Table

from ragmeter.criteria._metrics import AGREEMENT_METRICS, METRICS, SCORE_METRICS
from ragmeter.reports._html import Markup, kv_table, note, table
from ragmeter.reports.console import console
from ragmeter.reports.html_families import Units, collect_units, notes_html, with_ci

__all__ = ["print_criteria", "section", "paired_units"]


def _as_json(result: Any) -> Mapping[str, Any]:
    return result if isinstance(result, Mapping) else result.to_json()


def _ci_text(ci: Any) -> str:
    return f" [{ci[0]:.2f}, {ci[1]:.2f}]" if isinstance(ci, (list, tuple)) and len(ci) == 2 \
        and None not in ci else ""


# The console's two tables (the HTML section and --json have every metric).
_CONSOLE_SCORES = ("criterion_score", "criterion_expected_score", "criterion_pass_rate")
_CONSOLE_AGREEMENT = ("qwk", "spearman", "spearman_expected", "exact")


def _scale_text(crit: Mapping[str, Any]) -> str:
    points = list((crit.get("scale") or {}).keys())
    return f"{points[0]}..{points[-1]}" if points else "?"


def _columns(parts: Sequence[Mapping[str, Any]], names: Sequence[str]) -> list[str]:
    """The metrics among ``names`` that some part has."""
    return [n for n in names if any(n in (p.get("metrics") or {}) for p in parts)]


def _cell(metrics: Mapping[str, Any], cis: Mapping[str, Any], name: str) -> str:
    value = metrics.get(name)
    return "—" if value is None else f"{value:.2f}" + _ci_text(cis.get(name))


def _rows_table(title: str, parts: Mapping[str, Mapping[str, Any]],
                scales: Mapping[str, str], names: Sequence[str] = _CONSOLE_SCORES,
                agreement: bool = False) -> Table:
    cols = _columns(list(parts.values()), names)
    table_ = Table(title=escape(title), title_justify="left", box=box.SIMPLE_HEAD,
                   pad_edge=False, padding=(0, 0, 0, 1))
    table_.add_column("criterion", no_wrap=True)
    table_.add_column("scale", justify="right", no_wrap=True)
    for c in cols:
        table_.add_column(METRICS.get(c).label, justify="right", no_wrap=True)
    table_.add_column("pairs" if agreement else "scored", justify="right", no_wrap=True)
    for name, part in parts.items():
        metrics = part.get("metrics") or {}
        cis = part.get("ci95") or {}
        if agreement:
            v = part.get("validation") or {}
            count = f"{v.get('n', '?')}/{v.get('with_reference', '?')}"
        else:
            cov = part.get("coverage") or {}
            count = f"{cov.get('scored', '?')}/{cov.get('rows', '?')}"
        table_.add_row(escape(name), scales.get(name, ""),
                       *[_cell(metrics, cis, c) for c in cols], count)
    return table_


def print_criteria(result: Any) -> None:
    """Per criterion: mean, expected and normalized score, pass rate and agreement with the
    reference scores [95% CI], coverage and unscored reasons; then ``all``, stability, the
    ``--by`` groups, spend, and the signature."""
    from ragmeter.judges._spend import spend_line
    from ragmeter.reports.console_extras import stability_lines

    doc = _as_json(result)
    con = console()
    con.width = max(con.width, 120)
    scales = {str(c["name"]): _scale_text(c) for c in doc.get("criteria") or []}
    results: Mapping[str, Mapping[str, Any]] = doc.get("criteria_results") or {}
    con.print(_rows_table(f"Criteria ({doc.get('mode')}, {doc.get('scoring')}; judge "
                          f"{doc.get('judge')})", results, scales))
    validated = {k: v for k, v in results.items() if v.get("validation")}
    if validated:
        fields = ", ".join(sorted(set((doc.get("reference_fields") or {}).values())))
        con.print(_rows_table(f"Agreement with the reference scores ({fields})", validated,
                              scales, _CONSOLE_AGREEMENT, agreement=True))
    for name, part in results.items():
        reasons = (part.get("coverage") or {}).get("reasons") or {}
        if reasons:
            con.print(escape(f"{name}: unscored " + ", ".join(f"{k} {v}"
                                                              for k, v in reasons.items())))
    overall = doc.get("overall") or {}
    om = overall.get("metrics") or {}
    if om:
        oc = overall.get("ci95") or {}
        cov = overall.get("coverage") or {}
        con.print(escape(
            f"all criteria ({cov.get('scored')}/{cov.get('rows')} rows with every criterion "
            f"scored): normalized score {_cell(om, oc, 'criterion_normalized')}, passing "
            f"every criterion {_cell(om, oc, 'criterion_pass_rate')}"))
    for line in stability_lines(doc.get("stability")):
        con.print(escape(line))
    groups = doc.get("groups")
    if isinstance(groups, Mapping) and groups.get("values"):
        con.print(_rows_table(f"By {groups.get('by')}", groups["values"], {
            k: scales.get(str(v.get("criterion")), "") for k, v in groups["values"].items()}))
        for value, block in (doc.get("spend_by") or {}).items():
            if block.get("calls") or (block.get("cached") or {}).get("calls"):
                con.print(escape(f"[{value}] " + spend_line(block)))
    if isinstance(doc.get("spend"), Mapping):
        con.print(escape(spend_line(doc["spend"])))
    con.print("95% CIs: bootstrap (Wilson for pass rates); pairs: rows scored by the judge "
              "and the reference; every number in --json", style="dim")
    con.print(escape(f"signature: {doc.get('signature')}"), style="dim", soft_wrap=True)


# ------------------------------------------------------------------ HTML


def _html_rows(parts: Mapping[str, Mapping[str, Any]], cols: Sequence[str],
               scales: Mapping[str, str], flags: Mapping[str, str]) -> tuple[list[Any], list[str]]:
    rows, klass = [], []
    for name, part in parts.items():
        metrics = part.get("metrics") or {}
        cis = part.get("ci95") or {}
        cov = part.get("coverage") or {}
        crit = str(part.get("criterion") or name)
        rows.append([name + (f" ⚠ {flags[crit]}" if crit in flags else ""),
                     scales.get(crit, ""),
                     *[with_ci(metrics.get(c), cis.get(c), METRICS.get(c).digits)
                       for c in cols],
                     f"{cov.get('scored')}/{cov.get('rows')}",
                     ", ".join(f"{k} {v}" for k, v in (cov.get("reasons") or {}).items())])
        klass.append("low" if crit in flags else "")
    return rows, klass


def section(doc: Mapping[str, Any]) -> Markup:
    """Per criterion its numbers with 95% CIs and coverage (flagged when its judge is
    degenerate or at chance), the score counts per point, and the criteria as the judge saw
    them.  Stability, the ``--by`` groups and the spend are the report's shared blocks
    (:mod:`ragmeter.reports.html_extras`)."""
    if doc.get("dry_run"):
        return Markup(note("dry run: nothing was judged."))
    scales = {str(c["name"]): _scale_text(c) for c in doc.get("criteria") or []}
    flags: Mapping[str, str] = doc.get("flags") or {}
    results: Mapping[str, Mapping[str, Any]] = doc.get("criteria_results") or {}
    overall = doc.get("overall") or {}
    parts = {**results, **({"all": overall} if overall.get("metrics") else {})}
    cols = _columns(list(parts.values()), (*SCORE_METRICS, *AGREEMENT_METRICS))
    headers = ["criterion", "scale", *[METRICS.get(c).label for c in cols], "scored",
               "unscored"]
    rows, klass = _html_rows(parts, cols, scales, flags)
    out = [str(table(headers, rows, row_classes=klass,
                     caption=f"Criteria judged {doc.get('mode')} ({doc.get('scoring')}) by "
                             f"{doc.get('judge')}; 95% CIs (bootstrap; Wilson for pass "
                             "rates); all: rows with every criterion scored"))]
    counts = [[name, *[f"{p}: {n}" for p, n in (part.get("counts") or {}).items()]]
              for name, part in results.items()]
    width = max((len(r) for r in counts), default=1)
    out.append(str(table(["criterion", *["" for _ in range(width - 1)]],
                         [r + [""] * (width - len(r)) for r in counts],
                         caption="Scores per point (repeat 0)")))
    files = [(f.get("name"), f"{f.get('path')} (version {f.get('version') or '—'}, sha256 "
                             f"{f.get('sha256')})") for f in doc.get("criteria_files") or []]
    crit_rows = [[c["name"], c.get("question"),
                  "; ".join(f"{p} = {a}" for p, a in (c.get("scale") or {}).items()),
                  c.get("pass_at"), ", ".join(c.get("inputs") or [])]
                 for c in doc.get("criteria") or []]
    out.append(str(table(["criterion", "question", "scale", "pass at", "inputs"], crit_rows,
                         caption="The criteria")))
    out.append(str(kv_table(files)))
    return Markup("".join(out) + notes_html(doc))


def paired_units(items: Sequence[Mapping[str, Any]]) -> Units:
    """Per criterion, the score of each row on repeat 0 (the unit two runs pair on)."""
    return collect_units(items, lambda it: str(it.get("criterion")),
                         lambda it: str(it.get("id")), ("score",),
                         keep=lambda it: not it.get("repeat"))
