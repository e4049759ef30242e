"""``ragmeter reliability ...``"""

from __future__ import annotations

import click

from ragmeter.cli.options import (
    by_option,
    field_option,
    input_path,
    items_out_option,
    json_out_option,
    output_file,
    write_outputs,
)
from ragmeter.cli.report import record_options, save_result


@click.group(name="reliability")
def group() -> None:
    """Annotator reliability against a QC key (win/tie/loss human evaluation)."""


@group.command(name="score")
@input_path()
@click.option("--qc", "qc", multiple=True, required=True, metavar="NAME",
              help="Evaluator whose annotations are the key (repeatable: several QC annotators "
                   "are combined by majority; items without a majority are excluded and "
                   "counted).")
@json_out_option
@items_out_option
@click.option("--plot", "plot_out", type=output_file(), metavar="OUT.png",
              help="Write the reliability matrix as PNG (needs ragmeter[plots]).")
@click.option("--min-applicable", default=30, show_default=True, type=click.IntRange(0),
              help="Evaluators with fewer applicable items are warned about and marked.")
@field_option
@click.option("--flag-yes", "flag_yes", multiple=True, metavar="VALUE",
              help="item_flag value meaning flagged / not ratable (repeatable; replaces the "
                   "defaults Yes, Y, True, 1, flagged; case-insensitive).")
@click.option("--flag-no", "flag_no", multiple=True, metavar="VALUE",
              help="item_flag value meaning ratable (repeatable; replaces the defaults No, N, "
                   "False, 0; give '' to let an empty cell mean ratable).")
@by_option
@record_options
def score(path: str, qc: tuple[str, ...], json_out: str | None, items_out: str | None,
          plot_out: str | None, min_applicable: int, fields: tuple[str, ...],
          flag_yes: tuple[str, ...], flag_no: tuple[str, ...], by: str | None,
          no_record: bool, runs_dir: str | None) -> None:
    """Score every evaluator against QC: reliability, flag mismatch %, Cohen's κ, Wilson CI.

    PATH holds one row per (item, evaluator) with item_id, evaluator, item_flag (Yes =
    flagged, not ratable; No = ratable), choice (A, B, Tie, ...; empty when flagged) and
    optional skipped.  JSONL, JSON, CSV or Parquet.

    Example: ragmeter reliability score annotations.csv --qc qc_maria --json rel.json
    --plot rel.png
    """
    import ragmeter.reliability
    from ragmeter.reliability._report import print_reliability
    from ragmeter.reports.console_extras import print_extras

    result = ragmeter.reliability.score(
        path, qc=qc, min_applicable=min_applicable, fields=fields, flag_yes=flag_yes,
        flag_no=flag_no, plot=plot_out, by=by)
    print_reliability(result.detail)
    print_extras(result.summary)
    write_outputs(result, json_out, items_out)
    if plot_out:
        click.echo(f"wrote {plot_out}", err=True)
    save_result(result, no_record=no_record, runs_dir=runs_dir)
