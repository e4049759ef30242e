"""Console output of ``ragmeter rubric build`` (the command is in :mod:`ragmeter.cli.rubric`;
the work is done by :func:`ragmeter.rubric.build`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["print_build"]


def _ci(ci: Any) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""


def print_build(summary: Mapping[str, Any]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from ragmeter.reports.console import console, fmt

    con = console()
    con.width = max(con.width, 120)
    if summary.get("mode") == "critique_only":
        con.print(escape(f"re-rated {summary['questions']} questions with "
                         f"{summary['critic_model']}; {summary['kept']} pass the thresholds "
                         f"{summary['thresholds']}"))
    else:
        con.print(escape(
            f"{summary['chunks_sampled']} of {summary['chunks']} chunks -> "
            f"{summary['generated']} questions generated, {summary['duplicates']} duplicates, "
            f"{summary['critiqued']} critiqued, {summary['kept']} kept (thresholds "
            f"{summary['thresholds']})"))
    table = Table(title="Critique ratings", title_justify="left")
    for col in ("criterion", "1", "2", "3", "4", "5", "mean", "rated", "unscored"):
        table.add_column(col, justify="left" if col == "criterion" else "right")
    for name, c in summary["criteria"].items():
        cov = c["coverage"]
        reasons = ", ".join(f"{k} {v}" for k, v in cov["reasons"].items())
        table.add_row(name, *(str(c["counts"][g]) for g in ("1", "2", "3", "4", "5")),
                      fmt(c["mean"], 2), f"{cov['scored']}/{cov['total']}",
                      escape(reasons) or "0")
    con.print(table)
    agree = summary.get("agreement") or {}
    if agree:
        t = Table(title="Agreement with the original critic (95% bootstrap CIs)",
                  title_justify="left")
        for col in ("criterion", "n", "QWK", "CI", "exact", "CI ", "MAE", "CI  ",
                    "mean ours", "mean original"):
            t.add_column(col, justify="left" if col == "criterion" else "right")
        for name, a in agree.items():
            t.add_row(name, f"{a['n']}/{a['with_reference']}", fmt(a["qwk"], 3), _ci(a["qwk_ci"]),
                      fmt(a["exact"], 3), _ci(a["exact_ci"]), fmt(a["mae"], 3),
                      _ci(a["mae_ci"]), fmt(a["mean_rater"], 2), fmt(a["mean_reference"], 2))
        con.print(t)
    tr = summary.get("translation")
    if tr:
        for lang, s in tr["by_language"].items():
            texts = ", ".join(f"{k} {v}" for k, v in sorted(s["texts"].items()))
            line = f"{lang}: {s['questions']} questions; texts: {texts}"
            if "knowledge_base_lines" in s:
                line += "; knowledge base lines: " + ", ".join(
                    f"{k} {v}" for k, v in sorted(s["knowledge_base_lines"].items()))
            con.print(escape(line))
    for note in summary.get("notes", []):
        con.print(escape(f"note: {note}"))
    con.print(escape(f"signature: {summary['signature']}"), style="dim")
