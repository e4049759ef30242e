"""``ragmeter rgb ...``: RGB (Chen et al., AAAI 2024) build, score and run."""

from __future__ import annotations

from typing import Any

import click

from ragmeter.cli.backend_options import backend_options
from ragmeter.cli.options import (
    FiniteFloat,
    by_option,
    end_run,
    input_file,
    items_out_option,
    json_out_option,
    output_file,
    repeats_option,
    run_verb,
    write_outputs,
)
from ragmeter.cli.report import record_options, save_result


@click.group(name="rgb")
def group() -> None:
    """RGB benchmark: noise robustness, negative rejection, information integration and
    counterfactual robustness, scored exactly as the original evalue.py."""


def _data_options(f: Any) -> Any:
    f = click.option("--lang", type=click.Choice(["en", "zh"]), default=None,
                     help="Language of the data [default: from the file name, as evalue.py]")(f)
    f = click.option("--kind", type=click.Choice(["default", "int", "fact"]), default=None,
                     help="File kind [default: _int/_fact in the file name, else the "
                          "content].")(f)
    f = click.option("--data", "data", required=True, type=input_file(),
                     help="An RGB data file (JSON Lines), e.g. data/en.json of the RGB repo.")(f)
    return f


def _setting_options(f: Any) -> Any:
    f = click.option("--seed", default=2333, show_default=True, type=int,
                     help="Seed set before each instance (evalue.py: random.seed(2333)).")(f)
    f = click.option("--passage-num", default=5, show_default=True, type=click.IntRange(0),
                     help="Documents per question (0: no documents, no system prompt).")(f)
    f = click.option("--correct-rate", default=0.0, show_default=True,
                     type=FiniteFloat(0, 1),
                     help="Share of correct documents among counterfactual ones (_fact).")(f)
    return f


@group.command(name="build")
@_data_options
@click.option("--noise-rate", required=True, type=FiniteFloat(0, 1),
              help="Share of noise documents, e.g. 0.4.")
@_setting_options
@click.option("--prompts", "prompts_path", default=None, type=input_file(),
              help="RGB's config/instruction.yaml (or a JSON file of that layout) "
                   "[default: ragmeter's own prompts].")
@click.option("--out", "out", required=True, type=output_file(),
              help="Output JSON Lines file: one row per instance.")
def build(data: str, kind: str | None, lang: str | None, noise_rate: float,
          correct_rate: float, passage_num: int, seed: int, prompts_path: str | None,
          out: str) -> None:
    """Build the documents and messages evalue.py would send, one row per instance:
    {"id", "query", "answer", "docs", "messages"}.

    Example: ragmeter rgb build --data RGB/data/en.json --noise-rate 0.4
    --prompts RGB/config/instruction.yaml --out en_noise0.4.jsonl
    """
    import ragmeter.rgb
    from ragmeter.io import write_jsonl

    result = ragmeter.rgb.build(data, noise_rate=noise_rate, kind=kind, lang=lang,
                                correct_rate=correct_rate, passage_num=passage_num, seed=seed,
                                prompts=prompts_path)
    n = write_jsonl(out, result.iter_items())
    sm = result.summary
    click.echo(f"wrote {n} rows to {out} ({sm['dataset']}: kind {sm['kind']}, lang "
               f"{sm['lang']}, {sm['setting']}, prompts {sm['prompts']})", err=True)


@group.command(name="score")
@click.argument("predictions", type=input_file())
@_data_options
@click.option("--noise-rate", required=True, type=FiniteFloat(0, 1),
              help="The noise rate the predictions were made with.")
@_setting_options
@click.option("--mode", type=click.Choice(["strict", "lenient", "refactor"]), default="strict",
              show_default=True,
              help="lenient: ragmeter's token-overlap matching and broad keyword lists; "
                   "refactor: the refactored RGB app's matching, keyword lists and rates "
                   "(docs/rgb.md). Both NOT comparable with the paper; both count the items "
                   "that flip against strict.")
@by_option
@json_out_option
@items_out_option
@record_options
def score(predictions: str, data: str, kind: str | None, lang: str | None, noise_rate: float,
          correct_rate: float, passage_num: int, seed: int, mode: str, by: str | None,
          json_out: str | None, items_out: str | None, no_record: bool,
          runs_dir: str | None) -> None:
    """Score raw model outputs {"id", "prediction"} with evalue.py's labels and rates.

    Example: ragmeter rgb score preds.jsonl --data RGB/data/en_fact.json --noise-rate 0
    --json result.json --items items.jsonl
    """
    import ragmeter.rgb
    from ragmeter.reports.console_extras import print_extras
    from ragmeter.rgb._report import print_score

    result = ragmeter.rgb.score(predictions, data=data, noise_rate=noise_rate, kind=kind,
                                lang=lang, correct_rate=correct_rate, passage_num=passage_num,
                                seed=seed, mode=mode, by=by)
    print_score(result.detail)
    print_extras(result.summary)
    write_outputs(result, json_out, items_out)
    save_result(result, no_record=no_record, runs_dir=runs_dir)


_judge_method_option = click.option(
    "--judge-method", type=click.Choice(["auto", "text", "choice", "detector"]), default="auto",
    show_default=True,
    help="text: apply the original rules to the judge's reply; choice: score Yes/No; "
         "detector: ragmeter's refusal detector for Rej* and error detector for ED*, no model "
         "call. auto: text for remote backends; detector for the local one.")


@group.command(name="judge")
@click.argument("predictions", type=input_file())
@_data_options
@click.option("--noise-rate", default=None, type=FiniteFloat(0, 1),
              help="The noise rate the predictions were made at [default: 1.0 for default "
                   "data (the rejection setting), 0 for _fact data].")
@_setting_options
@click.option("--judge-prompts", default=None, type=input_file(),
              help="Judge prompts in RGB's layout (reject/fact templates) [default: "
                   "ragmeter's own few-shot prompts].")
@_judge_method_option
@repeats_option
@by_option
@json_out_option
@items_out_option
@backend_options
@record_options
def judge(predictions: str, data: str, kind: str | None, lang: str | None,
          noise_rate: float | None, correct_rate: float, passage_num: int, seed: int,
          judge_prompts: str | None, judge_method: str, repeats: int, by: str | None,
          json_out: str | None,
          items_out: str | None, no_record: bool, runs_dir: str | None,
          **backend_kwargs: Any) -> None:
    """Judge predictions you already have: Rej* on default data (predictions at noise 1.0),
    ED* and CR* on _fact data, exactly as rgb run judges them, without generating.

    PREDICTIONS: rows {"id", "prediction"} (JSONL, JSON, CSV or Parquet).

    Example: ragmeter rgb judge preds.jsonl --data RGB/data/en.json --judge-prompts
    judge_prompts.yaml --backend openai --model gpt-4o-mini --json rej.json
    """
    import ragmeter.rgb
    from ragmeter.backends import from_options
    from ragmeter.reports.console_extras import print_extras
    from ragmeter.rgb._report import print_judged

    result, failure = run_verb(
        ragmeter.rgb.judge, predictions, data=data, kind=kind, lang=lang, noise_rate=noise_rate,
        correct_rate=correct_rate, passage_num=passage_num, seed=seed,
        judge_prompts=judge_prompts, judge_method=judge_method,
        backend=from_options(**backend_kwargs), store=backend_kwargs.get("store"),
        replay=bool(backend_kwargs.get("replay")), dry_run=bool(backend_kwargs.get("dry_run")),
        repeats=repeats, by=by)
    if result.summary.get("dry_run"):
        click.echo("judge: " + result.dry_run_text)  # type: ignore[attr-defined]
        return
    print_judged(result.detail)
    print_extras(result.summary)
    write_outputs(result, json_out, items_out)
    save_result(result, no_record=no_record, runs_dir=runs_dir)
    end_run(result, failure)


@group.command(name="run")
@click.option("--data", "data", multiple=True, type=input_file(),
              help="RGB data file(s), repeatable: en.json (noise, rejection), en_int.json "
                   "(integration), en_fact.json (counterfactual) [default: the built-in sample].")
@click.option("--lang", type=click.Choice(["en", "zh"]), default=None,
              help="Language of every --data file [default: from each file name].")
@click.option("--noise-rates", default="0,0.2,0.4,0.6,0.8", show_default=True,
              help="Noise rates for default data (noise 1.0 for rejection is added).")
@click.option("--int-noise-rates", default="0,0.2,0.4", show_default=True,
              help="Noise rates for _int data (the paper's integration table).")
@click.option("--no-rejection", is_flag=True, help="Do not run noise 1.0 on default data.")
@click.option("--passage-num", default=5, show_default=True, type=click.IntRange(1))
@click.option("--correct-rate", default=0.0, show_default=True, type=FiniteFloat(0, 1),
              help="Correct documents among counterfactual ones (_fact data).")
@click.option("--seed", default=2333, show_default=True, type=int)
@click.option("--temperature", default=0.7, show_default=True, type=FiniteFloat(0),
              help="Sampling temperature of the answers (evalue.py's default 0.7).")
@click.option("--max-tokens", default=256, show_default=True, type=click.IntRange(1),
              help="Completion limit of each answer.")
@click.option("--limit", default=None, type=click.IntRange(1),
              help="Only the first N instances of each file (quick looks; noted in the "
                   "signature).")
@click.option("--prompts", "prompts_path", default=None, type=input_file(),
              help="RGB's config/instruction.yaml [default: ragmeter's own prompts].")
@click.option("--judge", is_flag=True, help="Also compute Rej*, ED* and CR* with a judge.")
@click.option("--judge-prompts", default=None, type=input_file(),
              help="Judge prompts in RGB's layout (reject/fact templates) [default: "
                   "ragmeter's own few-shot prompts].")
@click.option("--judge-model", default=None,
              help="Judge model on the same backend [default: the answering model].")
@_judge_method_option
@click.option("--mode", type=click.Choice(["strict", "lenient", "refactor"]), default="strict",
              show_default=True, help="lenient or refactor: add NOT-paper labels and the flips "
                                      "against strict (docs/rgb.md).")
@click.option("--out", "out_dir", default="ragmeter-out/rgb", show_default=True,
              type=click.Path(file_okay=False), help="Folder for results, items and the plot.")
@click.option("--no-plot", is_flag=True, help="Do not draw the accuracy plot.")
@repeats_option
@by_option
@backend_options
@record_options
def run(data: tuple[str, ...], lang: str | None, noise_rates: str, int_noise_rates: str,
        no_rejection: bool, passage_num: int, correct_rate: float, seed: int,
        temperature: float, max_tokens: int, limit: int | None, prompts_path: str | None,
        judge: bool, judge_prompts: str | None, judge_model: str | None, judge_method: str,
        mode: str, out_dir: str, no_plot: bool, repeats: int, by: str | None,
        no_record: bool, runs_dir: str | None, **backend_kwargs: Any) -> None:
    """Run RGB against a model: build, generate (cached, resumable), score, print the paper's
    tables and write results to OUT.

    Example: ragmeter rgb run --data RGB/data/en.json --data RGB/data/en_fact.json
    --prompts RGB/config/instruction.yaml --backend openai --model gpt-4o-mini --judge
    """
    import ragmeter.rgb
    from ragmeter.backends import from_options

    result, failure = run_verb(
        ragmeter.rgb.run, list(data) or None, lang=lang, noise_rates=noise_rates, int_noise_rates=int_noise_rates,
        no_rejection=no_rejection, passage_num=passage_num, correct_rate=correct_rate,
        seed=seed, temperature=temperature, max_tokens=max_tokens, limit=limit,
        prompts=prompts_path, judge=judge, judge_prompts=judge_prompts, judge_model=judge_model,
        judge_method=judge_method, mode=mode, backend=from_options(**backend_kwargs),
        store=backend_kwargs.get("store"), replay=bool(backend_kwargs.get("replay")),
        dry_run=bool(backend_kwargs.get("dry_run")), repeats=repeats, by=by)
    from ragmeter.reports.console import console  # the report after the calls (issue 26.5)
    from ragmeter.reports.console_extras import print_extras
    from ragmeter.rgb._outputs import write_run_outputs
    from ragmeter.rgb._report import print_run

    con = console()
    if result.summary.get("dry_run"):
        con.print(result.dry_run_text)  # type: ignore[attr-defined]
        return
    print_run(result.detail, con)
    print_extras(result.summary, con)
    written = write_run_outputs(result.detail, out_dir, plot=not no_plot,
                                doc=result.summary)
    for note in written["notes"]:
        con.print(f"note: {note}")
    con.print(f"results: {written['results']}; items: {written['items']}"
              + (f"; plot: {written['plot']}" if written["plot"] else ""))
    save_result(result, no_record=no_record, runs_dir=runs_dir)
    end_run(result, failure)
