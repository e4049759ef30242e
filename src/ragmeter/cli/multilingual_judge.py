"""``ragmeter multilingual judge``: LBRAG's 0–1 semantic score through ragmeter's judge
machinery.  The lead attaches :data:`judge` to the ``multilingual`` group."""

from __future__ import annotations

from typing import Any

import click

from ragmeter.cli.backend_options import backend_options
from ragmeter.cli.options import (
    by_option,
    end_run,
    field_option,
    input_file,
    output_file,
    repeats_option,
    run_verb,
)


@click.command(name="judge")
@click.argument("path", type=input_file())
@click.option("--out", "out", required=True, type=output_file(),
              help="Write the answers with a semantic_score column (JSONL) here; feed it to "
                   "ragmeter multilingual score.")
@click.option("--scoring", type=click.Choice(["auto", "choices", "generate"]), default="auto",
              show_default=True,
              help="generate: the judge writes {\"score\": 0..1, \"explanation\": ...} (LBRAG's "
                   "way, parsed and clipped); choices: P(yes) of a yes/no question, from "
                   "logits/logprobs. auto: choices for --backend local (the tiny offline model "
                   "cannot write JSON reliably), generate otherwise.")
@repeats_option
@by_option
@field_option
@backend_options
def judge(path: str, out: str, scoring: str, repeats: int, by: str | None,
          fields: tuple[str, ...], **kwargs: Any) -> None:
    """Add a semantic score (0-1) to multilingual answers with an LLM judge.

    PATH is the multilingual answers file (sample_id, sample_lang, system, question,
    gold_answer, pred_answer).  A failed or unparseable judgement leaves semantic_score empty
    with a semantic_reason (LBRAG counts it 0.0), so multilingual score reports its coverage.

    Example: ragmeter multilingual judge answers.jsonl --out judged.jsonl
    """
    import ragmeter.multilingual
    from ragmeter._verb._options import OutputOptions, RunOptions
    from ragmeter.backends import from_options
    from ragmeter.io import write_jsonl
    from ragmeter.judges._card import alarm_lines, card_line
    from ragmeter.reports.console_extras import print_extras

    result, failure = run_verb(
        ragmeter.multilingual.judge, path, fields=fields,
        judge=ragmeter.multilingual.JudgeOptions(scoring=scoring, repeats=repeats),
        backend=from_options(**kwargs),
        run=RunOptions(store=kwargs.get("store"), replay=bool(kwargs.get("replay")),
                       dry_run=bool(kwargs.get("dry_run"))),
        output=OutputOptions(by=by))
    if result.summary.get("dry_run"):
        click.echo(result.dry_run_text)  # type: ignore[attr-defined]
        return
    n = write_jsonl(out, result.iter_items())
    cov = result.coverage
    click.echo(f"semantic score ({result.summary['method']}, judge {result.summary['judge']}, "
               f"prompt {result.summary['prompt_version']}): {cov['scored']}/{n} rows scored")
    mean, ci = result.summary["metrics"]["semantic_score"], result.summary["ci95"]["semantic_score"]
    if mean is not None:
        interval = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""
        click.echo(f"mean semantic score {mean:.3f}{interval} (bootstrap 95% CI, "
                   f"n={result.summary['metrics']['n']}; unscored rows left out)")
    if cov["reasons"]:
        click.echo("unscored: " + ", ".join(f"{k} {v}" for k, v in
                                             sorted(cov["reasons"].items())))
    print_extras(result.summary)
    for card in result.judges:
        click.echo(f"judge: {card_line(card)}")
    for line in alarm_lines(result.alarms):
        click.echo(line, err=True)
    click.echo(f"wrote {n} rows to {out}", err=True)
    end_run(result, failure)
