"""Rubric judging (RAGaliq's 0–5 grades) from Python: ``score``, ``judge``, ``run``,
``validate``.

::

    import ragmeter
    graded = ragmeter.rubric.judge(rows, strategy="overlap")      # no model at all
    ragmeter.rubric.score(graded.items, by=["lang"]).summary["metrics"]
    ragmeter.rubric.validate(graded.items, reference="eval_res_en.json").summary["metrics"]

``data`` is a path (JSONL, JSON, CSV/TSV, Parquet; RAGaliq's ``eval_res_*.json`` logs as they
are), a list of dicts, a pandas DataFrame or a pyarrow Table; ``score`` and ``validate`` also
take a list of paths.  Options are the CLI flags in snake_case with the same defaults;
``ragmeter rubric ...`` calls exactly these functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragmeter._verb._context import (
    async_variant,
    dry_run_result,
    field_map,
    input_record,
    model_context,
)
from ragmeter.result import Result

__all__ = ["score", "judge", "run", "validate", "build", "ajudge", "arun", "abuild"]

COMPONENT = "rubric"
Fields = Mapping[str, str] | Iterable[str] | None


def _sources(data: Any) -> list[Any]:
    """One source, or a list/tuple of paths as several sources."""
    from ragmeter.io import is_path

    if isinstance(data, (list, tuple)) and data and all(is_path(d) for d in data):
        return list(data)
    return [data]


def _with_rows(coverage: Mapping[str, Any]) -> dict[str, Any]:
    """The family's coverage with ``rows`` (the name every Result reads) beside ``total``."""
    return {**coverage, "rows": coverage.get("total")}


def _score_result(verb: str, detail: Any, inputs: list[Any], **extra: Any) -> Result:
    summary = detail.to_json()
    summary["coverage"] = _with_rows(summary["coverage"])
    return Result(COMPONENT, verb, summary, items=detail.iter_items, detail=detail,
                  inputs=inputs, **extra)


def score(data: Any, *, by: Sequence[str] = (), ci: bool = True, resamples: int = 1000,
          seed: int = 12345, fields: Fields = None) -> Result:
    """RAGaliq's table from graded answers: weighted score, mean/median grade, percentages,
    counts per grade, bootstrap CIs, judge stability when rows carry ``repeat``, and the mean
    ``language_consistency_score`` when rows have one.

    Rows need a ``score`` (0..5) or a judge ``reply`` (``... [RESULT] 4``).  ``by``: one row
    per value of these columns (RAGaliq log names give ``lang``, ``model_name``, ...).
    """
    from ragmeter.rubric._scorer import RubricConfig, score_files

    config = RubricConfig(by=tuple(by), ci=ci, n_resamples=resamples, seed=seed,
                          field_map=field_map(fields, COMPONENT))
    sources = _sources(data)
    detail = score_files(sources, config)
    return _score_result("score", detail, [input_record(s) for s in sources])


def _judge_card(mode: str, judge_model: str | None, prompt: str | None) -> dict[str, Any]:
    """The judge's card: the overlap grader carries its cross-language validation."""
    from ragmeter.judges._card import judge_card

    if mode.startswith("overlap:"):
        from ragmeter.rubric._offline import OverlapGrader

        grader = OverlapGrader.shipped()
        if mode == f"overlap:{grader.name}":
            cross = grader.validation.get("cross_language") or []
            if cross:
                worst = min(cross, key=lambda c: c["qwk"])
                return judge_card(mode, {
                    "metric": "quadratic kappa", "value": worst["qwk"],
                    "ci": worst["ci95"]["qwk"],
                    "data": f"RAGaliq grades, fit on {worst['fit_on']}, tested on "
                            f"{worst['tested_on']} (n={worst['n']}; the lower of "
                            f"{len(cross)} directions)"})
        return judge_card(mode)
    return judge_card(f"{judge_model}:{mode}:{prompt or ''}")


def _alarm(rows: Sequence[Mapping[str, Any]], judge_name: str) -> dict[str, Any] | None:
    """The degenerate-judge alarm over the grades (repeat 0) and, for choice scoring, the
    expected grades scaled to 0..1 (so a spread below 0.05 is a quarter of a grade)."""
    from ragmeter.judges._card import check_degenerate

    first = [r for r in rows if r.get("repeat", 0) == 0]
    grades = [r.get("score") for r in first]
    expected = [r.get("expected_grade") for r in first]
    probs = ([None if e is None else float(e) / 5.0 for e in expected]
             if any(e is not None for e in expected) else None)
    return check_degenerate(grades, judge=judge_name, what="rubric grade", probabilities=probs)


def _judged_result(verb: str, rows: list[dict[str, Any]], mode: str, judge_model: str | None,
                   by: Sequence[str], inputs: list[Any], backend_obj: Any,
                   prompt_version: str | None, extra: Mapping[str, Any] | None = None,
                   prices: tuple[Any, Any] | None = None) -> Result:
    from ragmeter.rubric._scorer import RubricConfig, score_files

    detail = score_files([rows], RubricConfig(by=tuple(by)))
    summary = detail.to_json()
    if prices is not None:
        _add_spend(summary, rows, by, prices)
    summary["coverage"] = _with_rows(summary["coverage"])
    summary.update({"verb": verb, "method": mode, "judge": judge_model})
    summary.update(extra or {})
    card = _judge_card(mode, judge_model, prompt_version)
    alarm = _alarm(rows, card["judge"])
    identity = [backend_obj.identity()] if backend_obj is not None else []
    return Result(COMPONENT, verb, summary, items=rows, detail=detail, inputs=inputs,
                  backends=identity, models=[judge_model] if judge_model else [],
                  prompt_versions={"judge": prompt_version} if prompt_version else None,
                  judges=[card], alarms=[alarm] if alarm else [])


def _add_spend(summary: dict[str, Any], rows: list[dict[str, Any]], by: Sequence[str],
               prices: tuple[Any, Any]) -> None:
    """The judge calls' tokens and money (ragmeter.judges._spend), in total and per ``by`` group."""
    from ragmeter.judges._spend import add_usage, spend

    summary["spend"] = spend(add_usage(r.get("usage") for r in rows), *prices)
    for g in summary.get("groups") or []:
        mine = [r for r in rows if all(str(r.get(c)) == str(g.get(c)) for c in by)]
        g["spend"] = spend(add_usage(r.get("usage") for r in mine), *prices)


def _spend_by_step(rows: list[dict[str, Any]], prices: tuple[Any, Any]) -> dict[str, Any]:
    """``rubric run``'s spend split into the reranker's, the reader's and the judge's calls."""
    from ragmeter.judges._spend import add_usage, spend
    from ragmeter.rubric._orchestrate import STEPS

    return {step: spend(add_usage((r.get("usage_by_step") or {}).get(step) for r in rows),
                        *prices) for step in STEPS}


def judge(data: Any, *, strategy: str = "llm", prompt_file: str | None = None,
          scoring: str = "auto", repeats: int = 1, temperature: float | None = None,
          seed: int = 0, grader: str | None = None, by: Sequence[str] = (),
          backend: Any = None, store: Any = None, replay: bool = False,
          dry_run: bool = False, progress: bool | None = None, fields: Fields = None,
          on_progress: Any = None) -> Result:
    """Grade answers 0–5 against their reference answers.

    ``strategy``: ``llm`` (a judge model: ``backend`` is :func:`ragmeter.backends.local`
    by default; ``scoring`` ``choices`` reads the probabilities of "0".."5", ``generate``
    parses the judge's text; ``prompt_file`` RAGaliq's ``judge_prompt.txt`` reproduces it) or
    ``overlap`` (ragmeter's offline grader, no model; ``grader`` a cut-point file).
    The result's ``items`` are the graded rows (what ``--out`` writes; feed them to
    :func:`score` or :func:`validate`); its summary is ``score``'s table over them, with the
    judge's card and the degenerate-judge alarm when it trips.
    """
    from ragmeter.rubric._judge import read_answers
    from ragmeter.rubric._orchestrate import JudgeOptions, judge_answers

    answers = read_answers(data, field_map(fields, COMPONENT))
    options = JudgeOptions(strategy=strategy, prompt_file=prompt_file, scoring=scoring,
                           repeats=repeats, temperature=temperature, seed=seed,
                           grader_file=grader)
    inputs = [input_record(data, len(answers))]
    if strategy == "overlap":
        out = judge_answers(answers, options)
        return _judged_result("judge", out.rows, out.mode, out.judge_model, by, inputs, None,
                              None)
    backend_obj, the_store, config = model_context(backend, store, replay=replay,
                                                   progress=progress, description="judge",
                                                   on_progress=on_progress)
    out = judge_answers(answers, options, backend_obj, the_store, config, dry_run)
    if out.estimate is not None:
        return dry_run_result(COMPONENT, "judge", out.estimate)
    version = out.rows[0].get("prompt_version") if out.rows else None
    return _judged_result("judge", out.rows, out.mode, out.judge_model, by, inputs,
                          backend_obj, version, prices=(config.price_prompt_per_mtok,
                                                        config.price_completion_per_mtok))


def run(data: Any, *, kb: str | Path, lang: str | None = None, embedder: str = "auto",
        top_k: int = 10, reranker: str = "yesno", reranker_url: str | None = None,
        reranker_model: str | None = None, reranker_api: str = "vllm",
        rerank_threshold: float = 0.1, max_context: int = 6, limit: int | None = None,
        reader_max_tokens: int = 128, strategy: str = "llm", prompt_file: str | None = None,
        scoring: str = "auto", repeats: int = 1, temperature: float | None = None,
        seed: int = 0, grader: str | None = None, backend: Any = None, store: Any = None,
        replay: bool = False, dry_run: bool = False, progress: bool | None = None,
        on_progress: Any = None) -> Result:
    """RAGaliq's RAG pipeline on one language: embed ``kb`` (one chunk per line) offline,
    retrieve ``top_k``, rerank, keep reranker score > ``rerank_threshold``, pass at most
    ``max_context`` chunks to the reader (``backend``), judge, and RAGaliq's table.

    ``data``: the questions with reference answers (RAGaliq's ``questions_<lang>.json``, or
    rows with ``question`` and ``answer``).  ``reranker``: ``yesno`` (the reader backend's
    P(yes) that a chunk is relevant), ``endpoint`` (an HTTP /rerank endpoint at
    ``reranker_url``), or ``none``.  Each answer gets a ``language_consistency_score``.
    The summary names the embedder, reranker, reader and judge under ``pipeline``.
    """
    from ragmeter.errors import InputError
    from ragmeter.io import is_path
    from ragmeter.rubric._orchestrate import JudgeOptions, run_pipeline
    from ragmeter.rubric._pipeline import detect_lang
    from ragmeter.rubric._rerank import RetrievalShape

    if not is_path(kb):
        raise InputError("kb must be the path of the knowledge base (one chunk per line).",
                         component=COMPONENT, field="kb")
    shape = RetrievalShape(top_k=top_k, reranker=reranker, rerank_threshold=rerank_threshold,
                           max_context=max_context, reranker_url=reranker_url,
                           reranker_model=reranker_model, reranker_api=reranker_api)
    options = JudgeOptions(strategy=strategy, prompt_file=prompt_file, scoring=scoring,
                           repeats=repeats, temperature=temperature, seed=seed,
                           grader_file=grader)
    backend_obj, the_store, config = model_context(backend, store, replay=replay,
                                                   progress=progress,
                                                   description="rubric run",
                                                   on_progress=on_progress)
    lang = lang or detect_lang(data) or "en"
    out = run_pipeline(kb, data, lang=lang, embedder=embedder, shape=shape, limit=limit,
                       reader_max_tokens=reader_max_tokens, judge=options,
                       backend=backend_obj, store=the_store, config=config, dry_run=dry_run)
    if out.estimate is not None:
        result = dry_run_result(COMPONENT, "run", out.estimate, step=out.estimate_step)
        result.dry_run_text = f"{out.estimate_step} {result.dry_run_text}"  # type: ignore[attr-defined]
        return result
    version = out.rows[0].get("prompt_version") if out.rows else None
    judge_model = out.pipeline.get("judge")
    prices = (config.price_prompt_per_mtok, config.price_completion_per_mtok)
    result = _judged_result(
        "run", out.rows, out.mode, str(judge_model) if judge_model else None, ("lang",),
        [input_record(data, len(out.rows)), input_record(str(kb))], backend_obj, version,
        extra={"pipeline": out.pipeline, "timing": out.timing,
               **({"run_notes": out.notes} if out.notes else {})},
        prices=prices)
    result.summary["spend_by_step"] = _spend_by_step(out.rows, prices)
    if out.reader_model and out.reader_model not in result.models:
        result.models.insert(0, out.reader_model)
    return result


def validate(data: Any, *, reference: Any, by: Sequence[str] = (), on: str = "auto",
             ci: bool = True, resamples: int = 1000, seed: int = 12345,
             fields: Fields = None) -> Result:
    """Agreement of a rubric judge's grades (``data``) with reference grades
    (``reference``: a path, a list of paths, or rows): exact and within-one agreement,
    quadratic-weighted kappa, MAE and Spearman, each with a 95% bootstrap CI, overall and
    per ``by`` group.  Rows pair by ``id`` (``on="id"``), by question text
    (``on="question"``), or ``auto``: id when every row of both sides has one.
    """
    from ragmeter.rubric._validate import ValidateConfig, validate_files

    config = ValidateConfig(by=tuple(by), on=on, ci=ci, n_resamples=resamples, seed=seed,
                            field_map=field_map(fields, COMPONENT))
    preds, refs = _sources(data), _sources(reference)
    detail = validate_files(preds, refs, config)
    return _score_result("validate", detail, [input_record(s) for s in (*preds, *refs)])


ajudge = async_variant(judge)
arun = async_variant(run)


def build(knowledge_base: Any = None, *, out: str | Path | None = None,
          critique_only: str | Path | None = None, chunking: str = "sections",
          chunk_size: int = 4000, min_chunk_chars: int = 50, sample: int | None = None,
          seed: int = 0, min_groundedness: int = 4, min_relevance: int = 4,
          min_standalone: int = 4, audience: str = "a reader of this knowledge base",
          dedupe: bool = True, languages: str | Sequence[str] | None = None,
          source_language: str = "en", translate_knowledge_base: bool = False,
          generation_prompt_file: str | Path | None = None,
          critique_prompt_files: Mapping[str, str | Path] | Sequence[str] | None = None,
          resamples: int = 1000, critique_scoring: str = "generate", backend: Any = None,
          store: Any = None, replay: bool = False, dry_run: bool = False,
          progress: bool | None = None) -> Result:
    """Build a question set from a knowledge base (RAGaliq's question generation): chunk,
    sample, generate one question and answer per chunk, critique each 1-5 for groundedness,
    relevance and standalone-ness, drop duplicates and questions below the thresholds,
    optionally translate (with a language check); or, with ``critique_only`` (a RAGaliq
    questions file), re-rate existing questions and measure agreement with the ratings they
    carry.

    ``knowledge_base``: a path or a list of paths (Markdown or text).  ``out``: where the kept
    questions go in RAGaliq's format (``.json`` list, else JSONL), with ``<out>_<lang>`` files
    beside it.  The result's ``items`` are every candidate (kept, dropped or unscored, with the
    reason); ``summary`` has the counts, per-criterion ratings, ``agreement`` (critique only),
    ``translation`` and the degenerate-critic alarms.  ``detail`` is the
    :class:`~ragmeter.rubric._build.BuildOutcome` (``questions``, ``translations``).
    """
    from ragmeter.rubric._build_api import estimate, make_config, make_prompts, run_build

    config = make_config(
        chunking=chunking, chunk_size=chunk_size, min_chunk_chars=min_chunk_chars,
        sample=sample, seed=seed, min_groundedness=min_groundedness,
        min_relevance=min_relevance, min_standalone=min_standalone, audience=audience,
        dedupe=dedupe, languages=languages, source_language=source_language,
        translate_knowledge_base=translate_knowledge_base, resamples=resamples,
        critique_scoring=critique_scoring)
    prompts = make_prompts(generation_prompt_file, critique_prompt_files)
    backend_obj, the_store, runner = model_context(backend, store, replay=replay,
                                                   progress=progress, description="build")
    kb = knowledge_base
    if dry_run:
        est = estimate(kb, critique_path=critique_only, config=config, prompts=prompts,
                       backend=backend_obj, store=the_store, runner=runner)
        summary = {"family": COMPONENT, "verb": "build", "dry_run": True, **est.to_dict(),
                   "coverage": {"rows": est.requests, "scored": 0, "unscored": est.requests,
                                "reasons": {"dry_run": 1}}}
        result = Result(COMPONENT, "build", summary, items=[])
        result.dry_run_text = est.render()  # type: ignore[attr-defined]
        return result
    outcome = run_build(kb, critique_path=critique_only, config=config, prompts=prompts,
                        backend=backend_obj, store=the_store, runner=runner, out=out)
    summary = outcome.summary
    summary["coverage"] = _with_rows(summary["coverage"])
    sources = [critique_only] if critique_only is not None else (
        [knowledge_base] if isinstance(knowledge_base, (str, Path)) else list(knowledge_base))
    from ragmeter.judges._card import judge_card

    model = str(summary.get("critic_model"))
    validation = None
    agree = summary.get("agreement") or {}
    if agree:
        parts = {k: v for k, v in agree.items() if v.get("qwk") is not None}
        if parts:
            name, a = next(iter(parts.items()))
            validation = {"metric": f"QWK with the original critic ({name})",
                          "value": a["qwk"], "ci": a.get("qwk_ci"),
                          "data": f"{Path(str(critique_only)).name}, n={a['n']}"}
    card = judge_card({"backend": backend_obj.identity().get("backend"), "model": model,
                       "prompt": summary.get("prompt_version")}, validation)
    from ragmeter.rubric._build import alarms

    return Result(COMPONENT, "build", summary, items=outcome.items, detail=outcome,
                  inputs=[input_record(s) for s in sources],
                  backends=[backend_obj.identity()], models=[model],
                  prompt_versions={"build": str(summary.get("prompt_version"))},
                  judges=[card], alarms=alarms(summary["criteria"]))


abuild = async_variant(build)
