"""``ragmeter report [RUN ...] --out report.html`` and ``ragmeter report --list``.

Also the options every ``score``/``run`` command shares to write its run record
(``--no-record``, ``--runs-dir``) and :func:`save_run`, which writes it and prints the run id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from ragmeter.cli.options import GuardedPath, output_file

__all__ = ["report", "record_options", "save_run", "save_result"]

F = TypeVar("F", bound=Callable[..., Any])


def record_options(f: F) -> F:
    """``--no-record`` and ``--runs-dir`` for a command that writes a run record."""
    f = click.option("--runs-dir", "runs_dir", default=None, type=GuardedPath("input", pattern="*.json", file_okay=False),
                     help="Folder of run records [default: $RAGMETER_HOME/runs].")(f)
    f = click.option("--no-record", "no_record", is_flag=True,
                     help="Do not write a run record (then `ragmeter report` cannot show "
                          "this run).")(f)
    return f


def save_run(family: str, result: Mapping[str, Any], items: Iterable[Mapping[str, Any]], *,
             inputs: Sequence[Any] = (), no_record: bool = False, runs_dir: str | None = None,
             **meta: Any) -> str | None:
    """Write the run record unless ``no_record``; print its id on stderr; return the id.

    ``meta`` goes to :func:`ragmeter.runs._records.record_run` (backends, models, prompt_versions).
    """
    if no_record:
        return None
    from ragmeter.runs._records import write_run

    result = _with_engine(result)
    fields, _ = write_run(family, result, items, inputs=inputs, runs_dir_override=runs_dir,
                          command=_command_line(), **meta)
    run_id = str(fields["run_id"])
    click.echo(f"run {run_id} recorded (ragmeter report {run_id} --out report.html)",
               err=True)
    return run_id


def save_result(result: Any, *, no_record: bool = False, runs_dir: str | None = None
                ) -> str | None:
    """Save a :class:`ragmeter.result.Result` as a run record unless ``no_record``; print its
    id on stderr; return the id."""
    if no_record:
        return None
    # what Result.save writes, without building the pydantic RunRecord it returns
    return save_run(result.family, result.summary, result.record_items(), inputs=result.inputs,
                    runs_dir=runs_dir, backends=result.backends, models=result.models,
                    prompt_versions=result.prompt_versions)


def _with_engine(result: Mapping[str, Any]) -> Mapping[str, Any]:
    """``result`` with ``engine:ray`` added to its signature when the command ran with
    ``--engine ray`` (the local engine, the default, leaves signatures as they were)."""
    ctx = click.get_current_context(silent=True)
    engine = ctx.params.get("engine") if ctx is not None else None
    signature = result.get("signature")
    if engine in (None, "local") or not isinstance(signature, str) \
            or f"|engine:{engine}" in signature:
        return result
    return {**result, "signature": f"{signature}|engine:{engine}"}


def _command_line() -> list[str]:
    """The command as run: ``sys.argv`` under the ``ragmeter`` script, else rebuilt from the
    click context (in-process calls, tests) as command path plus the given options."""
    import sys

    from ragmeter._util._redact import redact_text

    if sys.argv and Path(sys.argv[0]).name == "ragmeter":
        return ["ragmeter", *(redact_text(a) for a in sys.argv[1:])]
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return ["ragmeter"]
    out = ctx.command_path.split()
    for name, value in ctx.params.items():
        if value is None or value is False or value == ():
            continue
        for v in value if isinstance(value, tuple) else (value,):
            out.append(redact_text(str(v)) if name == "path" else
                       f"--{name.replace('_', '-')}" + ("" if v is True else
                                                        f"={redact_text(str(v))}"))
    return out


@click.command(name="report")
@click.argument("runs", nargs=-1, metavar="[RUN ...]")
@click.option("--out", "out", default="ragmeter-report.html", show_default=True,
              type=output_file(), help="The HTML file to write.")
@click.option("--list", "list_only", is_flag=True, help="List the stored runs and exit.")
@click.option("--family", default=None, metavar="NAME",
              help="Only runs of this family (with --list, or to pick the latest runs).")
@click.option("--last", "last", default=None, type=click.IntRange(1), metavar="N",
              help="Report the N most recent runs (of --family when given).")
@click.option("--runs-dir", "runs_dir", default=None, type=GuardedPath("input", pattern="*.json", file_okay=False),
              help="Folder of run records [default: $RAGMETER_HOME/runs].")
@click.option("--title", default="ragmeter report", show_default=True, help="Page title.")
def report(runs: tuple[str, ...], out: str, list_only: bool, family: str | None,
           last: int | None, runs_dir: str | None, title: str) -> None:
    """Write one self-contained HTML report (offline, no JavaScript needed) from stored runs.

    RUN is a run id (or a unique prefix, or 'latest') printed by a score/run command, or the
    path of a run record file.  Without RUN: the latest run of every family.  Several runs of
    the same family are compared side by side with paired tests.  The report reads the stored
    results only: no model is called and no metric recomputed.

    Examples: ragmeter report --list;  ragmeter report latest --out report.html;
    ragmeter report --family multilingual --last 2 --out compare.html
    """
    from ragmeter.errors import ConfigError
    from ragmeter.runs._records import list_runs, load_run

    if list_only:
        _print_list(list_runs(runs_dir_override=runs_dir, family=family, on_skip=_skipped))
        return
    if runs:
        records = [load_run(r, runs_dir_override=runs_dir) for r in runs]
    else:
        stored = list_runs(runs_dir_override=runs_dir, family=family, on_skip=_skipped)
        if not stored:
            from ragmeter.runs._records import runs_dir as resolve

            raise ConfigError(f"report: no run records in {resolve(runs_dir)}. Fix: run a score "
                              "command first (e.g. ragmeter demo), or pass --runs-dir.")
        if last:
            chosen = stored[-last:]
        else:
            newest: dict[str, Any] = {}
            for r in stored:
                newest[r.family] = r
            chosen = sorted(newest.values(), key=lambda r: r.run_id)
        records = [load_run(r.path or r.run_id, runs_dir_override=runs_dir) for r in chosen]
    from ragmeter.reports.html import write_report

    path = write_report(records, out, title=title)
    size = Path(path).stat().st_size
    click.echo(f"wrote {path} ({size / 1024:.0f} KiB, {len(records)} run(s))", err=True)


def _skipped(path: Path, err: Exception) -> None:
    click.echo(f"warning: skipped {path}: not a readable run record ({err})", err=True)


def _print_list(records: Sequence[Any]) -> None:
    from rich.table import Table

    from ragmeter.reports.console import console

    con = console()
    if not records:
        con.print("no run records")
        return
    table = Table(title="Stored runs (oldest first)", title_justify="left")
    for c in ("run id", "family", "when", "items", "unscored", "command"):
        table.add_column(c, justify="right" if c in ("items", "unscored") else "left",
                         no_wrap=c == "run id")
    for r in records:
        table.add_row(r.run_id, r.family, r.created_at, str(r.items_total),
                      str(r.items_unscored), " ".join(r.command)[:60])
    con.print(table)
