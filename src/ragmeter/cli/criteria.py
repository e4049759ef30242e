"""``ragmeter criteria ...``: judge rows on your own criteria.

A door: flags become :func:`ragmeter.criteria.judge`'s arguments; the tables are
``ragmeter.criteria._report``'s."""

from __future__ import annotations

import sys
from typing import Any

import click

from ragmeter.cli.backend_options import backend_options
from ragmeter.cli.options import (
    field_option,
    input_file,
    items_out_option,
    json_out_option,
    output_file,
    write_outputs,
)
from ragmeter.cli.report import record_options, save_result


@click.group(name="criteria")
def group() -> None:
    """Judges on your own criteria: a question and a scale per criterion, judged per row."""


@group.command(name="judge")
@click.argument("path", type=input_file())
@click.option("--criteria", "criteria", multiple=True, required=True, metavar="FILE|NAME",
              help="A criteria file (YAML or JSON: name, question, scale with an anchor per "
                   "point, optional inputs, pass_at, examples), or a shipped one: relevance, "
                   "correctness, completeness (repeatable; see docs/criteria.md).")
@click.option("--mode", type=click.Choice(["per-criterion", "combined"]),
              default="per-criterion", show_default=True,
              help="per-criterion: one call per row and criterion (the default, from the "
                   "measurement in docs/criteria.md); combined: one call per row for all "
                   "criteria.")
@click.option("--scoring", type=click.Choice(["auto", "choices", "generate"]), default="auto",
              show_default=True,
              help="choices: the probability of each point (logits/logprobs) and the "
                   "probability-weighted score (per-criterion only); generate: the judge "
                   "writes JSON. auto: choices when the backend can score choices and the "
                   "mode is per-criterion, else generate.")
@click.option("--repeats", default=1, show_default=True, type=click.IntRange(1, 50),
              help="Judge every row N times with distinct calls (resumable from the store) "
                   "and report flip rate and Fleiss' kappa per criterion; the headline stays "
                   "the first repeat's.")
@click.option("--temperature", default=None, type=click.FloatRange(0, 2),
              help="Sampling temperature of generated replies [default: 0].")
@click.option("--max-tokens", "max_tokens", default=None, type=click.IntRange(1, 32768),
              help="Reply budget of generated replies [default: 128 per criterion; combined "
                   "48 + 80 per criterion].")
@click.option("--reference-field", "reference_fields", multiple=True,
              metavar="[CRITERION=]COLUMN",
              help="Validate the judge against human scores in COLUMN (a number, or "
                   "{criterion: score}); CRITERION=COLUMN for one criterion (repeatable). "
                   "Adds QWK, Spearman, exact agreement and MAE with 95% CIs to the judge "
                   "card.")
@click.option("--out", "out", type=output_file(), default=None,
              help="Write the judged rows (JSONL: one per row, criterion and repeat) here.")
@field_option
@click.option("--by", "by", default=None, metavar="FIELD",
              help="Also report every criterion per group of rows sharing FIELD (any column "
                   "of your rows), with coverage, 95% CIs and spend.")
@click.option("--no-ci", is_flag=True, help="Skip the 95% confidence intervals.")
@click.option("--resamples", default=1000, show_default=True, type=click.IntRange(100, 100000),
              help="Bootstrap resamples of the intervals.")
@click.option("--seed", default=12345, show_default=True, type=int,
              help="Random seed of the bootstrap.")
@json_out_option
@items_out_option
@record_options
@backend_options
def judge(path: str, criteria: tuple[str, ...], mode: str, scoring: str, repeats: int,
          temperature: float | None, max_tokens: int | None, reference_fields: tuple[str, ...],
          out: str | None, fields: tuple[str, ...], by: str | None, no_ci: bool,
          resamples: int, seed: int, json_out: str | None, items_out: str | None,
          no_record: bool, runs_dir: str | None, **kwargs: Any) -> None:
    """Judge every row of PATH on every criterion: a score on its scale, or unscored with a
    reason.

    PATH holds the fields the criteria show the judge (question, response, reference ...;
    map yours with --field response=answer).

    Example: ragmeter criteria judge answers.jsonl --criteria relevance --criteria
    correctness --reference-field human --out judged.jsonl
    """
    import ragmeter.criteria
    from ragmeter import OutputOptions, RunOptions
    from ragmeter.backends import from_options
    from ragmeter.judges._card import alarm_lines, card_line

    result = ragmeter.criteria.judge(
        path, criteria=list(criteria),
        judge=ragmeter.criteria.JudgeOptions(mode=mode, scoring=scoring, repeats=repeats,
                                             temperature=temperature, max_tokens=max_tokens),
        reference_field=list(reference_fields) or None, fields=fields,
        backend=from_options(**kwargs),
        run=RunOptions(store=kwargs.get("store"), replay=bool(kwargs.get("replay")),
                       dry_run=bool(kwargs.get("dry_run"))),
        output=OutputOptions(ci=not no_ci, resamples=resamples, seed=seed, by=by))
    if result.summary.get("dry_run"):
        click.echo(result.dry_run_text)  # type: ignore[attr-defined]
        return
    if out:
        from ragmeter.io import write_jsonl

        n = write_jsonl(out, result.iter_items())
        click.echo(f"wrote {n} judged rows to {out}", err=True)
    from ragmeter.criteria._report import print_criteria  # the report after the calls

    print_criteria(result.summary)
    for card in result.judges:
        click.echo(f"judge: {card_line(card)}")
    for line in alarm_lines(result.alarms):
        click.echo(line, err=True)
    write_outputs(result, json_out, items_out)
    save_result(result, no_record=no_record, runs_dir=runs_dir)
    cov = result.coverage
    if cov.get("rows") and not cov.get("scored"):
        reasons = ", ".join(f"{k} {v}" for k, v in (cov.get("reasons") or {}).items())
        click.echo(f"error: criteria: no row was scored on any criterion ({reasons}).",
                   err=True)
        sys.exit(1)
