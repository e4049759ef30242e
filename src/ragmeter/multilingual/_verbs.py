"""Multilingual QA (LBRAG) from Python: ``score`` answers, ``judge`` them for a semantic score.

::

    import ragmeter
    result = ragmeter.multilingual.score(df, ci=True)      # df: a pandas DataFrame
    result.summary["metrics"]["lbrag"]["f1"]; result.to_pandas()

``data`` is a path (JSONL, JSON, CSV/TSV, Parquet), a list of dicts, a pandas DataFrame or a
pyarrow Table, with one row per (system, sample): ``sample_id``, ``sample_lang``, ``system``,
``gold_answer``, ``pred_answer`` and optional ``translate_tokens``/``evidence``,
``semantic_score``, ``question``.  Options are the CLI flags in snake_case with the same
defaults; ``ragmeter multilingual score`` calls exactly these functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ragmeter._verb._context import (
    async_variant,
    dry_run_result,
    field_map,
    input_record,
    model_context,
)
from ragmeter._verb._failure import check_run
from ragmeter.result import Result

__all__ = ["score", "judge", "ajudge"]

COMPONENT = "multilingual"


def score(data: Any, *, baseline: str | None = None, ci: bool = False, paired: bool = False,
          rlc_lid: bool = False, resamples: int = 1000, seed: int = 12345,
          fields: Mapping[str, str] | Iterable[str] | None = None,
          keep_text: bool = True, normalize: str = "lbrag", by: str | None = None,
          engine: str = "local", ray_address: str | None = None, ray_workers: int = 2,
          ray_cpus_per_worker: int = 1) -> Result:
    """EM, F1, RLC, RLC_OK, cost, CNBE and semantic score per system, exactly as LBRAG.

    ``baseline``: the system CNBE and paired tests compare against (default ``direct``, skipped
    with a note when absent; naming one that is absent is an error).  ``ci``: 95% bootstrap
    intervals; ``paired``: paired tests against the baseline; ``rlc_lid``: language-ID RLC
    (needs ``ragmeter[lang]``).  ``fields``: your column names, ``{"pred_answer": "answer"}``.
    ``keep_text``: keep question/gold/prediction in the items (off saves memory on huge files).
    ``normalize``: ``lbrag`` (LBRAG's normalization, keeps articles; the default) or ``squad``
    (SQuAD v1.1's: drops punctuation and a/an/the); the signature says which ran.
    ``gold_answer`` may be a list: EM and F1 are then the max over the golds (SQuAD's rule).
    ``by``: also score each group of rows sharing this field's value (``sample_lang``, or any
    column such as ``dataset``), with the same settings: ``summary["groups"]``.
    ``engine="ray"``: ``data`` is a Parquet file, a folder of them or a glob; the per-row work
    runs on Ray (``ray_address``: a cluster, else Ray on this machine; ``ray_workers``
    workers of ``ray_cpus_per_worker`` CPUs each) and the numbers equal one process on the files
    concatenated in sorted order (docs/scale.md); the signature says ``engine:ray``.
    """
    from ragmeter.errors import ConfigError

    if normalize not in ("lbrag", "squad"):
        raise ConfigError(f"multilingual: normalize={normalize!r}; expected lbrag or squad.")
    from ragmeter.io import is_path, iter_rows
    from ragmeter.multilingual._score import score_file, score_rows
    from ragmeter.multilingual._scorer import MultilingualConfig

    config = MultilingualConfig(
        keep_text=keep_text, baseline=baseline or "direct", baseline_required=baseline is not None,
        ci=ci, paired=paired, rlc_lid=rlc_lid, n_resamples=resamples, seed=seed,
        field_map=field_map(fields, COMPONENT), normalize=normalize)
    if engine not in ("local", "ray"):
        raise ConfigError(f"multilingual: engine={engine!r}; expected local or ray.")
    if engine == "ray":
        if not is_path(data):
            raise ConfigError("multilingual: engine='ray' scores Parquet files (a file, folder "
                              "or glob).")
        from ragmeter.multilingual._distributed import parquet_files, score_parquet_on_ray

        detail, groups = score_parquet_on_ray(
            data, config, address=ray_address, workers=ray_workers,
            cpus_per_worker=ray_cpus_per_worker, by=_by_field(by) if by else None)
        detail.signature = f"{detail.signature}|engine:ray"  # the console shows it too
        summary = detail.to_json()
        if groups is not None:
            summary["groups"] = groups
        return Result(COMPONENT, "score", summary, items=detail.iter_items,
                      ordered_items=detail.ordered_items, detail=detail,
                      item_columns=detail.item_columns, engine="ray",
                      inputs=[input_record(f) for f in parquet_files(data)])
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
    return Result(COMPONENT, "score", summary, items=detail.iter_items,
                  ordered_items=detail.ordered_items, detail=detail,
                  item_columns=detail.item_columns,
                  inputs=[input_record(data, detail.coverage.get("rows"))])


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


def judge(data: Any, *, scoring: str = "auto", backend: Any = None, store: Any = None,
          replay: bool = False, dry_run: bool = False, progress: bool | None = None,
          fields: Mapping[str, str] | Iterable[str] | None = None, repeats: int = 1,
          by: str | None = None, on_progress: Any = None) -> Result:
    """Add LBRAG's 0–1 ``semantic_score`` to each answer with a judge model.

    ``scoring``: ``generate`` (the judge writes ``{"score", "explanation"}``, LBRAG's way),
    ``choices`` (P(yes) of a yes/no question from logits/logprobs) or ``auto`` (choices when the
    backend declares choice scoring, as the local one does).  ``backend``: :func:`ragmeter.backends.local` (default) or ``.openai(...)``.
    A failed or unparseable judgement leaves ``semantic_score`` None with ``semantic_reason``.
    The result's ``items`` are the input rows with the semantic columns added: feed them to
    :func:`score`.  ``repeats``: judge every answer N times (distinct samples); the score is
    the mean over the scored repeats and ``summary["stability"]`` holds the flip rate, the
    per-item agreement and Fleiss' κ over the verdicts rounded to 0.1.  ``by``: the mean
    semantic score (bootstrap 95% CI), coverage, stability and spend per group of rows
    sharing this field (``lang`` = ``sample_lang``, ``system``, any column).
    ``summary["spend"]``: tokens and money of the judge's calls (``semantic_usage`` per row).
    """
    from dataclasses import replace

    from ragmeter.io import as_text, iter_rows, require
    from ragmeter.judges._card import check_degenerate, judge_card
    from ragmeter.judges._repeats import check_repeats, repeat_requests
    from ragmeter.judges._spend import add_usage, spend, usage_of
    from ragmeter.judges._types import Answer
    from ragmeter.multilingual._semantic import SemanticPrompt, semantic_requests, semantic_rows
    from ragmeter.runner._run import estimate_requests, run_requests

    fm = field_map(fields, COMPONENT)
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
    backend_obj, the_store, config = model_context(backend, store, replay=replay,
                                                   progress=progress,
                                                   description="semantic judge",
                                                   on_progress=on_progress)
    from ragmeter.backends import scores_choices

    mode = scoring if scoring != "auto" else ("choices" if scores_choices(backend_obj)
                                              else "generate")
    if mode not in ("choices", "generate"):
        from ragmeter.errors import ConfigError

        raise ConfigError(f"multilingual: scoring={scoring!r}; expected auto, choices or "
                          "generate.")
    check_repeats(repeats, COMPONENT)
    prompt = SemanticPrompt.default()
    # Repeats are distinct samples: their own cache keys, and a per-repeat seed for servers
    # that honour it (ragmeter.judges._repeats, shared by every judged verb).
    requests = repeat_requests(semantic_requests(answers, prompt, mode),  # type: ignore[arg-type]
                               repeats)
    if dry_run:
        return dry_run_result(COMPONENT, "judge", estimate_requests(requests, backend_obj,
                                                                    the_store, config))
    outcomes = run_requests(requests, backend_obj, the_store, config)
    identity = backend_obj.identity()
    model = str(identity.get("model", backend_obj.name))
    per_repeat = []
    for k in range(repeats):
        mine = [replace(o, request=replace(o.request, id=o.request.id.rsplit("#", 1)[0]))
                for o in outcomes if o.request.repeat == k] if repeats > 1 else outcomes
        per_repeat.append(semantic_rows(answers, mine, mode, prompt, model))  # type: ignore[arg-type]
    sem = per_repeat[0] if repeats == 1 else _mean_over_repeats(per_repeat)
    calls: dict[str, list[Any]] = {}
    for o in outcomes:
        calls.setdefault(o.request.id.rsplit("#", 1)[0], []).append(o)
    merged = []
    for i, (row, s) in enumerate(zip(raw_rows, sem, strict=True)):
        out = dict(row.data)
        out.update({k: v for k, v in s.items() if k not in ("id", "sample_lang")})
        out["semantic_usage"] = usage_of(calls.get(answers[i].id, []))
        merged.append(out)
    reasons: dict[str, int] = {}
    for s in sem:
        if s["semantic_score"] is None:
            reasons[s["semantic_reason"]] = reasons.get(s["semantic_reason"], 0) + 1
    scored = sum(1 for s in sem if s["semantic_score"] is not None)
    judge_name = f"{backend_obj.name}:{model}:semantic-{mode}:{prompt.version}"
    values = [s["semantic_score"] for s in sem]
    alarm = check_degenerate([None if v is None else round(float(v), 1) for v in values],
                             judge=judge_name, what="semantic score",
                             probabilities=values if mode == "choices" else None)
    summary: dict[str, Any] = {
        "family": COMPONENT, "verb": "judge", "judge": model, "method": mode,
        "prompt_version": prompt.version, "repeats": repeats,
        "coverage": {"rows": len(sem), "scored": scored, "unscored": len(sem) - scored,
                     "reasons": reasons},
    }
    if repeats > 1:
        from ragmeter.stats._stability import repeat_agreement

        verdicts = {str(i): [None if rows[i]["semantic_score"] is None
                             else round(float(rows[i]["semantic_score"]), 1)
                             for rows in per_repeat] for i in range(len(answers))}
        summary["stability"] = repeat_agreement(verdicts, repeats)
        for k, out_row in enumerate(merged):
            out_row["_verdicts"] = verdicts[str(k)]
    headline = _judge_block(merged, 1)
    summary["metrics"], summary["ci95"] = headline["metrics"], headline["ci95"]
    prices = (config.price_prompt_per_mtok, config.price_completion_per_mtok)
    summary["spend"] = spend(add_usage(r["semantic_usage"] for r in merged), *prices)
    if by:
        summary["groups"] = _judge_groups(merged, by, repeats, prices)
    for out_row in merged:
        out_row.pop("_verdicts", None)
    return check_run(Result(COMPONENT, "judge", summary, items=merged,
                  inputs=[input_record(data, len(raw_rows))], backends=[identity],
                  models=[model], prompt_versions={"semantic": prompt.version},
                  judges=[judge_card(judge_name)], alarms=[alarm] if alarm else [], engine=config.engine_name),
                     "multilingual.judge")


def _judge_groups(rows: list[dict[str, Any]], by: str, repeats: int,
                  prices: tuple[Any, Any]) -> dict[str, Any]:
    """``multilingual judge --by``: mean semantic score with a bootstrap 95% CI, coverage,
    stability (with repeats) and spend per group (:mod:`ragmeter._verb._groups`)."""
    from ragmeter._verb._groups import FieldLookup, grouped

    field = "sample_lang" if by == "lang" else by
    return grouped(by, rows, FieldLookup(field, COMPONENT),
                   lambda part: _judge_block(part, repeats), price_in=prices[0],
                   price_out=prices[1], usage_of=lambda r: r.get("semantic_usage"))


def _judge_block(part: list[dict[str, Any]], repeats: int) -> dict[str, Any]:
    """Mean semantic score with a bootstrap 95% CI and coverage (and stability with repeats)
    of some judged rows: the whole run's headline and each ``--by`` group's."""
    from ragmeter import stats
    from ragmeter.stats._stability import repeat_agreement

    values = [float(r["semantic_score"]) for r in part if r["semantic_score"] is not None]
    ci = stats.bootstrap_ci(values) if values else None
    out: dict[str, Any] = {
        "metrics": {"semantic_score": stats.mean(values), "n": len(values)},
        "ci95": {"semantic_score": list(ci) if ci else None},
        "coverage": {"rows": len(part), "scored": len(values),
                     "unscored": len(part) - len(values),
                     "reasons": _reasons(part)}}
    if repeats > 1:
        out["stability"] = repeat_agreement(
            {str(k): r["_verdicts"] for k, r in enumerate(part)}, repeats)
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
