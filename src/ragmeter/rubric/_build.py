"""``rubric build``: an evaluation set from a knowledge base, RAGaliq's question generation.

The steps (RAGaliq, chameleon-lizard/Ragaliq ``src/data_generation``; the write-up's "Data
description"):

1. chunk the knowledge base (:mod:`ragmeter.rubric._chunking`) and sample ``N`` chunks
   with a seed;
2. one generation call per chunk: a factoid question and its answer
   (:func:`~ragmeter.rubric._build_prompts.parse_generation`); an unparseable reply
   drops the chunk with the reason;
3. duplicate questions (same text after case folding and removing punctuation and spaces)
   are removed before they are critiqued (RAGaliq's 71 questions hold one duplicate);
4. three critique calls per question, each a 1-5 rating with an explanation: groundedness
   (the chunk answers it, in one way), relevance (useful to the knowledge base's reader) and
   standalone (makes sense without the chunk); an unparseable critique leaves that criterion
   unscored with its reason, never a default score, and the question is not kept;
5. keep the questions whose three ratings reach the thresholds (default 4 each: every one of
   RAGaliq's 71 published questions is rated 4 or 5 on all three);
6. optionally translate the kept questions (and the knowledge base) with a language check
   (:mod:`ragmeter.rubric._translate`).

``critique_only`` re-rates an existing questions file and measures agreement with the ratings
it already holds (quadratic-weighted kappa, exact agreement, MAE, bootstrap CIs).

Every call goes through the runner, so calls are stored before they are read, a killed run
resumes without paying twice, and ``estimate_build`` gives the dry-run numbers.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter._util._record import replace
from ragmeter.backends._types import Backend, Request
from ragmeter.io import as_text, iter_rows
from ragmeter.judges._card import model_id
from ragmeter.rubric._build_prompts import CRITERIA, BuildPrompts, parse_critique, parse_generation
from ragmeter.rubric._build_types import (
    COMPONENT,
    DEFAULT_THRESHOLDS,
    RATING_CHOICES,
    BuildConfig,
    BuildOutcome,
    CritiqueScoring,
)
from ragmeter.rubric._chunking import Chunk, chunk_files, sample_chunks
from ragmeter.runner._run import DryRunEstimate, RunnerConfig, estimate_requests, run_requests
from ragmeter.runner._store import Store

__all__ = ["BuildConfig", "BuildOutcome", "build_questions", "critique_only",
           "estimate_build", "read_rated_questions", "normalize_question", "DEFAULT_THRESHOLDS",
           "degenerate_critic", "critic_agreement", "build_failure"]

# ------------------------------------------------------------------ pure steps


def normalize_question(text: str) -> str:
    """Key for duplicate detection: NFKC, case folded, letters and digits only."""
    t = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"[\W_]+", "", t)


def generation_requests(chunks: Sequence[Chunk], prompts: BuildPrompts,
                        audience: str) -> list[Request]:
    return [Request(id=f"gen:{c.id}", messages=prompts.generate.render(
        context=c.text, audience=audience), params=dict(prompts.generate.params))
        for c in chunks]


def critique_requests(rows: Sequence[Mapping[str, Any]], prompts: BuildPrompts,
                      audience: str, scoring: CritiqueScoring = "generate") -> list[Request]:
    """Three requests per row (one per criterion), ids ``crit:<row id>:<criterion>``.
    ``choices``: the digit-only prompt, scored by the probabilities of "1".."5"."""
    out = []
    for row in rows:
        for name in CRITERIA:
            values = dict(context=row["context"], question=row["question"],
                          answer=row["answer"], audience=audience)
            if scoring == "choices":
                tpl = prompts.critique_choices[name]
                out.append(Request(id=f"crit:{row['id']}:{name}", messages=tpl.render(**values),
                                   choices=RATING_CHOICES))
            else:
                tpl = prompts.critique[name]
                out.append(Request(id=f"crit:{row['id']}:{name}", messages=tpl.render(**values),
                                   params=dict(tpl.params)))
    return out


def _choice_rating(probs: Mapping[str, float] | None) -> tuple[int | None, dict[str, float]]:
    """The most probable rating (ties: the lower) and the distribution over 1..5."""
    raw = {c: float((probs or {}).get(c, 0.0)) for c in RATING_CHOICES}
    total = sum(raw.values())
    if not total > 0:
        return None, {}
    dist = {c: p / total for c, p in raw.items()}
    best = max(RATING_CHOICES, key=lambda c: (dist[c], -int(c)))
    return int(best), dist


def apply_critiques(rows: list[dict[str, Any]], outcomes: Sequence[Any],
                    thresholds: Mapping[str, int]) -> None:
    """Fill ``<criterion>_score``/``_eval`` (or ``_reason``/``_detail``) and ``status``."""
    by_id = {o.request.id: o for o in outcomes}
    for row in rows:
        failed: list[str] = []
        low: list[str] = []
        for name in CRITERIA:
            o = by_id.get(f"crit:{row['id']}:{name}")
            if o is None or not o.ok or o.response is None:
                row.update({f"{name}_score": None, f"{name}_eval": None,
                            f"{name}_reason": getattr(o, "reason", None) or "no_call",
                            f"{name}_detail": getattr(o, "detail", None)})
                failed.append(name)
                continue
            if o.request.choices is not None:
                rating, dist = _choice_rating(o.response.choice_probs)
                row[f"{name}_score"] = rating
                row[f"{name}_eval"] = ""  # choice scoring gives no explanation
                if rating is None:
                    row.update({f"{name}_reason": "no_choice_probs",
                                f"{name}_detail": "the backend gave no probabilities for "
                                                  "1..5"})
                    failed.append(name)
                    continue
                row[f"{name}_probs"] = {c: round(p, 6) for c, p in dist.items()}
                row[f"{name}_expected"] = round(sum(int(c) * p for c, p in dist.items()), 6)
                if rating < thresholds.get(name, 1):
                    low.append(name)
                continue
            parsed = parse_critique(o.response.text)
            row[f"{name}_score"] = parsed.rating
            row[f"{name}_eval"] = parsed.evaluation
            row[f"{name}_reply"] = o.response.text
            if not parsed.ok:
                row[f"{name}_reason"] = parsed.reason
                row[f"{name}_detail"] = parsed.detail
                failed.append(name)
            elif parsed.rating is not None and parsed.rating < thresholds.get(name, 1):
                low.append(name)
        if failed:
            row.update(status="unscored", reason="critique_unscored:" + ",".join(failed))
        elif low:
            row.update(status="dropped", reason="below_threshold:" + ",".join(low))
        else:
            row.update(status="kept", reason=None)


def ragaliq_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A kept question in RAGaliq's questions_<lang>.json format (plus ``id`` and ``source``)."""
    out: dict[str, Any] = {"id": row["id"], "question": row["question"],
                           "answer": row["answer"], "context": row["context"]}
    for name in CRITERIA:
        out[f"{name}_score"] = row.get(f"{name}_score")
        out[f"{name}_eval"] = row.get(f"{name}_eval")
    if row.get("source") is not None:
        out["source"] = row["source"]
    return out


def degenerate_critic(scores: Sequence[int], critic: str = "critic",
                      criterion: str = "rating") -> dict[str, Any] | None:
    """The degenerate-judge alarm (:func:`ragmeter.judges._card.check_degenerate`: one rating for
    at least 95% of at least 5 questions) for one criterion's ratings; None when it does not
    trip."""
    from ragmeter.judges._card import check_degenerate

    return check_degenerate(list(scores), judge=critic, what=f"{criterion} critique")


def critique_summary(rows: Sequence[Mapping[str, Any]], critic: str = "critic"
                     ) -> dict[str, Any]:
    """Per criterion: coverage, rating counts, mean, and the degenerate-critic alarm."""
    out: dict[str, Any] = {}
    for name in CRITERIA:
        scores = [int(r[f"{name}_score"]) for r in rows if r.get(f"{name}_score") is not None]
        reasons = Counter(str(r.get(f"{name}_reason")) for r in rows
                          if r.get(f"{name}_score") is None)
        out[name] = {
            "coverage": {"total": len(rows), "scored": len(scores),
                         "unscored": len(rows) - len(scores), "reasons": dict(reasons)},
            "counts": {str(g): scores.count(g) for g in (1, 2, 3, 4, 5)},
            "mean": round(sum(scores) / len(scores), 4) if scores else None,
            "degenerate": degenerate_critic(scores, critic, name)}
    return out


def alarms(crit: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The degenerate-critic alarms of a critique summary, one per criterion that trips."""
    return [c["degenerate"] for c in crit.values() if c.get("degenerate")]


def _counts(reasons: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())) or "no reason recorded"


def build_failure(summary: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """Why a build has no question to write: ``(cause, fix in Python words, fix in CLI
    flags)``, or None when at least one question was generated (its critiques may still drop
    it: that is the critics' finding, shown in the tables, and a later run resumes the calls
    that failed) or the build re-rated an existing set (``critique_only``).  Pure: reads the
    build's summary."""
    if summary.get("mode") == "critique_only" or summary.get("generated"):
        return None
    reasons: Mapping[str, int] = summary.get("reasons") or {}
    if not summary.get("chunks_sampled"):
        return ("the knowledge base gave no chunk to write a question from",
                "give a longer knowledge base, or lower ChunkOptions.min_chunk_chars",
                "give a longer knowledge base, or lower --min-chunk-chars")
    if reasons and all(k.startswith("generation_failed:") for k in reasons):
        return (f"every generation call failed ({_counts(reasons)})",
                "check the backend (its base_url, model and key) and call again: the calls "
                "that succeeded are stored and not paid twice",
                "check the backend (--base-url, --model, the key) and run again: the calls "
                "that succeeded are stored and not paid twice")
    unusable = f"{summary.get('chunks_sampled')} generation(s): {_counts(reasons)}"
    return (f"the model {summary.get('critic_model')} wrote no usable question ({unusable})",
            "small models such as the default offline one cannot write questions; use a "
            "larger one, e.g. backend=ragmeter.backends.openai(\"gpt-4o-mini\")",
            "small models such as the default offline one cannot write questions; use a "
            "larger one, e.g. --backend openai --model gpt-4o-mini (or --endpoint NAME)")


def _notes(crit: Mapping[str, Any]) -> list[str]:
    return [f"degenerate critic: {a['message']}; filtering on this criterion keeps or drops "
            "almost everything" for a in alarms(crit)]


# ------------------------------------------------------------------ orchestration


def _model(backend: Backend) -> str:
    return str(backend.identity().get("model", getattr(backend, "name", "?")))


def _stage(config: RunnerConfig, description: str) -> RunnerConfig:
    return replace(config, description=description)


def build_questions(paths: Sequence[str | Path], config: BuildConfig, backend: Backend,
                    store: Store | None, runner: RunnerConfig,
                    prompts: BuildPrompts | None = None) -> BuildOutcome:
    """Run the whole pipeline (chunk, sample, generate, dedupe, critique, filter,
    translate) through the runner."""
    prompts = prompts or BuildPrompts.default()
    t0 = time.perf_counter()
    chunks = chunk_files(paths, config.chunking, config.chunk_size, config.min_chunk_chars)
    sampled = sample_chunks(chunks, config.sample, config.seed)
    gen_out = run_requests(generation_requests(sampled, prompts, config.audience), backend,
                           store, _stage(runner, "generate"))
    rows: list[dict[str, Any]] = []
    for chunk, o in zip(sampled, gen_out, strict=True):
        row: dict[str, Any] = {"id": chunk.id, "source": chunk.source, "context": chunk.text,
                               "question": None, "answer": None}
        if not o.ok or o.response is None:
            row.update(status="unscored", reason=f"generation_failed:{o.reason}",
                       detail=o.detail)
        else:
            parsed = parse_generation(o.response.text)
            row["generation_reply"] = o.response.text
            if parsed.ok:
                row.update(question=parsed.question, answer=parsed.answer, status="generated")
            else:
                row.update(status="unscored", reason=f"generation_unparsed:{parsed.reason}",
                           detail=parsed.detail)
        rows.append(row)
    seen: dict[str, str] = {}
    for row in rows:
        if row["status"] != "generated" or not config.dedupe:
            continue
        key = normalize_question(row["question"])
        if key in seen:
            row.update(status="dropped", reason="duplicate", detail=f"same as {seen[key]}")
        else:
            seen[key] = row["id"]
    to_rate = [r for r in rows if r["status"] == "generated"]
    crit_out = run_requests(critique_requests(to_rate, prompts, config.audience,
                                              config.critique_scoring), backend,
                            store, _stage(runner, "critique"))
    apply_critiques(to_rate, crit_out, config.thresholds)
    kept = [ragaliq_row(r) for r in rows if r["status"] == "kept"]
    model = _model(backend)
    crit = critique_summary(to_rate, model)
    summary: dict[str, Any] = {
        "family": COMPONENT, "verb": "build",
        "signature": config.signature(prompts, model_id(backend)), "critic_model": model, "prompt_version": prompts.version,
        "chunks": len(chunks), "chunks_sampled": len(sampled),
        "generated": sum(1 for r in rows if r.get("question")),
        "duplicates": sum(1 for r in rows if r.get("reason") == "duplicate"),
        "critiqued": len(to_rate), "kept": len(kept),
        "thresholds": dict(config.thresholds),
        "status": dict(Counter(r["status"] for r in rows)),
        "reasons": dict(Counter(str(r["reason"]) for r in rows if r.get("reason"))),
        "criteria": crit,
        "coverage": {"total": len(rows), "scored": len(to_rate) - sum(
            1 for r in to_rate if r["status"] == "unscored"),
            "unscored": sum(1 for r in rows if r["status"] == "unscored")},
        "notes": _notes(crit)}
    outcome = BuildOutcome(summary, rows, kept)
    if config.languages:
        from ragmeter.rubric._build_translate import translate_outputs

        translate_outputs(outcome, paths, config, prompts, backend, store, runner)
    summary["seconds"] = round(time.perf_counter() - t0, 2)
    return outcome


def read_rated_questions(path: str | Path) -> list[dict[str, Any]]:
    """A RAGaliq questions file (question, answer, context and, optionally, the original
    critic's ``<criterion>_score``) as candidate rows; the original scores go to
    ``reference_<criterion>_score``."""
    rows = []
    seen: set[str] = set()
    for row in iter_rows(path, component=COMPONENT):
        data = row.data
        q = as_text(row, "question", data.get("question"), component=COMPONENT)
        a = as_text(row, "answer", data.get("answer"), component=COMPONENT)
        c = as_text(row, "context", data.get("context"), component=COMPONENT)
        rid = str(data.get("id", row.number))
        if rid in seen:
            raise row.error(f"duplicate id {rid!r}.", component=COMPONENT, field="id",
                            fix="give every row its own id, or drop the id column.")
        seen.add(rid)
        out: dict[str, Any] = {"id": rid, "question": q, "answer": a, "context": c,
                               "source": data.get("source")}
        for name in CRITERIA:
            ref = data.get(f"{name}_score")
            if ref is None or ref == "":
                continue
            try:
                value = float(ref)
            except (TypeError, ValueError):
                raise row.error(f"is {ref!r}, not a rating 1..5.", component=COMPONENT,
                                field=f"{name}_score",
                                fix="give an integer 1..5 or leave it empty.") from None
            if value != int(value) or not 1 <= value <= 5:
                raise row.error(f"is {ref!r}, not a rating 1..5.", component=COMPONENT,
                                field=f"{name}_score",
                                fix="give an integer 1..5 or leave it empty.")
            out[f"reference_{name}_score"] = int(value)
        rows.append(out)
    return rows


def critic_agreement(ours: Sequence[int], original: Sequence[int],
                     n_resamples: int = 1000) -> dict[str, Any]:
    """Agreement of our critic's ratings with the original critic's on the same questions:
    :func:`ragmeter.rubric._metrics.agreement` (the one ``rubric validate`` uses; QWK over the
    0..5 grid equals QWK over 1..5 for ratings 1..5, as unused categories add nothing) plus
    both critics' mean rating."""
    from ragmeter.rubric._metrics import agreement

    a = agreement(list(ours), list(original), n_resamples=n_resamples, seed=12345,
                  ci=n_resamples > 0)
    ci = a.ci95
    n = len(ours)
    return {"n": a.n, "qwk": a.qwk, "qwk_ci": ci.get("qwk"), "exact": a.exact,
            "exact_ci": ci.get("exact"), "mae": a.mae, "mae_ci": ci.get("mae"),
            "within_one": a.within_one, "spearman": a.spearman,
            "mean_rater": sum(ours) / n if n else None,
            "mean_reference": sum(original) / n if n else None,
            "confusion": [row[1:] for row in a.confusion[1:]]}  # original 1..5 x ours 1..5


def critique_only(path: str | Path, config: BuildConfig, backend: Backend,
                  store: Store | None, runner: RunnerConfig,
                  prompts: BuildPrompts | None = None) -> BuildOutcome:
    """Re-rate the questions of ``path`` and measure agreement with its original ratings."""
    prompts = prompts or BuildPrompts.default()
    t0 = time.perf_counter()
    rows = read_rated_questions(path)
    outcomes = run_requests(critique_requests(rows, prompts, config.audience,
                                              config.critique_scoring), backend, store,
                            _stage(runner, "critique"))
    apply_critiques(rows, outcomes, config.thresholds)
    model = _model(backend)
    crit = critique_summary(rows, model)
    agree: dict[str, Any] = {}
    for name in CRITERIA:
        pairs = [(int(r[f"{name}_score"]), int(r[f"reference_{name}_score"])) for r in rows
                 if r.get(f"{name}_score") is not None
                 and r.get(f"reference_{name}_score") is not None]
        with_ref = sum(1 for r in rows if r.get(f"reference_{name}_score") is not None)
        if not with_ref:
            continue
        agree[name] = critic_agreement([p[0] for p in pairs], [p[1] for p in pairs],
                                       config.n_resamples)
        agree[name].update(with_reference=with_ref, unscored=with_ref - len(pairs))
    kept = [ragaliq_row(r) for r in rows if r["status"] == "kept"]
    summary: dict[str, Any] = {
        "family": COMPONENT, "verb": "build", "mode": "critique_only",
        "signature": config.signature(prompts, model_id(backend)), "critic_model": model,
        "prompt_version": prompts.version, "questions": len(rows), "kept": len(kept),
        "thresholds": dict(config.thresholds), "criteria": crit, "agreement": agree,
        "status": dict(Counter(r["status"] for r in rows)),
        "coverage": {"total": len(rows),
                     "scored": sum(1 for r in rows if r["status"] != "unscored"),
                     "unscored": sum(1 for r in rows if r["status"] == "unscored")},
        "notes": _notes(crit), "seconds": round(time.perf_counter() - t0, 2)}
    return BuildOutcome(summary, rows, kept)


# ------------------------------------------------------------------ dry run


@dataclass(frozen=True)
class BuildEstimate:
    stages: list[tuple[str, DryRunEstimate]]
    price_prompt: float | None = None
    price_completion: float | None = None

    @property
    def requests(self) -> int:
        return sum(e.requests for _, e in self.stages)

    @property
    def calls(self) -> int:
        return sum(e.calls for _, e in self.stages)

    @property
    def prompt_tokens(self) -> int:
        return sum(e.prompt_tokens for _, e in self.stages)

    @property
    def completion_tokens_max(self) -> int:
        return sum(e.completion_tokens_max for _, e in self.stages)

    @property
    def cost_usd_max(self) -> float | None:
        if self.price_prompt is None and self.price_completion is None:
            return None
        return (self.prompt_tokens * (self.price_prompt or 0.0)
                + self.completion_tokens_max * (self.price_completion or 0.0)) / 1e6

    def to_dict(self) -> dict[str, Any]:
        return {"stages": {n: {"requests": e.requests, "cached": e.cached, "calls": e.calls,
                               "prompt_tokens": e.prompt_tokens,
                               "completion_tokens_max": e.completion_tokens_max}
                           for n, e in self.stages},
                "calls": self.calls, "prompt_tokens": self.prompt_tokens,
                "completion_tokens_max": self.completion_tokens_max,
                "cost_usd_max": self.cost_usd_max}

    def render(self) -> str:
        lines = [f"{name}: {e.calls} calls ({e.cached} of {e.requests} stored), about "
                 f"{e.prompt_tokens} prompt tokens, at most {e.completion_tokens_max} "
                 f"completion tokens" for name, e in self.stages]
        total = (f"dry run total: {self.calls} calls, about {self.prompt_tokens} prompt "
                 f"tokens, at most {self.completion_tokens_max} completion tokens")
        cost = self.cost_usd_max
        if cost is not None:
            total += f", at most ${cost:.4f}"
        lines.append(total + " (critique and translation counted as if every question "
                             "were generated and kept; translations may add one retry "
                             "each). Nothing was called.")
        return "\n".join(lines)


_PLACEHOLDER_Q = "What is the question written from this chunk, in about twenty tokens?"
_PLACEHOLDER_A = "The answer, a short fact from the chunk."


def estimate_build(paths: Sequence[str | Path] | None, config: BuildConfig, backend: Backend,
                   store: Store | None, runner: RunnerConfig,
                   prompts: BuildPrompts | None = None,
                   critique_path: str | Path | None = None) -> BuildEstimate:
    """Calls, tokens and (with prices) money a build would spend; calls nothing.

    Generation is exact; critique and translation use each sampled chunk with a placeholder
    question and answer (an upper bound on calls: every chunk yields a kept question)."""
    prompts = prompts or BuildPrompts.default()
    stages: list[tuple[str, DryRunEstimate]] = []
    if critique_path is not None:
        rows = read_rated_questions(critique_path)
        stages.append(("critique", estimate_requests(
            critique_requests(rows, prompts, config.audience, config.critique_scoring),
            backend, store)))
    else:
        assert paths is not None
        chunks = chunk_files(paths, config.chunking, config.chunk_size, config.min_chunk_chars)
        sampled = sample_chunks(chunks, config.sample, config.seed)
        stages.append(("generate", estimate_requests(
            generation_requests(sampled, prompts, config.audience), backend, store)))
        rows = [{"id": c.id, "question": f"{_PLACEHOLDER_Q} ({c.id})", "answer": _PLACEHOLDER_A,
                 "context": c.text} for c in sampled]
        stages.append(("critique", estimate_requests(
            critique_requests(rows, prompts, config.audience, config.critique_scoring),
            backend, store)))
        if config.languages:
            from ragmeter.rubric._build_translate import translation_estimate

            stages.extend(translation_estimate(rows, paths, config, prompts, backend, store))
    return BuildEstimate(stages, runner.price_prompt_per_mtok,
                         runner.price_completion_per_mtok)
