"""Multilingual QA (LBRAG) from Python: ``score`` answers, ``judge`` them for a semantic score.

::

    import ragmeter
    result = ragmeter.multilingual.score(df, output=ragmeter.OutputOptions(ci=True))
    result.summary["metrics"]["lbrag"]["f1"]; result.to_pandas()

``data`` is a path (JSONL, JSON, CSV/TSV, Parquet), a list of dicts, a pandas DataFrame or a
pyarrow Table, with one row per (system, sample): ``sample_id``, ``sample_lang``, ``system``,
``gold_answer``, ``pred_answer`` and optional ``translate_tokens``/``evidence``,
``semantic_score``, ``question``.  Options are the CLI flags in snake_case with the same
defaults: those that define the measurement as keywords, the others in typed groups
(:class:`JudgeOptions`, ``ragmeter.RunOptions``, ``OutputOptions``, ``EngineOptions``), whose
fields are also accepted as plain keywords.  ``ragmeter multilingual score`` and ``judge``
call exactly these functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragmeter._verb._context import (
    async_variant,
    dry_run_result,
    field_map,
    input_record,
    model_context,
    offline_dry_run,
)
from ragmeter._verb._failure import check_run
from ragmeter._verb._options import EngineOptions, OutputOptions, RunOptions, gather
from ragmeter.multilingual._options import JudgeOptions
from ragmeter.multilingual._rows import ALIASES

if TYPE_CHECKING:  # the summary's modules load after the first call (issue 26.5)
    from ragmeter.result import Result

__all__ = ["score", "judge", "ajudge"]

COMPONENT = "multilingual"


def score(data: Any, *, baseline: str | None = None, normalize: str = "lbrag",
          rlc_lid: bool = False, paired: bool = False,
          fields: Mapping[str, str] | Iterable[str] | None = None, keep_text: bool = True,
          output: OutputOptions | None = None, engine: EngineOptions | str | None = None,
          **options: Any) -> Result:
    """EM, F1, RLC, RLC_OK, cost, CNBE and semantic score per system, exactly as LBRAG.

    ``baseline``: the system CNBE and paired tests compare against (default ``direct``, skipped
    with a note when absent; naming one that is absent is an error).  ``normalize``: ``lbrag``
    (LBRAG's normalization, keeps articles; the default) or ``squad`` (SQuAD v1.1's: drops
    punctuation and a/an/the); the signature says which ran.  ``rlc_lid``: language-ID RLC
    (needs ``ragmeter[lang]``).  ``paired``: paired tests against the baseline.
    ``fields``: your column names, ``{"pred_answer": "answer"}``.  ``keep_text``: keep
    question/gold/prediction in the items (off saves memory on huge files).
    ``gold_answer`` may be a list: EM and F1 are then the max over the golds (SQuAD's rule).

    ``output`` (:class:`ragmeter.OutputOptions`): ``ci`` (95% bootstrap intervals),
    ``resamples`` and ``seed`` (of the bootstrap and the paired tests), ``by`` (also score each
    group of rows sharing this field's value, ``sample_lang`` or any column such as
    ``dataset``, with the same settings: ``summary["groups"]``).
    ``engine`` (:class:`ragmeter.EngineOptions`): ``engine="ray"``: ``data`` is a Parquet
    file, a folder of them or a glob; the per-row work runs on Ray (``ray_address``: a
    cluster, else Ray on this machine; ``ray_workers`` workers of ``ray_cpus_per_worker`` CPUs
    each) and the numbers equal one process on the files concatenated in sorted order
    (docs/scale.md); the signature says ``engine:ray``.
    The groups' fields are also accepted as plain keywords (``score(df, ci=True)``).
    """
    if isinstance(engine, str):  # the plain keyword of earlier releases: engine="ray"
        options = {**options, "engine": engine}
        engine = None
    chosen = gather("multilingual.score", options, output=(OutputOptions, output),
                    engine=(EngineOptions, engine))
    out: OutputOptions = chosen["output"]
    eng: EngineOptions = chosen["engine"]
    ci, resamples, seed, by = out.ci, out.resamples, out.seed, out.by
    from ragmeter.errors import ConfigError

    if normalize not in ("lbrag", "squad"):
        raise ConfigError(f"multilingual: normalize={normalize!r}; expected lbrag or squad.")
    from ragmeter.io import is_path, iter_rows, rereadable
    from ragmeter.multilingual._metrics import headline
    from ragmeter.multilingual._score import score_file, score_rows

    if by:
        data = rereadable(data)  # read again for the groups (issue 29.9)
    from ragmeter.multilingual._scorer import MultilingualConfig

    config = MultilingualConfig(
        keep_text=keep_text, baseline=baseline or "direct", baseline_required=baseline is not None,
        ci=ci, paired=paired, rlc_lid=rlc_lid, n_resamples=resamples, seed=seed,
        field_map=field_map(fields, COMPONENT, aliases=ALIASES), normalize=normalize)
    if eng.engine not in ("local", "ray"):
        raise ConfigError(f"multilingual: engine={eng.engine!r}; expected local or ray.")
    if eng.engine == "ray":
        if not is_path(data):
            raise ConfigError("multilingual: engine='ray' scores Parquet files (a file, folder "
                              "or glob).")
        from ragmeter.multilingual._distributed import parquet_files, score_parquet_on_ray

        detail, groups = score_parquet_on_ray(
            data, config, address=eng.ray_address, workers=eng.ray_workers,
            cpus_per_worker=eng.ray_cpus_per_worker, by=_by_field(by) if by else None)
        detail.signature = f"{detail.signature}|engine:ray"  # the console shows it too
        summary = detail.to_json()
        if groups is not None:
            summary["groups"] = groups
        from ragmeter.result import Result  # loaded on use (issue 26.5)

        return Result(COMPONENT, "score", summary, items=detail.iter_items,
                      ordered_items=detail.ordered_items, detail=detail,
                      item_columns=detail.item_columns, engine="ray",
                      inputs=[input_record(f) for f in parquet_files(data)],
                      headline=headline(summary, detail.rows_by_system()))
    if is_path(data):
        from pathlib import Path

        if Path(data).is_dir():
            raise ConfigError(f"multilingual: {data} is a folder; one process scores one file. "
                              "Fix: name a file, or score a folder of Parquet files with "
                              "--engine ray (engine='ray').")
        detail = score_file(data, config)
    else:
        from ragmeter.io import source_label

        detail = score_rows(iter_rows(data, component=COMPONENT, field_map=config.field_map),
                            config, source=source_label(data))
    summary = detail.to_json()
    if by:
        summary["groups"] = _score_groups(data, by, config)
    from ragmeter.result import Result  # loaded on use (issue 26.5)

    return Result(COMPONENT, "score", summary, items=detail.iter_items,
                  ordered_items=detail.ordered_items, detail=detail,
                  item_columns=detail.item_columns,
                  inputs=[input_record(data, detail.coverage.get("rows"))],
                  headline=headline(summary, detail.rows_by_system()))


def _score_groups(data: Any, by: str, config: Any) -> dict[str, Any]:
    """Each group of rows with the same ``by`` value scored on its own (same config)."""
    from ragmeter.io import iter_rows, require, source_label
    from ragmeter.multilingual._aggregate import group_summary
    from ragmeter.multilingual._score import score_rows

    field = _by_field(by)
    groups: dict[str, list[Any]] = {}
    for row in iter_rows(data, component=COMPONENT, field_map=config.field_map):
        value = require(row, field, component=COMPONENT)
        key = "" if value is None else str(value)
        if field == "sample_lang":
            from ragmeter.text._languages import canonical_language

            key = canonical_language(key)
        groups.setdefault(key, []).append(row)
    out: dict[str, Any] = {}
    for key in sorted(groups):
        out[key] = group_summary(score_rows(groups[key], config,
                                            source=source_label(data)).to_json())
    return {"by": field, "values": out}


def _by_field(by: str) -> str:
    """The field ``by`` names (``lang`` is ``sample_lang``)."""
    return "sample_lang" if by == "lang" else by


def judge(data: Any, *, fields: Mapping[str, str] | Iterable[str] | None = None,
          judge: JudgeOptions | None = None, backend: Any = None,
          run: RunOptions | None = None, output: OutputOptions | None = None,
          **options: Any) -> Result:
    """Add LBRAG's 0–1 ``semantic_score`` to each answer, with ragmeter's fitted semantic
    score (no model) or a judge model; validate it when the data carries reference scores.

    ``judge`` (:class:`JudgeOptions`): ``scoring`` ``fitted`` (ragmeter's fitted semantic
    score: lexical, numeric and script features, no model call; ``model_file``: your own file
    from :func:`fit`), ``generate`` (the judge model writes ``{"score", "explanation"}``, LBRAG's
    way), ``choices`` (P(yes) of a yes/no question from logits/logprobs) or ``auto`` (fitted
    for the local backend, generate for others); ``repeats``: judge every answer N times
    (distinct samples; the fitted score is deterministic); the score is the mean over the
    scored repeats and ``summary["stability"]`` holds the flip rate, the per-item agreement
    and Fleiss' κ over the verdicts rounded to 0.1.  ``reference_field``: the column of
    reference 0-1 semantic scores (default: ``semantic_score`` when the data has it, as
    LBRAG's released runs do): the judge's agreement with them (AUROC at reference >= 0.5,
    Spearman, MAE, bootstrap 95% CIs) goes to ``summary["judges"][<judge name>]`` and the
    headline, each row keeps its reference as ``semantic_reference``, and a judge at or
    below chance on it is flagged.  ``backend``: :func:`ragmeter.backends.local` (default)
    or ``.openai(...)``.  ``run`` (:class:`ragmeter.RunOptions`): the store, replay, dry run,
    progress.  ``output`` (:class:`ragmeter.OutputOptions`): ``by``: the mean semantic score,
    coverage, stability, agreement and spend per group of rows sharing this field (``lang`` =
    ``sample_lang``, ``system``, any column); ``resamples``/``seed`` of the bootstrap 95% CIs.
    The groups' fields are also accepted as plain keywords
    (``judge(df, scoring="generate", dry_run=True)``).
    A failed or unparseable judgement leaves ``semantic_score`` None with ``semantic_reason``.
    The result's ``items`` are the input rows with the semantic columns added: feed them to
    :func:`score`.  ``summary["spend"]``: tokens and money of the judge's calls
    (``semantic_usage`` per row); the signature names the judge.  The judge card carries the
    judge's known validation; a judge whose validation is at or below chance (or whose
    verdicts do not vary) is flagged in ``alarms`` and the headline.
    """
    from ragmeter.io import as_text, iter_rows, require
    from ragmeter.judges._card import check_degenerate, check_validity
    from ragmeter.judges._repeats import check_repeats
    from ragmeter.judges._spend import add_usage, spend
    from ragmeter.judges._types import Answer
    from ragmeter.multilingual._metrics import judge_headline
    from ragmeter.multilingual._reference import (
        THRESHOLD,
        agreement,
        reference_field_of,
        reference_scores,
    )

    chosen = gather("multilingual.judge", options, judge=(JudgeOptions, judge),
                    run=(RunOptions, run), output=(OutputOptions, output))
    how: JudgeOptions = chosen["judge"]
    calls: RunOptions = chosen["run"]
    shown: OutputOptions = chosen["output"]
    scoring, repeats, by = how.scoring, how.repeats, shown.by
    bootstrap = (shown.resamples, shown.seed)
    fm = field_map(fields, COMPONENT, aliases=ALIASES)
    raw_rows = list(iter_rows(data, component=COMPONENT, field_map=fm))
    answers = []
    for i, row in enumerate(raw_rows):
        q = row.data.get("question")
        gold = require(row, "gold_answer", component=COMPONENT, field_map=fm)
        pred = require(row, "pred_answer", component=COMPONENT, field_map=fm)
        answers.append(Answer(
            id=str(i), question=as_text(row, "question", q, component=COMPONENT,
                                        allow_none=True),
            reference=as_text(row, "gold_answer", gold, component=COMPONENT),
            response=None if pred is None else as_text(row, "pred_answer", pred,
                                                       component=COMPONENT),
            extra={"sample_lang": str(row.data.get("sample_lang", ""))}))
    ref_field = reference_field_of(raw_rows, how.reference_field, data)
    references = reference_scores(raw_rows, ref_field) if ref_field else None
    check_repeats(repeats, COMPONENT)
    from ragmeter.backends import resolve, scores_choices

    chosen_backend = resolve(backend)
    mode = scoring if scoring != "auto" else ("fitted" if scores_choices(chosen_backend)
                                              else "generate")
    if mode not in ("fitted", "choices", "generate"):
        from ragmeter.errors import ConfigError

        raise ConfigError(f"multilingual: scoring={scoring!r}; expected auto, fitted, choices "
                          "or generate.")
    if how.model_file is not None and mode != "fitted":
        from ragmeter.errors import ConfigError

        raise ConfigError(f"multilingual: model_file={how.model_file!r} is a fitted semantic judge's "
                          f"file, and scoring is {mode!r}. Fix: scoring='fitted' "
                          "(--scoring fitted), or leave model_file out.")
    judged = (_fitted_judgement(answers, how.model_file, repeats, bootstrap, calls.dry_run)
              if mode == "fitted" else
              _model_judgement(answers, chosen_backend, calls, mode, repeats, bootstrap))
    if judged.dry_run is not None:
        return judged.dry_run
    record = input_record(data, len(raw_rows))  # ragmeter.runs: after the calls (issue 26.5)
    sem = judged.rows
    merged = []
    for i, (row, s) in enumerate(zip(raw_rows, sem, strict=True)):
        out = dict(row.data)
        out.update({k: v for k, v in s.items() if k not in ("id", "sample_lang")})
        out["semantic_usage"] = judged.usage[i]
        if references is not None:
            out["semantic_reference"] = references[i]
        merged.append(out)
    reasons: dict[str, int] = {}
    for s in sem:
        if s["semantic_score"] is None:
            reasons[s["semantic_reason"]] = reasons.get(s["semantic_reason"], 0) + 1
    scored = sum(1 for s in sem if s["semantic_score"] is not None)
    values = [s["semantic_score"] for s in sem]
    card = judged.card
    alarms = [a for a in (
        check_degenerate([None if v is None else round(float(v), 1) for v in values],
                         judge=judged.name, what="semantic score",
                         probabilities=values if mode == "choices" else None),
        check_validity(card, what="semantic score")) if a]
    summary: dict[str, Any] = {
        "family": COMPONENT, "verb": "judge", "signature": judged.signature,
        "judge": judged.model, "method": mode, "prompt_version": judged.prompt_version,
        "repeats": repeats,
        "coverage": {"rows": len(sem), "scored": scored, "unscored": len(sem) - scored,
                     "reasons": reasons},
    }
    if judged.stability is not None:
        summary["stability"] = judged.stability
    overall = _judge_block(merged, 1, bootstrap)
    summary["metrics"], summary["ci95"] = overall["metrics"], overall["ci95"]
    if references is not None and ref_field is not None:
        found = agreement(values, references, n_resamples=bootstrap[0], seed=bootstrap[1])
        summary["judges"] = {judged.name: found}
        summary["reference"] = {"field": ref_field, "threshold": THRESHOLD,
                                "rows": sum(1 for r in references if r is not None),
                                "scored": found["semantic_auroc"]["n"]}
        auroc = found["semantic_auroc"]
        measured = {"judge": judged.name, "validation": {
            "metric": f"AUROC at {ref_field} >= {THRESHOLD:g}", "statistic": "auroc",
            "value": auroc["value"], "ci": auroc["ci95"]}}
        alarm = check_validity(measured, what="semantic score",
                               measured_on=f"this data's reference scores ({ref_field})")
        if alarm:
            alarms.append(alarm)
        trained_on = judged.trained_on
        if trained_on and trained_on == record.sha256:
            summary["notes"] = [
                f"this file is the one {judged.model} was fitted on: the agreement above is "
                "in-sample; its held-out agreement (by language and by system) is on its "
                "judge card"]
    summary["spend"] = spend(add_usage(r["semantic_usage"] for r in merged), *judged.prices)
    if by:
        summary["groups"] = _judge_groups(merged, by, 1 if mode == "fitted" else repeats,
                                          judged.prices, bootstrap, references is not None)
    for out_row in merged:
        out_row.pop("_verdicts", None)
    from ragmeter.result import Result  # after the calls (issue 26.5)

    return check_run(Result(COMPONENT, "judge", summary, items=merged,
                            inputs=[record], backends=judged.backends,
                            models=[judged.model],
                            prompt_versions={"semantic": judged.prompt_version},
                            judges=[card], alarms=alarms, engine=judged.engine,
                            headline=judge_headline({**summary, "alarms": alarms})),
                     "multilingual.judge")


@dataclass
class _Judged:
    """What one way of judging produced, for :func:`judge` to assemble: per answer its
    semantic columns (``rows``) and usage, and the judge's identity."""

    rows: list[dict[str, Any]]
    usage: list[dict[str, int]]
    name: str  # the judge card's name
    model: str
    prompt_version: str
    signature: str
    card: dict[str, Any]
    backends: list[Any]
    prices: tuple[Any, Any] = (None, None)
    engine: str | None = None
    stability: dict[str, Any] | None = None
    dry_run: Result | None = None
    trained_on: str | None = None  # the SHA-256 of the file a fitted judge was fitted on


def _fitted_judgement(answers: list[Any], model_file: str | None, repeats: int,
                      bootstrap: tuple[int, int], dry_run: bool) -> _Judged:
    """Every answer scored by the fitted semantic score (no model call)."""
    from ragmeter.judges._card import judge_card
    from ragmeter.judges._repeats import deterministic_stability
    from ragmeter.judges._spend import usage_of
    from ragmeter.multilingual._metrics import judge_signature
    from ragmeter.multilingual._semantic_model import load_semantic_model

    fitted = load_semantic_model(model_file)
    name = f"{fitted.identity}:{fitted.prompt_version}"
    signature = judge_signature("ragmeter", fitted.name, "fitted", fitted.prompt_version,
                                repeats, bootstrap)
    judged = _Judged([], [], name, fitted.identity, fitted.prompt_version, signature,
                     judge_card(name, fitted.validation()), [],
                     stability=deterministic_stability(repeats, fitted.identity)
                     if repeats > 1 else None,
                     trained_on=((fitted.raw.get("provenance") or {}).get("data") or {})
                     .get("sha256"))
    if dry_run:
        judged.dry_run = offline_dry_run(
            COMPONENT, "judge", len(answers),
            f"{len(answers)} rows; the fitted semantic score makes no model call.",
            method="fitted", signature=signature)
        return judged
    present = [a for a in answers if a.response is not None]
    scores = dict(zip((a.id for a in present), fitted.score(
        [(a.reference, a.response, a.extra.get("sample_lang", "")) for a in present]),
        strict=True))
    for a in answers:
        row: dict[str, Any] = {"id": a.id, **a.extra, "semantic_judge": fitted.identity,
                               "semantic_prompt": fitted.prompt_version,
                               "semantic_method": "fitted"}
        if a.id in scores:
            row["semantic_score"] = scores[a.id]
        else:
            row.update(semantic_score=None, semantic_reason="missing_response")
        judged.rows.append(row)
        judged.usage.append(usage_of([]))
    return judged


def _model_judgement(answers: list[Any], chosen_backend: Any, calls: RunOptions, mode: str,
                     repeats: int, bootstrap: tuple[int, int]) -> _Judged:
    """Every answer judged by a model through the runner (``generate`` or ``choices``)."""
    from ragmeter._util._record import replace
    from ragmeter.judges._card import judge_card
    from ragmeter.judges._repeats import repeat_requests
    from ragmeter.judges._spend import usage_of
    from ragmeter.multilingual._metrics import judge_signature
    from ragmeter.multilingual._semantic import SemanticPrompt, semantic_requests, semantic_rows
    from ragmeter.runner._run import estimate_requests, run_requests

    backend_obj, the_store, config = model_context(chosen_backend, calls.store,
                                                   replay=calls.replay,
                                                   progress=calls.progress,
                                                   description="semantic judge",
                                                   on_progress=calls.on_progress)
    prompt = SemanticPrompt.default()
    identity = backend_obj.identity()
    model = str(identity.get("model", backend_obj.name))
    # the signature (ragmeter.signature) is made after the calls (issue 26.5)
    signing = (backend_obj.name, model, mode, prompt.version, repeats, bootstrap)
    name = f"{backend_obj.name}:{model}:semantic-{mode}:{prompt.version}"
    judged = _Judged([], [], name, model, prompt.version, "", judge_card(name),
                     [identity], prices=(config.price_prompt_per_mtok,
                                         config.price_completion_per_mtok),
                     engine=config.engine_name)
    # Repeats are distinct samples: their own cache keys, and a per-repeat seed for servers
    # that honour it (ragmeter.judges._repeats, shared by every judged verb).
    requests = repeat_requests(semantic_requests(answers, prompt, mode),  # type: ignore[arg-type]
                               repeats)
    if calls.dry_run:
        judged.signature = judge_signature(*signing)
        judged.dry_run = dry_run_result(COMPONENT, "judge", estimate_requests(
            requests, backend_obj, the_store, config), signature=judged.signature)
        return judged
    outcomes = run_requests(requests, backend_obj, the_store, config)
    judged.signature = judge_signature(*signing)
    per_repeat = []
    for k in range(repeats):
        mine = [replace(o, request=replace(o.request, id=o.request.id.rsplit("#", 1)[0]))
                for o in outcomes if o.request.repeat == k] if repeats > 1 else outcomes
        per_repeat.append(semantic_rows(answers, mine, mode, prompt, model))  # type: ignore[arg-type]
    judged.rows = per_repeat[0] if repeats == 1 else _mean_over_repeats(per_repeat)
    by_answer: dict[str, list[Any]] = {}
    for o in outcomes:
        by_answer.setdefault(o.request.id.rsplit("#", 1)[0], []).append(o)
    judged.usage = [usage_of(by_answer.get(a.id, [])) for a in answers]
    if repeats > 1:
        from ragmeter.stats._stability import repeat_agreement

        verdicts = {str(i): [None if rows[i]["semantic_score"] is None
                             else round(float(rows[i]["semantic_score"]), 1)
                             for rows in per_repeat] for i in range(len(answers))}
        judged.stability = repeat_agreement(verdicts, repeats)
        for k, row in enumerate(judged.rows):
            row["_verdicts"] = verdicts[str(k)]
    return judged


def _judge_groups(rows: list[dict[str, Any]], by: str, repeats: int,
                  prices: tuple[Any, Any], bootstrap: tuple[int, int],
                  validate: bool = False) -> dict[str, Any]:
    """``multilingual judge --by``: mean semantic score with a bootstrap 95% CI, coverage,
    stability (with repeats), agreement with the references (``validate``) and spend per
    group (:mod:`ragmeter._verb._groups`)."""
    from ragmeter._verb._groups import FieldLookup, grouped

    field = "sample_lang" if by == "lang" else by
    return grouped(by, rows, FieldLookup(field, COMPONENT),
                   lambda part: _judge_block(part, repeats, bootstrap, validate),
                   price_in=prices[0], price_out=prices[1],
                   usage_of=lambda r: r.get("semantic_usage"))


def _judge_block(part: list[dict[str, Any]], repeats: int,
                 bootstrap: tuple[int, int], validate: bool = False) -> dict[str, Any]:
    """Mean semantic score with a bootstrap 95% CI (``bootstrap``: resamples and seed) and
    coverage (and stability with repeats, the agreement with the rows' references with
    ``validate``) of some judged rows: the whole run's headline and each ``--by`` group's."""
    from ragmeter import stats
    from ragmeter.stats._stability import repeat_agreement

    values = [float(r["semantic_score"]) for r in part if r["semantic_score"] is not None]
    ci = stats.bootstrap_ci(values, n_resamples=bootstrap[0], seed=bootstrap[1]) \
        if values else None
    out: dict[str, Any] = {
        "metrics": {"semantic_score": stats.mean(values), "n": len(values)},
        "ci95": {"semantic_score": list(ci) if ci else None},
        "coverage": {"rows": len(part), "scored": len(values),
                     "unscored": len(part) - len(values),
                     "reasons": _reasons(part)}}
    if repeats > 1:
        out["stability"] = repeat_agreement(
            {str(k): r["_verdicts"] for k, r in enumerate(part)}, repeats)
    if validate:
        from ragmeter.multilingual._reference import agreement

        out["agreement"] = agreement([r["semantic_score"] for r in part],
                                     [r.get("semantic_reference") for r in part],
                                     n_resamples=bootstrap[0], seed=bootstrap[1])
    return out


def _reasons(rows: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        if r["semantic_score"] is None:
            key = str(r.get("semantic_reason") or "unscored")
            out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))


def _mean_over_repeats(per_repeat: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per answer: the first repeat's columns, the score averaged over scored repeats
    (None, with the first repeat's reason, when no repeat was scored)."""
    out = []
    for rows in zip(*per_repeat, strict=True):
        row = dict(rows[0])
        scores = [float(r["semantic_score"]) for r in rows if r["semantic_score"] is not None]
        row["semantic_score"] = sum(scores) / len(scores) if scores else None
        row["semantic_repeats_scored"] = len(scores)
        if scores:
            row.pop("semantic_reason", None)
        elif not row.get("semantic_reason"):
            row["semantic_reason"] = next((r.get("semantic_reason") for r in rows
                                           if r.get("semantic_reason")), "unscored")
        out.append(row)
    return out


ajudge = async_variant(judge)
