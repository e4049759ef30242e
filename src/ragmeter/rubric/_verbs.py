"""Rubric judging (RAGaliq's 0–5 grades) from Python: ``score``, ``judge``, ``run``,
``validate``, ``build``.

::

    import ragmeter
    from ragmeter.rubric import JudgeOptions
    graded = ragmeter.rubric.judge(rows, judge=JudgeOptions(strategy="overlap"))  # no model
    ragmeter.rubric.score(graded.items, by=["lang"]).headline
    ragmeter.rubric.validate(graded.items, reference="eval_res_en.json").summary["metrics"]

``data`` is a path (JSONL, JSON, CSV/TSV, Parquet; RAGaliq's ``eval_res_*.json`` logs as they
are), a list of dicts, a pandas DataFrame or a pyarrow Table; ``score`` and ``validate`` also
take a list of paths.  Options are the CLI flags in snake_case with the same defaults,
grouped in typed option groups (:class:`JudgeOptions`, :class:`PipelineOptions`,
:class:`ChunkOptions`, :class:`CritiqueOptions`, :class:`TranslationOptions`,
:class:`ragmeter.RunOptions`) whose fields are also accepted as plain keywords;
``ragmeter rubric ...`` calls exactly these functions.  Every result carries a ``headline``
(:func:`ragmeter.rubric._metrics.headline`) and a signature.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter._verb._context import (
    async_variant,
    dry_run_result,
    field_map,
    input_record,
    model_context,
)
from ragmeter._verb._failure import check_run
from ragmeter._verb._options import RunOptions, gather, names
from ragmeter.errors import ConfigError
from ragmeter.rubric._options import (
    ChunkOptions,
    CritiqueOptions,
    JudgeOptions,
    PipelineOptions,
    TranslationOptions,
)

if TYPE_CHECKING:  # Result, the judges' card and the stats load after the first call (26.5)
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


def _score_result(verb: str, detail: Any, inputs: list[Any]) -> Result:
    from ragmeter.result import Result
    from ragmeter.rubric._metrics import headline

    summary = detail.to_json()
    summary["coverage"] = _with_rows(summary["coverage"])
    return Result(COMPONENT, verb, summary, items=detail.iter_items, detail=detail,
                  inputs=inputs, headline=headline(summary))


def score(data: Any, *, by: str | Sequence[str] = (), ci: bool = True, resamples: int = 1000,
          seed: int = 12345, fields: Fields = None) -> Result:
    """RAGaliq's table from graded answers: weighted score, mean/median grade, percentages,
    counts per grade, bootstrap CIs, judge stability when rows carry ``repeat``, and the mean
    ``language_consistency_score`` when rows have one.

    Rows need a ``score`` (0..5) or a judge ``reply`` (``... [RESULT] 4``).  ``by``: one row
    per value of these columns (RAGaliq log names give ``lang``, ``model_name``, ...).
    """
    from ragmeter.rubric._scorer import RubricConfig, score_files

    config = RubricConfig(by=names(by, "by", COMPONENT), ci=ci, n_resamples=resamples,
                          seed=seed,
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
                   by: str | Sequence[str], inputs: list[Any], backend_obj: Any,
                   prompt_version: str | None, extra: Mapping[str, Any] | None = None,
                   prices: tuple[Any, Any] | None = None,
                   settings: Mapping[str, Any] | None = None,
                   engine: str | None = None) -> Result:
    from ragmeter.result import Result
    from ragmeter.rubric._metrics import headline
    from ragmeter.rubric._scorer import RubricConfig, score_files

    by = names(by, "by", COMPONENT)
    detail = score_files([rows], RubricConfig(by=by))
    summary = detail.to_json()
    model_backend = None if mode.startswith("overlap") else backend_obj
    summary["signature"] = _signature(by, rows, judge_model, backend=model_backend,
                                      scoring=mode, judge_prompt=prompt_version,
                                      **(settings or {}))
    detail.signature = summary["signature"]  # the console prints the detail's
    if prices is not None:
        _add_spend(summary, rows, by, prices)
    summary["coverage"] = _with_rows(summary["coverage"])
    summary.update({"verb": verb, "method": mode, "judge": judge_model})
    summary.update(extra or {})
    from ragmeter.judges._card import check_validity

    card = _judge_card(mode, _judge_id(judge_model, model_backend), prompt_version)
    alarms = [a for a in (_alarm(rows, card["judge"]),
                          check_validity(card, what="rubric grade")) if a]
    identity = [backend_obj.identity()] if backend_obj is not None else []
    return check_run(Result(COMPONENT, verb, summary, items=rows, detail=detail, inputs=inputs,
                            backends=identity, models=[judge_model] if judge_model else [],
                            prompt_versions={"judge": prompt_version} if prompt_version
                            else None, judges=[card], alarms=alarms, engine=engine,
                            headline=headline({**summary, "alarms": alarms})),
                     f"rubric.{verb}")


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


def _signature(by: Sequence[str], rows: Sequence[Mapping[str, Any]], judge_model: str | None,
               backend: Any = None, **settings: Any) -> str:
    """The signature of a judged result: RAGaliq's table (its weights from the table), the
    judge (the rows' ``judge_model``, else the verb's judge, named with the ``backend`` that
    ran it) and what else shaped the grades."""
    from ragmeter.rubric._scorer import RubricConfig

    judges = [str(r["judge_model"]) for r in rows if r.get("judge_model")]
    if not judges and judge_model:
        judges = [judge_model]
    judges = [str(_judge_id(j, backend)) for j in judges]
    return RubricConfig(by=tuple(by)).signature(judges, settings).render()


def _judge_id(model: str | None, backend: Any) -> str | None:
    """``backend:model`` for a model judge run here (``openai:gpt-4o-mini``); ``model`` as
    given without a backend (grades read from a file) or when it already names one."""
    if backend is None or not model:
        return model
    from ragmeter.judges._card import model_id

    full = model_id(backend)
    return full if full.endswith(f":{model}") else model


def judge(data: Any, *, judge: JudgeOptions | None = None, by: str | Sequence[str] = (),
          fields: Fields = None, backend: Any = None, run: RunOptions | None = None,
          **options: Any) -> Result:
    """Grade answers 0–5 against their reference answers.

    ``judge``: :class:`JudgeOptions` (strategy, scoring, prompt, repeats ...).  Strategy
    ``llm`` grades with a judge model (``backend``, :func:`ragmeter.backends.local` by
    default; scoring ``choices`` reads the probabilities of "0".."5", ``generate`` parses the
    judge's text; ``prompt_file`` RAGaliq's ``judge_prompt.txt`` reproduces it); ``overlap``
    is ragmeter's offline grader, no model.  ``run``: :class:`ragmeter.RunOptions` (store,
    replay, dry run, progress).  Every field of both groups is also accepted as a keyword
    (``judge(rows, scoring="generate", store="s.sqlite")``).
    The result's ``items`` are the graded rows (what ``--out`` writes; feed them to
    :func:`score` or :func:`validate`); its summary is ``score``'s table over them, with the
    judge's card and the degenerate-judge alarm when it trips.
    """
    from ragmeter.rubric._judge import read_answers
    from ragmeter.rubric._orchestrate import judge_answers

    groups = gather("rubric.judge", options, judge=(JudgeOptions, judge), run=(RunOptions, run))
    how, calls = groups["judge"], groups["run"]
    answers = read_answers(data, field_map(fields, COMPONENT))
    if how.strategy == "overlap":
        out = judge_answers(answers, how)
        return _judged_result("judge", out.rows, out.mode, out.judge_model, by,
                              [input_record(data, len(answers))], None, None)
    backend_obj, the_store, config = model_context(backend, calls.store, replay=calls.replay,
                                                   progress=calls.progress, description="judge",
                                                   on_progress=calls.on_progress)
    out = judge_answers(answers, how, backend_obj, the_store, config, calls.dry_run)
    # the input's record (ragmeter.runs) after the calls, as generate's (issue 26.5)
    inputs = [input_record(data, len(answers))]
    from ragmeter.judges._card import model_id

    if out.estimate is not None:
        return dry_run_result(COMPONENT, "judge", out.estimate, signature=_signature(
            by, [], model_id(backend_obj), scoring=out.mode))
    version = out.rows[0].get("prompt_version") if out.rows else None
    return _judged_result("judge", out.rows, out.mode, out.judge_model, by, inputs,
                          backend_obj, version, prices=(config.price_prompt_per_mtok,
                                                        config.price_completion_per_mtok),
                          engine=config.engine_name)


def run(data: Any, *, kb: str | Path, lang: str | None = None, limit: int | None = None,
        pipeline: PipelineOptions | None = None, judge: JudgeOptions | None = None,
        backend: Any = None, run: RunOptions | None = None, **options: Any) -> Result:
    """RAGaliq's RAG pipeline: embed ``kb`` (one chunk per line), retrieve, rerank, keep the
    chunks above the threshold, pass the best to the reader (``backend``), judge, and
    RAGaliq's table.

    ``data``: the questions with reference answers (RAGaliq's ``questions_<lang>.json``, or
    rows with ``question`` and ``answer``); ``lang``: their language (default: from the file
    name, else en), or ``"all"`` (RAGaliq's six: en, de, fr, es, ru, zh) or a list such as
    ``"en,de"``: every language in one run and one table, ``data`` and ``kb`` then naming each
    language's files with ``{lang}`` (``questions_{lang}.json``) or by RAGaliq's names
    (``questions_en.json`` stands for ``questions_<lang>.json``).  ``limit``: the first N
    questions (of each language).  ``pipeline``: :class:`PipelineOptions` (embedder,
    ``top_k``, reranker, ``rerank_threshold``, ``max_context``, ``reader_max_tokens``,
    ``reader_config``; defaults RAGaliq's); ``judge``: :class:`JudgeOptions`; ``run``:
    :class:`ragmeter.RunOptions`.  Every field of the groups is also accepted as a keyword
    (``run(q, kb=..., top_k=5, scoring="generate")``).  Each answer gets a
    ``language_consistency_score``.  The summary names the embedder, reranker, reader (and its
    sampling parameters) and judge under ``pipeline``.
    """
    from ragmeter.errors import InputError
    from ragmeter.io import is_path
    from ragmeter.rubric._orchestrate import run_pipeline
    from ragmeter.rubric._pipeline import detect_lang, reader_params
    from ragmeter.rubric._rerank import RetrievalShape

    groups = gather("rubric.run", options, pipeline=(PipelineOptions, pipeline),
                    judge=(JudgeOptions, judge), run=(RunOptions, run))
    steps, how, calls = groups["pipeline"], groups["judge"], groups["run"]
    if not is_path(kb):
        raise InputError("kb must be the path of the knowledge base (one chunk per line).",
                         component=COMPONENT, field="kb")
    shape = RetrievalShape(top_k=steps.top_k, reranker=steps.reranker,
                           rerank_threshold=steps.rerank_threshold,
                           max_context=steps.max_context, reranker_url=steps.reranker_url,
                           reranker_model=steps.reranker_model,
                           reranker_api=steps.reranker_api)
    sampling = reader_params(steps.reader_config)
    jobs: list[tuple[str, Any, Any]] = _language_jobs(data, kb, lang, steps.embedder) or [
        (lang or detect_lang(data) or "en", data, kb)]
    backend_obj, the_store, config = model_context(backend, calls.store, replay=calls.replay,
                                                   progress=calls.progress,
                                                   description="rubric run",
                                                   on_progress=calls.on_progress)
    outs = [run_pipeline(k, q, lang=code, embedder=steps.embedder, shape=shape, limit=limit,
                         reader_max_tokens=steps.reader_max_tokens, judge=how,
                         backend=backend_obj, store=the_store, config=config,
                         dry_run=calls.dry_run, embedder_url=steps.embedder_url,
                         embedder_model=steps.embedder_model, reader_params=sampling)
            for code, q, k in jobs]
    out = outs[0] if len(outs) == 1 else _combine([c for c, _, _ in jobs], outs)
    if out.estimate is not None:
        judge_name = out.reader_model if how.strategy == "llm" else how.strategy
        result = dry_run_result(COMPONENT, "run", out.estimate, step=out.estimate_step,
                                signature=_signature(("lang",), [], judge_name,
                                                     backend=backend_obj
                                                     if how.strategy == "llm" else None,
                                                     scoring=out.mode, **_pipeline_settings(
                                                         {**out.pipeline,
                                                          "reader": out.reader_model})))
        result.dry_run_text = f"{out.estimate_step} {result.dry_run_text}"  # type: ignore[attr-defined]
        return result
    version = out.rows[0].get("prompt_version") if out.rows else None
    judge_model = out.pipeline.get("judge")
    prices = (config.price_prompt_per_mtok, config.price_completion_per_mtok)
    inputs = [input_record(data, len(out.rows)), input_record(str(kb))]
    if len(jobs) > 1:
        inputs = [r for code, q, k in jobs for r in (
            input_record(q, sum(1 for row in out.rows if row.get("lang") == code)),
            input_record(str(k)))]
    result = _judged_result(
        "run", out.rows, out.mode, str(judge_model) if judge_model else None, ("lang",),
        inputs, backend_obj, version,
        extra={"pipeline": out.pipeline, "timing": out.timing,
               **({"run_notes": out.notes} if out.notes else {})},
        prices=prices, settings=_pipeline_settings(out.pipeline), engine=config.engine_name)
    result.summary["spend_by_step"] = _spend_by_step(out.rows, prices)
    if out.reader_model and out.reader_model not in result.models:
        result.models.insert(0, out.reader_model)
    return result


def _languages(lang: str | None) -> list[str] | None:
    """``all`` -> RAGaliq's six languages; ``en,de`` -> those; one code or None -> None."""
    from ragmeter.rubric._orchestrate import RAGALIQ_LANGUAGES

    if lang is None:
        return None
    if lang.strip().lower() == "all":
        return list(RAGALIQ_LANGUAGES)
    codes = [c.strip() for c in lang.split(",") if c.strip()]
    if len(codes) < 2:
        return None
    if len(set(codes)) != len(codes):
        raise ConfigError(f"rubric: lang={lang!r} names a language twice.")
    return codes


def _for_lang(path: Any, code: str, what: str) -> str:
    """The file of language ``code``: ``{lang}`` in ``path`` replaced, or RAGaliq's
    ``<name>_<lang>.<ext>`` with its language replaced."""
    import re

    from ragmeter.io import is_path

    if not is_path(path):
        raise ConfigError(f"rubric: a run over several languages reads each language's {what} "
                          "from a file: give a path with {lang} (questions_{lang}.json).")
    text = str(path)
    if "{lang}" in text:
        return text.replace("{lang}", code)
    name = Path(text).name
    m = re.fullmatch(r"(.+_)([a-z]{2})(\.[A-Za-z0-9]+)", name)
    if m is None:
        raise ConfigError(f"rubric: cannot tell which {what} file holds each language from "
                          f"{name!r}. Fix: write {{lang}} where the language goes, e.g. "
                          f"{what}_{{lang}}.json, or use RAGaliq's names (questions_en.json, "
                          "orientation_en.md).")
    return str(Path(text).with_name(f"{m.group(1)}{code}{m.group(3)}"))


def _language_jobs(data: Any, kb: Any, lang: str | None, embedder: str
                   ) -> list[tuple[str, str, str]] | None:
    """``(lang, questions, kb)`` per language of a run over several; None for one language.
    Every file is checked to exist, and the embedder to fit every language, before anything
    runs."""
    from ragmeter.rubric._orchestrate import _embedder_name

    codes = _languages(lang)
    if codes is None:
        return None
    jobs = [(code, _for_lang(data, code, "questions"), _for_lang(kb, code, "kb"))
            for code in codes]
    missing = [f"{code}: {p}" for code, q, k in jobs for p in (q, k) if not Path(p).is_file()]
    if missing:
        raise ConfigError(f"rubric: lang={lang!r} needs every language's questions and "
                          f"knowledge base; missing: {'; '.join(missing[:6])}. Fix: give "
                          "those files, or name the languages you have (e.g. lang='en,de').")
    for code in codes:
        _embedder_name(embedder, code)
    return jobs


def _combine(codes: Sequence[str], outs: Sequence[Any]) -> Any:
    """One pipeline output of several languages' (rows in language order; a dry run's
    estimates added up; timings per language and in total)."""
    from dataclasses import replace

    first = outs[0]
    pipeline = {**first.pipeline, "languages": list(codes)}
    if first.estimate is not None:
        from ragmeter.runner._run import DryRunEstimate

        total = DryRunEstimate.total([o.estimate for o in outs])
        return replace(first, pipeline=pipeline, estimate=total,
                       estimate_step=f"{first.estimate_step} x {len(codes)} languages")
    timing: dict[str, Any] = {}
    for key in ("questions", "chunks", "embed_s", "rerank_s", "read_s", "judge_s"):
        timing[key] = round(sum(o.timing.get(key) or 0 for o in outs), 2)
    timing["by_lang"] = {code: o.timing for code, o in zip(codes, outs, strict=True)}
    return replace(first, rows=[r for o in outs for r in o.rows], pipeline=pipeline,
                   timing=timing,
                   notes=[f"{code}: {n}" for code, o in zip(codes, outs, strict=True)
                          for n in o.notes])


def _pipeline_settings(pipeline: Mapping[str, Any]) -> dict[str, Any]:
    """What in ``rubric run``'s pipeline shapes the answers, for its signature."""
    keys = ("reader", "embedder", "reranker", "top_k", "rerank_threshold", "max_context")
    out = {k: pipeline[k] for k in keys if pipeline.get(k) is not None}
    if pipeline.get("reader_params"):
        import json

        out["reader_params"] = json.dumps(pipeline["reader_params"], sort_keys=True,
                                          separators=(",", ":"))
    return out


def validate(data: Any, *, reference: Any, by: str | Sequence[str] = (), on: str = "auto",
             ci: bool = True, resamples: int = 1000, seed: int = 12345,
             fields: Fields = None) -> Result:
    """Agreement of a rubric judge's grades (``data``) with reference grades
    (``reference``: a path, a list of paths, or rows): exact and within-one agreement,
    quadratic-weighted kappa, MAE and Spearman, each with a 95% bootstrap CI, overall and
    per ``by`` group.  Rows pair by ``id`` (``on="id"``), by question text
    (``on="question"``), or ``auto``: id when every row of both sides has one.
    """
    from ragmeter.rubric._validate import ValidateConfig, validate_files

    config = ValidateConfig(by=names(by, "by", COMPONENT), on=on, ci=ci,
                            n_resamples=resamples, seed=seed,
                            field_map=field_map(fields, COMPONENT))
    preds, refs = _sources(data), _sources(reference)
    detail = validate_files(preds, refs, config)
    return _score_result("validate", detail, [input_record(s) for s in (*preds, *refs)])


ajudge = async_variant(judge)
arun = async_variant(run)


def build(knowledge_base: Any = None, *, out: str | Path | None = None,
          critique_only: str | Path | None = None, chunks: ChunkOptions | None = None,
          critique: CritiqueOptions | None = None,
          translation: TranslationOptions | None = None, backend: Any = None,
          run: RunOptions | None = None, **options: Any) -> Result:
    """Build a question set from a knowledge base (RAGaliq's question generation): chunk,
    sample, generate one question and answer per chunk, critique each 1-5 for groundedness,
    relevance and standalone-ness, drop duplicates and questions below the thresholds,
    optionally translate (with a language check); or, with ``critique_only`` (a RAGaliq
    questions file), re-rate existing questions and measure agreement with the ratings they
    carry.

    ``knowledge_base``: a path or a list of paths (Markdown or text).  ``out``: where the kept
    questions go in RAGaliq's format (``.json`` list, else JSONL), with ``<out>_<lang>`` files
    beside it.  ``chunks``: :class:`ChunkOptions`; ``critique``: :class:`CritiqueOptions`
    (thresholds, audience, prompts, scoring); ``translation``: :class:`TranslationOptions`;
    ``run``: :class:`ragmeter.RunOptions`.  Every field of the groups is also accepted as a
    keyword (``build("kb.md", sample=20, dry_run=True)``).  The result's ``items`` are every
    candidate (kept, dropped or unscored, with the reason); ``summary`` has the counts,
    per-criterion ratings, ``agreement`` (critique only), ``translation`` and the
    degenerate-critic alarms.  ``detail`` is the :class:`~ragmeter.rubric._build.BuildOutcome`
    (``questions``, ``translations``).

    Raises :class:`BuildFailedError` (``.result`` holds the result) when the build generated
    no question (the model wrote none that could be read, every generation call failed, or no
    chunk was long enough); then ``out`` is not written.  A build whose questions were all
    dropped by the critics returns normally (``summary["kept"] == 0``).
    """
    from ragmeter.io import as_paths
    from ragmeter.judges._card import judge_card, model_id
    from ragmeter.result import Result
    from ragmeter.rubric._build import alarms, build_failure
    from ragmeter.rubric._build_api import estimate, make_config, make_prompts, run_build
    from ragmeter.rubric._errors import BuildFailedError
    from ragmeter.rubric._metrics import headline

    kb = as_paths(knowledge_base, "knowledge_base", COMPONENT, what="Markdown or text files")
    groups = gather("rubric.build", options, chunks=(ChunkOptions, chunks),
                    critique=(CritiqueOptions, critique),
                    translation=(TranslationOptions, translation), run=(RunOptions, run))
    calls = groups["run"]
    config = make_config(groups["chunks"], groups["critique"], groups["translation"])
    prompts = make_prompts(groups["critique"].generation_prompt_file,
                           groups["critique"].critique_prompt_files)
    backend_obj, the_store, runner = model_context(backend, calls.store, replay=calls.replay,
                                                   progress=calls.progress, description="build",
                                                   on_progress=calls.on_progress)
    if calls.dry_run:
        est = estimate(kb, critique_path=critique_only, config=config, prompts=prompts,
                       backend=backend_obj, store=the_store, runner=runner)
        summary = {"family": COMPONENT, "verb": "build", "dry_run": True,
                   "signature": config.signature(prompts, model_id(backend_obj)),
                   **est.to_dict(),
                   "coverage": {"rows": est.requests, "scored": 0, "unscored": est.requests,
                                "reasons": {"dry_run": 1}}}
        result = Result(COMPONENT, "build", summary, items=[], headline=[])
        result.dry_run_text = est.render()  # type: ignore[attr-defined]
        return result
    outcome = run_build(kb, critique_path=critique_only, config=config, prompts=prompts,
                        backend=backend_obj, store=the_store, runner=runner, out=out)
    summary = outcome.summary
    summary["coverage"] = _with_rows(summary["coverage"])
    sources = [critique_only] if critique_only is not None else kb
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
    result = Result(COMPONENT, "build", summary, items=outcome.items, detail=outcome,
                    inputs=[input_record(s) for s in sources],
                    backends=[backend_obj.identity()], models=[model],
                    prompt_versions={"build": str(summary.get("prompt_version"))},
                    judges=[card], alarms=alarms(summary["criteria"]),
                    headline=headline(summary))
    failure = build_failure(summary)
    if failure is not None:
        raise BuildFailedError(failure[0], failure[1], result)
    return result


abuild = async_variant(build)
