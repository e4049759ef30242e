"""Printing for ``ragmeter rubric build`` (the command itself is in :mod:`ragmeter.cli.rubric`);
the work is done by :mod:`ragmeter.suites.rubric.build_api`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

__all__ = ["build_from_cli", "print_build"]


def build_from_cli(params: dict[str, Any], *, json_out: str | None, items_out: str | None,
                   no_record: bool, runs_dir: str | None,
                   backend_kwargs: Mapping[str, Any]) -> None:
    from ragmeter.cli.backend_options import runner_context
    from ragmeter.cli.options import write_outputs
    from ragmeter.cli.report import save_run
    from ragmeter.suites.rubric.build_api import build, estimate

    paths = list(params.pop("knowledge_base"))
    out = params.pop("out")
    critique_path = params.pop("critique_only")
    gen_file = params.pop("generation_prompt_file")
    crit_files = params.pop("critique_prompt_files")
    backend, store, config, dry_run = runner_context(**backend_kwargs, description="build")
    common = dict(critique_only_path=critique_path, generation_prompt_file=gen_file,
                  critique_prompt_files=crit_files, backend=backend, store=store,
                  runner=config, **params)
    if dry_run:
        click.echo(estimate(paths or None, **common).render())
        return
    outcome = build(paths or None, out=out, **common)
    print_build(outcome.summary)
    for path in outcome.summary.get("written", []):
        click.echo(f"wrote {path}", err=True)
    write_outputs(outcome, json_out, items_out)
    inputs = [critique_path] if critique_path else paths
    save_run("rubric", outcome.summary, outcome.items, inputs=inputs, no_record=no_record,
             runs_dir=runs_dir, models=[str(outcome.summary.get("critic_model"))],
             prompt_versions={"build": str(outcome.summary.get("prompt_version"))})


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
