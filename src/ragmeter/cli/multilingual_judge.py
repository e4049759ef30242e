"""``ragmeter multilingual judge`` (LBRAG's 0–1 semantic score, by ragmeter's fitted score or
a judge model, validated against reference scores when the data has them) and
``ragmeter multilingual fit`` (fit that score).  The lead attaches :data:`judge` and
:data:`fit` to the ``multilingual`` group."""

from __future__ import annotations

from typing import Any

import click

from ragmeter.cli.backend_options import backend_options
from ragmeter.cli.options import (
    by_option,
    end_run,
    field_option,
    input_file,
    json_out_option,
    output_file,
    repeats_option,
    run_verb,
    write_outputs,
)
from ragmeter.cli.report import record_options, save_result


@click.command(name="judge")
@click.argument("path", type=input_file())
@click.option("--out", "out", required=True, type=output_file(),
              help="Write the answers with a semantic_score column (JSONL) here; feed it to "
                   "ragmeter multilingual score.")
@click.option("--scoring", type=click.Choice(["auto", "fitted", "choices", "generate"]),
              default="auto", show_default=True,
              help="fitted: ragmeter's fitted semantic score (lexical, numeric and script "
                   "features; no model call; validated against LBRAG's GPT-4o-mini scores). "
                   "generate: the judge model writes {\"score\": 0..1, \"explanation\": ...} "
                   "(LBRAG's way, parsed and clipped); choices: P(yes) of a yes/no question, "
                   "from logits/logprobs. auto: fitted for --backend local, generate "
                   "otherwise.")
@click.option("--model-file", "model_file", default=None, type=input_file(),
              help="--scoring fitted: a semantic judge file from `ragmeter multilingual fit` "
                   "[default: the shipped one].")
@click.option("--reference-field", "reference_field", default=None, metavar="FIELD",
              help="The column of reference 0-1 semantic scores to validate the judge "
                   "against (AUROC at >= 0.5, Spearman, MAE, with 95% CIs) [default: "
                   "semantic_score when the file has it, as LBRAG's runs do].")
@repeats_option
@by_option
@field_option
@json_out_option
@record_options
@backend_options
def judge(path: str, out: str, scoring: str, model_file: str | None,
          reference_field: str | None, repeats: int, by: str | None,
          fields: tuple[str, ...], json_out: str | None, no_record: bool,
          runs_dir: str | None, **kwargs: Any) -> None:
    """Add a semantic score (0-1) to multilingual answers: ragmeter's fitted score (the
    default, no model) or an LLM judge.

    PATH is the multilingual answers file (sample_id, sample_lang, system, question,
    gold_answer, pred_answer).  A failed or unparseable judgement leaves semantic_score empty
    with a semantic_reason (LBRAG counts it 0.0), so multilingual score reports its coverage.
    When the file carries reference scores (LBRAG's semantic_score, or --reference-field),
    the judge's agreement with them is printed and stored (--json, the run record).

    Example: ragmeter multilingual judge answers.jsonl --out judged.jsonl
    """
    import ragmeter.multilingual
    from ragmeter._verb._options import OutputOptions, RunOptions
    from ragmeter.backends import from_options
    from ragmeter.io import write_jsonl

    result, failure = run_verb(
        ragmeter.multilingual.judge, path, fields=fields,
        judge=ragmeter.multilingual.JudgeOptions(scoring=scoring, repeats=repeats,
                                                 model_file=model_file,
                                                 reference_field=reference_field),
        backend=from_options(**kwargs),
        run=RunOptions(store=kwargs.get("store"), replay=bool(kwargs.get("replay")),
                       dry_run=bool(kwargs.get("dry_run"))),
        output=OutputOptions(by=by))
    if result.summary.get("dry_run"):
        click.echo(result.dry_run_text)  # type: ignore[attr-defined]
        return
    from ragmeter.judges._card import alarm_lines, card_line  # the report after the calls
    from ragmeter.reports.console_extras import print_extras

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
    for line in agreement_lines(result.summary):
        click.echo(line)
    print_extras(result.summary)
    for card in result.judges:
        click.echo(f"judge: {card_line(card)}")
    for note in result.summary.get("notes") or []:
        click.echo(f"note: {note}")
    for line in alarm_lines(result.alarms):
        click.echo(line, err=True)
    click.echo(f"wrote {n} rows to {out}", err=True)
    write_outputs(result, json_out, None)
    save_result(result, no_record=no_record, runs_dir=runs_dir)
    end_run(result, failure)


def _estimate(est: Any, digits: int = 3) -> str:
    if not isinstance(est, dict) or est.get("value") is None:
        return "—"
    ci = est.get("ci95")
    interval = f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]" if ci else ""
    return f"{est['value']:.{digits}f}{interval}"


def agreement_lines(summary: dict[str, Any]) -> list[str]:
    """The judge's agreement with the reference scores, one line per judge and ``--by``
    group (empty when the data has no reference scores)."""
    judges = summary.get("judges")
    if not isinstance(judges, dict):
        return []
    ref = summary.get("reference") or {}
    out = [f"agreement with the reference scores ({ref.get('field')}; {ref.get('scored')} rows "
           "with both; 95% bootstrap CIs):"]
    groups = (summary.get("groups") or {}).get("values") or {}
    for judge, found in judges.items():
        blocks = [(str(judge), found)] + [(f"  {key}", g["agreement"]) for key, g in
                                          groups.items() if isinstance(g.get("agreement"), dict)]
        for label, ests in blocks:
            out.append(f"{label}: AUROC (reference >= {ref.get('threshold', 0.5)}) "
                       f"{_estimate(ests.get('semantic_auroc'))}, Spearman "
                       f"{_estimate(ests.get('semantic_spearman'))}, MAE "
                       f"{_estimate(ests.get('semantic_mae'))}")
    return out


@click.command(name="fit")
@click.argument("path", type=input_file())
@click.option("--out", required=True, type=output_file(),
              help="Write the fitted semantic judge (JSON) here.")
@click.option("--name", default="semantic-fitted-v1", show_default=True,
              help="The judge's name (in its card and every signature).")
@click.option("--reference-field", "reference_field", default="semantic_score",
              show_default=True, metavar="FIELD",
              help="The column of reference 0-1 semantic scores to fit on.")
@click.option("--source", default=None, metavar="TEXT",
              help="A line saying what the data is, kept in the file's provenance.")
@field_option
def fit(path: str, out: str, name: str, reference_field: str, source: str | None,
        fields: tuple[str, ...]) -> None:
    """Fit ragmeter's semantic score on answers with reference semantic scores and write it.

    PATH is a multilingual answers file whose rows carry a reference score (LBRAG's released
    semantic_score).  The features, penalty and output rule are chosen on PATH by leaving
    one language out; the file records the held-out agreement by language and by system,
    beside token F1 alone.  Refitting the same file with the same options gives the same
    file byte for byte (the shipped judge: benchmarks/bench_semantic.py says how).

    Example: ragmeter multilingual fit answers.jsonl --out semantic.json
    """
    import ragmeter.multilingual

    result = ragmeter.multilingual.fit(path, out=out, name=name,
                                       reference_field=reference_field, source=source,
                                       fields=fields)
    for h in result.headline:
        ci = f" [{h.ci[0]:.4f}, {h.ci[1]:.4f}]" if h.ci else ""
        click.echo(f"{h.group}: {h.metric} {h.value:.4f}{ci}" if h.value is not None
                   else f"{h.group}: {h.metric} —")
    cov = result.coverage
    click.echo(f"wrote {out} (fitted on {cov['scored']} of {cov['rows']} rows)", err=True)
