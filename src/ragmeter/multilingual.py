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

from ragmeter._api import async_variant, dry_run_result, field_map, input_record, model_context
from ragmeter.result import Result

__all__ = ["score", "judge", "ajudge"]

COMPONENT = "multilingual"


def score(data: Any, *, baseline: str | None = None, ci: bool = False, paired: bool = False,
          rlc_lid: bool = False, resamples: int = 1000, seed: int = 12345,
          fields: Mapping[str, str] | Iterable[str] | None = None,
          keep_text: bool = True, normalize: str = "lbrag") -> Result:
    """EM, F1, RLC, RLC_OK, cost, CNBE and semantic score per system, exactly as LBRAG.

    ``baseline``: the system CNBE and paired tests compare against (default ``direct``, skipped
    with a note when absent; naming one that is absent is an error).  ``ci``: 95% bootstrap
    intervals; ``paired``: paired tests against the baseline; ``rlc_lid``: language-ID RLC
    (needs ``ragmeter[lang]``).  ``fields``: your column names, ``{"pred_answer": "answer"}``.
    ``keep_text``: keep question/gold/prediction in the items (off saves memory on huge files).
    ``normalize``: ``lbrag`` (LBRAG's normalization, keeps articles; the default) or ``squad``
    (SQuAD v1.1's: drops punctuation and a/an/the); the signature says which ran.
    ``gold_answer`` may be a list: EM and F1 are then the max over the golds (SQuAD's rule).
    """
    if normalize not in ("lbrag", "squad"):
        from ragmeter.errors import ConfigError

        raise ConfigError(f"multilingual: normalize={normalize!r}; expected lbrag or squad.")
    from ragmeter.io import is_path, iter_rows
    from ragmeter.suites.multilingual import MultilingualConfig, score_file, score_rows

    config = MultilingualConfig(
        keep_text=keep_text, baseline=baseline or "direct", baseline_required=baseline is not None,
        ci=ci, paired=paired, rlc_lid=rlc_lid, n_resamples=resamples, seed=seed,
        field_map=field_map(fields, COMPONENT), normalize=normalize)
    if is_path(data):
        detail = score_file(data, config)
    else:
        from ragmeter.io import source_label

        detail = score_rows(iter_rows(data, component=COMPONENT, field_map=config.field_map),
                            config, source=source_label(data))
    return Result(COMPONENT, "score", detail.to_json(), items=detail.iter_items,
                  ordered_items=detail.ordered_items, detail=detail,
                  inputs=[input_record(data, detail.coverage.get("rows"))])


def judge(data: Any, *, scoring: str = "auto", backend: Any = None, store: Any = None,
          replay: bool = False, dry_run: bool = False, progress: bool | None = None,
          fields: Mapping[str, str] | Iterable[str] | None = None) -> Result:
    """Add LBRAG's 0–1 ``semantic_score`` to each answer with a judge model.

    ``scoring``: ``generate`` (the judge writes ``{"score", "explanation"}``, LBRAG's way),
    ``choices`` (P(yes) of a yes/no question from logits/logprobs) or ``auto`` (choices for the
    local backend).  ``backend``: :func:`ragmeter.backends.local` (default) or ``.openai(...)``.
    A failed or unparseable judgement leaves ``semantic_score`` None with ``semantic_reason``.
    The result's ``items`` are the input rows with the semantic columns added: feed them to
    :func:`score`.
    """
    from ragmeter.io import as_text, iter_rows, require
    from ragmeter.judging import check_degenerate, judge_card
    from ragmeter.runner import estimate_requests, run_requests
    from ragmeter.suites.rubric.judge import (
        Answer,
        SemanticPrompt,
        semantic_requests,
        semantic_rows,
    )

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
                                                   description="semantic judge")
    mode = scoring if scoring != "auto" else ("choices" if backend_obj.name == "local"
                                              else "generate")
    if mode not in ("choices", "generate"):
        from ragmeter.errors import ConfigError

        raise ConfigError(f"multilingual: scoring={scoring!r}; expected auto, choices or "
                          "generate.")
    prompt = SemanticPrompt.default()
    requests = semantic_requests(answers, prompt, mode)  # type: ignore[arg-type]
    if dry_run:
        return dry_run_result(COMPONENT, "judge", estimate_requests(requests, backend_obj,
                                                                    the_store))
    outcomes = run_requests(requests, backend_obj, the_store, config)
    identity = backend_obj.identity()
    model = str(identity.get("model", backend_obj.name))
    sem = semantic_rows(answers, outcomes, mode, prompt, model)  # type: ignore[arg-type]
    merged = []
    for row, s in zip(raw_rows, sem, strict=True):
        out = dict(row.data)
        out.update({k: v for k, v in s.items() if k not in ("id", "sample_lang")})
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
    summary = {
        "family": COMPONENT, "verb": "judge", "judge": model, "method": mode,
        "prompt_version": prompt.version,
        "coverage": {"rows": len(sem), "scored": scored, "unscored": len(sem) - scored,
                     "reasons": reasons},
    }
    return Result(COMPONENT, "judge", summary, items=merged,
                  inputs=[input_record(data, len(raw_rows))], backends=[identity],
                  models=[model], prompt_versions={"semantic": prompt.version},
                  judges=[judge_card(judge_name)], alarms=[alarm] if alarm else [])


ajudge = async_variant(judge)
