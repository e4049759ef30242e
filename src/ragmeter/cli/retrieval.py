"""``ragmeter retrieval ...``"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ragmeter.cli.options import (
    field_option,
    input_file,
    input_path,
    items_out_option,
    json_out_option,
    write_outputs,
)
from ragmeter.cli.report import record_options, save_result

F = TypeVar("F", bound=Callable[..., Any])


@click.group(name="retrieval")
def group() -> None:
    """Retrieval metrics exact to trec_eval: P@k, Recall@k, nDCG@k, Hit@k, MRR, MAP."""


def _cutoffs(ctx: click.Context, param: click.Parameter, value: str) -> tuple[int, ...]:
    try:
        cuts = tuple(int(v) for v in value.replace(" ", "").split(",") if v)
    except ValueError:
        cuts = ()
    if not cuts or min(cuts) < 1:
        raise click.BadParameter(f"{value!r}: give whole numbers of at least 1 separated by "
                                 "commas, e.g. --k 1,3,5,10.")
    return cuts


def measurement_options(f: F) -> F:
    """The options that define the numbers, shared by ``score`` and ``compare``."""
    for option in reversed((
        click.option("--qrels", "qrels", type=input_file(), metavar="QRELS",
                     help="The judgments: a TREC qrels file (qid 0 docid relevance), or rows "
                          "with query_id and relevant_ids (a list, or {id: grade}) or "
                          "reference_contexts [default: the run's own rows carry them]."),
        click.option("--k", "k", default="1,3,5,10", show_default=True, metavar="K,K,...",
                     callback=_cutoffs, help="Cutoffs of P@k, Recall@k, nDCG@k, Hit@k."),
        click.option("--order", type=click.Choice(["score", "given"]), default="score",
                     show_default=True,
                     help="score: trec_eval's ranking (score descending, ties by docid "
                          "descending; the rank column is ignored); given: the rank column, "
                          "else the order of the list or lines."),
        click.option("--duplicates", type=click.Choice(["error", "first"]), default="error",
                     show_default=True,
                     help="A document retrieved twice for a query: error (as trec_eval), or "
                          "first: count it once, at its best rank."),
        click.option("--gain", type=click.Choice(["linear", "exponential"]), default="linear",
                     show_default=True,
                     help="nDCG gain of a grade: linear (the grade, trec_eval's ndcg_cut) or "
                          "exponential (2^grade - 1)."),
        click.option("--all-queries", "all_queries", is_flag=True,
                     help="Average over every judged query; one with nothing retrieved scores "
                          "0 (trec_eval -c). Default: the queries in the run and the "
                          "judgments."),
        click.option("--relevance-level", "relevance_level", default=1, show_default=True,
                     type=click.IntRange(min=1),
                     help="The least grade that counts as relevant (trec_eval -l)."),
        click.option("--match", type=click.Choice(["exact", "contains"]), default="exact",
                     show_default=True,
                     help="Context texts: a retrieved context matches a gold passage when "
                          "their normalized texts are equal (exact) or the passage occurs in "
                          "the context as whole words (contains)."),
        field_option,
        click.option("--qrels-field", "qrels_fields", multiple=True, metavar="NAME=COLUMN",
                     help="Read the judgments' field NAME from their column COLUMN "
                          "(repeatable) [default: the --field mapping]."),
    )):
        f = option(f)
    return f


@group.command(name="score")
@input_path()
@measurement_options
@click.option("--ci", is_flag=True, help="Add 95% percentile bootstrap intervals of the means.")
@click.option("--resamples", default=1000, show_default=True, type=click.IntRange(100, 100000),
              help="Bootstrap resamples for --ci.")
@click.option("--seed", default=12345, show_default=True, type=int,
              help="Random seed for --ci.")
@click.option("--by", "by", default=None, metavar="FIELD",
              help="Also report every metric per group of queries sharing FIELD (any column "
                   "of your rows, e.g. topic), with coverage and 95% CIs with --ci.")
@json_out_option
@items_out_option
@record_options
def score(path: str, qrels: str | None, k: tuple[int, ...], order: str, duplicates: str,
          gain: str, all_queries: bool, relevance_level: int, match: str,
          fields: tuple[str, ...], qrels_fields: tuple[str, ...], ci: bool, resamples: int,
          seed: int, by: str | None,
          json_out: str | None, items_out: str | None, no_record: bool,
          runs_dir: str | None) -> None:
    """Score a run against judgments: P@k, Recall@k, nDCG@k, Hit@k, MRR, MAP (trec_eval).

    PATH is a TREC run file (qid Q0 docid rank score tag), or rows (JSONL, JSON, CSV,
    Parquet) with query_id and retrieved_ids (ranked; optional scores), one row per
    retrieved document (query_id, doc_id, score), or retrieved_contexts (texts; then
    reference_contexts are the gold passages and reference the answer: Answer@k).

    Example: ragmeter retrieval score run.trec --qrels qrels.txt --ci --items per_query.jsonl
    """
    import ragmeter.retrieval
    from ragmeter.retrieval._report import print_retrieval

    result = ragmeter.retrieval.score(
        path, qrels=qrels, k=k, order=order, duplicates=duplicates, gain=gain,
        all_queries=all_queries, relevance_level=relevance_level, match=match, fields=fields,
        qrels_fields=qrels_fields or None, ci=ci, resamples=resamples, seed=seed, by=by)
    print_retrieval(result.summary)
    write_outputs(result, json_out, items_out)
    save_result(result, no_record=no_record, runs_dir=runs_dir)


@group.command(name="compare")
@click.argument("run_a", type=input_file())
@click.argument("run_b", type=input_file())
@measurement_options
@click.option("--name", "names", multiple=True, metavar="LABEL",
              help="Labels of the two runs, in order (give it twice) [default: the TREC run "
                   "tag, else the file name].")
@click.option("--resamples", default=1000, show_default=True, type=click.IntRange(100, 100000),
              help="Bootstrap resamples of the paired 95% CI.")
@click.option("--seed", default=12345, show_default=True, type=int,
              help="Random seed of the CI and the randomization test.")
@json_out_option
@items_out_option
@record_options
def compare(run_a: str, run_b: str, qrels: str | None, k: tuple[int, ...], order: str,
            duplicates: str, gain: str, all_queries: bool, relevance_level: int, match: str,
            fields: tuple[str, ...], qrels_fields: tuple[str, ...], names: tuple[str, ...],
            resamples: int, seed: int,
            json_out: str | None, items_out: str | None, no_record: bool,
            runs_dir: str | None) -> None:
    """Compare two runs on the queries scored in both: each metric's means, the difference
    RUN_B - RUN_A with its paired bootstrap 95% CI, and the p-value of a paired randomization
    test.

    Example: ragmeter retrieval compare bm25.trec dense.trec --qrels qrels.txt
    """
    import ragmeter.retrieval
    from ragmeter.retrieval._report import print_retrieval

    if names and (len(names) != 2 or names[0] == names[1] or "difference" in names):
        raise click.BadParameter("give --name twice, two different labels (one per run, not "
                                 "'difference'), or not at all.", param_hint="--name")
    result = ragmeter.retrieval.compare(
        run_a, run_b, qrels=qrels, names=names or None, k=k, order=order,
        duplicates=duplicates, gain=gain, all_queries=all_queries,
        relevance_level=relevance_level, match=match, fields=fields,
        qrels_fields=qrels_fields or None, resamples=resamples,
        seed=seed)
    print_retrieval(result.summary)
    write_outputs(result, json_out, items_out)
    save_result(result, no_record=no_record, runs_dir=runs_dir)
