"""``ragmeter multilingual ...``"""

from __future__ import annotations

import click

from ragmeter.cli import LazyGroup
from ragmeter.cli.options import (
    GuardedPath,
    field_option,
    items_out_option,
    json_out_option,
    write_outputs,
)
from ragmeter.cli.options import idle_blas_threads as _idle_blas_threads
from ragmeter.cli.report import record_options, save_result


@click.group(name="multilingual", cls=LazyGroup, lazy={
    "judge": ("ragmeter.cli.multilingual_judge:judge",
              "Add LBRAG's semantic score to each answer (fitted score or a judge model)."),
    "fit": ("ragmeter.cli.multilingual_judge:fit",
            "Fit ragmeter's semantic score on answers with reference scores.")})
def group() -> None:
    """Multilingual QA (LBRAG): EM, language-aware F1, RLC, cost, CNBE, semantic score."""


@group.command(name="score")
@click.argument("path", type=GuardedPath("input", pattern="*.parquet"))
@click.option("--baseline", default=None, metavar="SYSTEM",
              help="System that CNBE and paired tests compare against [default: direct, "
                   "skipped with a note when the data has no such system].")
@json_out_option
@items_out_option
@field_option
@click.option("--ci", is_flag=True, help="Add 95% bootstrap confidence intervals (beyond LBRAG).")
@click.option("--paired", is_flag=True,
              help="Paired bootstrap and permutation tests of each system against the baseline "
                   "on F1 and EM (beyond LBRAG).")
@click.option("--rlc-lid", is_flag=True,
              help="Also compute a language-identification RLC with lingua, which catches a "
                   "wrong language in the same script (beyond LBRAG; needs ragmeter[lang]).")
@click.option("--resamples", default=1000, show_default=True, type=click.IntRange(100, 100000),
              help="Bootstrap resamples for --ci and --paired.")
@click.option("--seed", default=12345, show_default=True, type=int,
              help="Random seed for --ci and --paired.")
@click.option("--normalize", type=click.Choice(["lbrag", "squad"]), default="lbrag",
              show_default=True,
              help="Answer normalization: lbrag keeps articles (LBRAG's metrics.py); squad is "
                   "SQuAD v1.1's (drops punctuation and a/an/the). The signature says which.")
@click.option("--by", default=None, metavar="FIELD",
              help="Also score each group of rows sharing FIELD's value (lang = sample_lang, "
                   "or any column such as dataset): quality, coverage and cost per group.")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local",
              show_default=True,
              help="ray: PATH is a Parquet file, a folder of them or a quoted glob; the "
                   "per-row work runs on Ray, the numbers equal one process (docs/scale.md; "
                   "needs ragmeter[ray]).")
@click.option("--ray-address", default=None, metavar="ADDR",
              help="With --engine ray: the cluster to join (HOST:PORT from `ray start "
                   "--head`) [default: Ray on this machine].")
@click.option("--ray-workers", default=2, show_default=True, type=click.IntRange(min=1),
              metavar="N", help="With --engine ray: workers scoring batches in parallel.")
@click.option("--ray-cpus-per-worker", default=1, show_default=True,
              type=click.IntRange(min=1), metavar="N",
              help="With --engine ray: CPUs each worker reserves and reads and scores with.")
@record_options
def score(path: str, baseline: str | None, json_out: str | None, items_out: str | None,
          fields: tuple[str, ...], ci: bool, paired: bool, rlc_lid: bool, resamples: int,
          seed: int, normalize: str, by: str | None, engine: str, ray_address: str | None,
          ray_workers: int, ray_cpus_per_worker: int, no_record: bool,
          runs_dir: str | None) -> None:
    """Score an answers file: EM, F1, RLC and RLC_OK recomputed from the text.

    PATH holds one row per (system, sample) with sample_id, sample_lang, system, gold_answer,
    pred_answer, and translate_tokens (or evidence) and optional semantic_score.  JSONL, JSON,
    CSV or Parquet.  gold_answer may be a list of golds: EM and F1 are the max over them.

    Example: ragmeter multilingual score answers.jsonl --json metrics.json

    Beyond one process: ragmeter multilingual score 'answers/*.parquet' --engine ray
    """
    _idle_blas_threads()
    import ragmeter.multilingual
    from ragmeter._verb._options import EngineOptions, OutputOptions
    from ragmeter.multilingual._report import print_multilingual

    result = ragmeter.multilingual.score(
        path, baseline=baseline, normalize=normalize, rlc_lid=rlc_lid, paired=paired,
        fields=fields,
        # answer text is kept only when something writes it (--items); the run record keeps
        # ids and scores (issue 14: 1M rows in < 1 GiB)
        keep_text=items_out is not None,
        output=OutputOptions(ci=ci, resamples=resamples, seed=seed, by=by),
        engine=EngineOptions(engine=engine, ray_address=ray_address, ray_workers=ray_workers,
                             ray_cpus_per_worker=ray_cpus_per_worker))
    print_multilingual(result.detail)
    if by:
        from ragmeter.multilingual._report import print_groups

        print_groups(result.summary["groups"])
    write_outputs(result, json_out, items_out)
    save_result(result, no_record=no_record, runs_dir=runs_dir)
