"""Console tables (rich)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

__all__ = ["console", "coverage_line", "fmt", "print_multilingual"]


def console(*, stderr: bool = False) -> Console:
    """The one console ragmeter prints through: the terminal's width, or 140 columns when
    output is redirected (rich would otherwise squeeze tables into 80).

    Markup is off: no string is ever parsed as rich markup, so user data (a system named
    ``[/bold]``, an evaluator, a ``--by`` value, an install hint ``ragmeter[local]``) prints
    as written and can never crash the console.  Style goes through ``style=`` arguments.
    """
    import os
    import sys

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() or os.environ.get("COLUMNS") else 140
    return Console(highlight=False, soft_wrap=False, width=width, markup=False,
                   emoji=False, stderr=stderr)


def fmt(value: Any, digits: int = 4) -> str:
    """A number for a table cell; '—' for a missing value (the HTML report's formatting)."""
    from ragmeter.reports._html import number

    return number(value, digits)


def coverage_line(cov: dict[str, Any], unit: str = "rows") -> str:
    """``coverage: 398/400 rows scored (unscored: missing_prediction 2)``."""
    line = f"coverage: {cov['scored']}/{cov['rows']} {unit} scored"
    if cov["unscored"]:
        line += " (unscored: " + ", ".join(f"{k} {v}" for k, v in cov["reasons"].items()) + ")"
    return line


def _with_ci(result: Any, system: str, key: str, digits: int = 4) -> str:
    """The value, ``±`` its sample std, the count when it covers fewer rows than ``n`` (e.g.
    semantic scores), and the CI on a second line."""
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


def print_multilingual(result: Any) -> None:
    """One table, systems as rows (LBRAG's metrics.json keys as columns)."""
    con = console()
    table = Table(title="Multilingual QA (LBRAG metrics)", title_justify="left")
    has_sem = any(m.get("semantic_score") is not None for m in result.metrics.values())
    has_lid = any("rlc_lid" in m for m in result.metrics.values())
    cols = ["em", "f1", "rlc", "rlc_ok", "cost", "cnbe"]
    if has_sem:
        cols.append("semantic_score")
    if has_lid:
        cols.append("rlc_lid")
    table.add_column("system")
    for c in cols:
        table.add_column({"semantic_score": "semantic", "rlc_ok": "RLC_OK"}.get(c, c.upper()),
                         justify="right")
    table.add_column("n", justify="right")
    for system in result.systems:
        mark = " (baseline)" if system == result.baseline else ""
        digits = {"cost": 2, "cnbe": 6}
        table.add_row(system + mark, *[_with_ci(result, system, c, digits.get(c, 4)) for c in cols],
                      fmt(result.metrics[system]["n"]))
    con.print(table)
    con.print(coverage_line(result.coverage))
    if result.paired_tests:
        pt = Table(title=f"Paired tests against {result.baseline}", title_justify="left")
        for c in ("system", "metric", "mean diff", "95% CI", "p (bootstrap)",
                  "p (permutation)", "n"):
            pt.add_column(c, justify="left" if c in ("system", "metric") else "right")
        for system, tests in result.paired_tests.items():
            for metric, t in tests.items():
                sig = " *" if t["significant"] == "yes" else ""
                pt.add_row(system, metric, f"{t['mean_diff']:+.4f}{sig}",
                           f"[{t['ci_low']:+.4f}, {t['ci_high']:+.4f}]",
                           f"{t['p_bootstrap']:.4f}", f"{t['p_permutation']:.4f}", str(t["n"]))
        con.print(pt)
        con.print("* p (permutation) < 0.05")
    for note in result.notes:
        con.print(f"note: {note}")
    con.print(f"signature: {result.signature}", style="dim")


def print_groups(groups: Any, keys: tuple[str, ...] = ("em", "f1", "rlc_ok", "cost",
                                                       "semantic_score")) -> None:
    """One table of per-group results (``--by``): group, system, the metrics with their CI
    when computed, n and coverage."""
    con = console()
    table = Table(title=f"By {groups['by']}", title_justify="left")
    for c in ("group", "system", *keys, "n", "coverage"):
        table.add_column(c, justify="left" if c in ("group", "system") else "right")
    for value, part in groups["values"].items():
        cov = part.get("coverage", {})
        for system, m in part["metrics"].items():
            cis = part.get("ci95", {}).get(system, {})
            cells = []
            for k in keys:
                cell = fmt(m.get(k), 2 if k == "cost" else 4)
                ci = cis.get(k)
                if ci:
                    cell += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
                cells.append(cell)
            table.add_row(escape(value or "(empty)"), escape(system), *cells, fmt(m.get("n")),
                          f"{cov.get('scored', '?')}/{cov.get('rows', '?')}")
    con.print(table)
