"""``ragmeter runs ...``: the folder of run records."""

from __future__ import annotations

import click

from ragmeter.cli.options import FiniteFloat


@click.group(name="runs")
def group() -> None:
    """Run records: one small JSON summary and one gzip JSON Lines file of items per run."""


@group.command(name="prune")
@click.option("--keep", default=None, type=click.IntRange(min=0), metavar="N",
              help="Keep the newest N runs and remove the rest [default: $RAGMETER_KEEP_RUNS, "
                   "else 500; 0 keeps all].")
@click.option("--older-than", "older_than", default=None, type=FiniteFloat(min=0),
              metavar="DAYS", help="Also remove runs older than DAYS days.")
@click.option("--runs-dir", default=None, type=click.Path(file_okay=False), metavar="DIR",
              help="Folder of run records [default: $RAGMETER_HOME/runs].")
@click.option("--dry-run", is_flag=True, help="List what would be removed; remove nothing.")
def prune(keep: int | None, older_than: float | None, runs_dir: str | None,
          dry_run: bool) -> None:
    """Remove old run records (summary and items file).

    New records already prune beyond $RAGMETER_KEEP_RUNS (default 500) as they are written.
    An items file left without its summary for an hour (a run killed while saving, a summary
    deleted by hand) is removed too.

    Example: ragmeter runs prune --keep 50 --older-than 30
    """
    from ragmeter.runs._records import prune_runs, retention

    removed = prune_runs(keep=retention() if keep is None else keep, older_than_days=older_than,
                         runs_dir_override=runs_dir, dry_run=dry_run)
    verb = "would remove" if dry_run else "removed"
    for run_id in removed:
        click.echo(f"{verb} {run_id}")
    click.echo(f"{verb} {len(removed)} run(s)", err=True)
