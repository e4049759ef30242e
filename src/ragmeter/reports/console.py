"""Console tables (rich; the multilingual table is plain text, :mod:`ragmeter.reports.plain`,
so that ``multilingual score`` never imports rich)."""

from __future__ import annotations

from typing import Any

from ragmeter._util._console import console

__all__ = ["console", "coverage_line", "fmt", "print_multilingual"]


def fmt(value: Any, digits: int = 4) -> str:
    """A number for a table cell; '—' for a missing value (the HTML report's formatting)."""
    from ragmeter.reports.plain import number

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
    """One table, systems as rows (LBRAG's metrics.json keys as columns), in plain text."""
    from ragmeter.reports.plain import box_table, write_lines

    has_sem = any(m.get("semantic_score") is not None for m in result.metrics.values())
    has_lid = any("rlc_lid" in m for m in result.metrics.values())
    cols = ["em", "f1", "rlc", "rlc_ok", "cost", "cnbe"]
    if has_sem:
        cols.append("semantic_score")
    if has_lid:
        cols.append("rlc_lid")
    headers = [("system", "left")]
    headers += [({"semantic_score": "semantic", "rlc_ok": "RLC_OK"}.get(c, c.upper()), "right")
                for c in cols]
    headers.append(("n", "right"))
    digits = {"cost": 2, "cnbe": 6}
    rows = [[system + (" (baseline)" if system == result.baseline else ""),
             *[_with_ci(result, system, c, digits.get(c, 4)) for c in cols],
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


def print_groups(groups: Any, keys: tuple[str, ...] = ("em", "f1", "rlc_ok", "cost",
                                                       "semantic_score")) -> None:
    """One table of per-group results (``--by``): group, system, the metrics with their CI
    when computed, n and coverage."""
    from rich.markup import escape
    from rich.table import Table

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
