"""RGB's judged rates Rej*, ED* and CR* on scored predictions: the one code path that
``rgb run`` (after generating) and ``rgb judge`` (on a predictions file) both use.

A *task* is one scored setting to judge: ``reject`` (Rej*, the noise-1.0 predictions of
default data, reject_evalue.py) or ``fact`` (ED* and CR*, the counterfactual predictions,
fact_evalue.py).  Judge methods:

* ``text`` and ``choice``: a model call per item (:mod:`ragmeter.rgb._judge`);
* ``detector``: no model call: ragmeter's refusal detector (:mod:`ragmeter.rgb._refusal`)
  for Rej*, its error detector (:mod:`ragmeter.rgb._errors`) for ED* and CR*.

``auto`` picks per task: with a backend that declares choice scoring (the local model),
``detector`` (each agrees with hand-labelled answers far better than the small model's
choice scoring: docs/rgb.md); with any other backend ``text`` (what the paper did).

Every rate carries n and a Wilson 95% interval; a judge that gives one verdict to nearly every
item trips the degenerate-judge alarm (issue 12, item 7).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter._util._record import replace
from ragmeter.backends import scores_choices
from ragmeter.backends._types import Backend, Request
from ragmeter.errors import ConfigError
from ragmeter.judges._card import check_degenerate, check_validity, judge_card
from ragmeter.rgb import _metrics as qa_rgb
from ragmeter.rgb._data import RgbDataset
from ragmeter.rgb._errors import ERROR_DETECTOR_VALIDATION, ERROR_DETECTOR_VERSION, detect_error
from ragmeter.rgb._judge import judge_record, judge_request, parse_fact, parse_reject
from ragmeter.rgb._prompts import JudgePrompts
from ragmeter.rgb._refusal import DETECTOR_VALIDATION, DETECTOR_VERSION, detect_refusal
from ragmeter.rgb._scoring import RgbScore
from ragmeter.runner._run import RunnerConfig, run_requests
from ragmeter.runner._store import Store

__all__ = ["JUDGE_METHODS", "JudgeTask", "JudgedRates", "RgbJudgeResult", "resolve_method",
           "judge_requests", "judge_tasks", "judge_signature", "judge_predictions", "task_kind",
           "task_judge_info", "judge_result_signature"]

JUDGE_METHODS = ("auto", "text", "choice", "detector")


@dataclass(frozen=True)
class JudgeTask:
    """One scored setting to judge; ``name`` keys its results (a setting name)."""

    name: str
    kind: str  # reject | fact
    dataset: RgbDataset
    score: RgbScore


@dataclass
class JudgedRates:
    """Per task: the judged rates (with n, CI, coverage), per-item verdicts, alarms."""

    rates: dict[str, dict[str, Any]] = field(default_factory=dict)
    items: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    alarms: list[dict[str, Any]] = field(default_factory=list)
    methods: dict[str, str] = field(default_factory=dict)  # kind -> method used


def resolve_method(method: str, backend: Backend, kind: str) -> str:
    """The method a task uses (see module docstring); ``auto`` reads what ``backend``
    declares (:func:`ragmeter.backends.scores_choices`), never its name."""
    if method not in JUDGE_METHODS:
        raise ConfigError(f"rgb: unknown judge method {method!r}. "
                          f"Fix: use one of {', '.join(JUDGE_METHODS)}.")
    if method == "auto":
        return "detector" if scores_choices(backend) else "text"
    return method


def detector_of(kind: str) -> tuple[str, dict[str, object] | None]:
    """The version and the measured validation of the detector judging ``kind``."""
    if kind == "reject":
        return DETECTOR_VERSION, DETECTOR_VALIDATION
    return ERROR_DETECTOR_VERSION, ERROR_DETECTOR_VALIDATION


def _detect(kind: str, prediction: str) -> tuple[bool, str | None, str]:
    """A detector's verdict on one answer: (flag, the text that decided it, why)."""
    if kind == "reject":
        refusal = detect_refusal(prediction)
        return refusal.declines, refusal.matched, refusal.reason
    error = detect_error(prediction)
    return error.detects, error.matched, error.reason


def _ok_items(task: JudgeTask) -> list[dict[str, Any]]:
    return [it for it in task.score.items if it["status"] == "ok"]


def judge_requests(tasks: Sequence[JudgeTask], prompts: JudgePrompts, method: str,
                   backend: Backend) -> list[Request]:
    """The model calls judging ``tasks`` needs (none for detector-judged tasks)."""
    out: list[Request] = []
    for t in tasks:
        m = resolve_method(method, backend, t.kind)
        if m == "detector":
            continue
        queries = {i.key: i.query for i in t.dataset.instances}
        template = prompts.reject if t.kind == "reject" else prompts.fact
        for it in _ok_items(t):
            out.append(judge_request(f"judge/{t.name}/{it['id']}", template,
                                     queries[str(it["id"])], it["prediction"], m))
    return out


def judge_signature(judge_info: dict[str, Any]) -> str:
    """How the judge shows in a signature."""
    return (f"{judge_info['backend']}:{judge_info['model']}|judge-method:{judge_info['method']}"
            f"|judge-prompts:{judge_info['prompts']}")


def _model_verdict(o: Any, kind: str, m: str) -> tuple[bool | None, dict[str, Any]]:
    """One judge call's verdict (None when the call failed) and what its item keeps."""
    if not o.ok or o.response is None:
        reason = o.reason or "call_failed"
        return None, {"status": "unscored", "reason": reason, "detail": o.detail}
    flag = (parse_reject if kind == "reject" else parse_fact)(o.response, m)
    return flag, judge_record(o.response, flag, m)


def judge_tasks(tasks: Sequence[JudgeTask], prompts: JudgePrompts, backend: Backend,
                store: Store | None, runner: RunnerConfig, method: str,
                repeats: int = 1) -> JudgedRates:
    """Judge every task: Rej* for ``reject`` tasks, ED* and CR* for ``fact`` tasks.

    ``repeats``: judge every item that many times with distinct calls
    (:mod:`ragmeter.judges._repeats`); the rates are repeat 0's (the same as a single run), each
    item keeps its verdict per repeat and its agreement, and each task gets ``stability``
    (flip rate, mean agreement, Fleiss' κ) and the rate of every repeat.  The detector is
    deterministic: its repeats are not computed, and ``stability`` says so.
    """
    from ragmeter.judges._repeats import deterministic_stability, repeat_id, repeat_requests
    from ragmeter.judges._spend import usage_of
    from ragmeter.stats._stability import item_agreement, repeat_agreement

    requests = repeat_requests(judge_requests(tasks, prompts, method, backend), repeats)
    jrunner = replace(runner, description="judge calls")
    outcomes = ({o.request.id: o for o in run_requests(requests, backend, store, jrunner)}
                if requests else {})
    model = str(backend.identity().get("model", backend.name))
    out = JudgedRates()
    for t in tasks:
        m = resolve_method(method, backend, t.kind)
        out.methods[t.kind] = m
        flags: list[bool] = []
        labels: list[tuple[int, ...]] = []
        probs: list[float | None] = []
        per: dict[str, dict[str, Any]] = {}
        reasons: dict[str, int] = {}
        by_repeat: dict[str, list[bool | None]] = {}
        repeat_flags: list[list[bool]] = [[] for _ in range(repeats)]
        for it in t.score.items:
            key = str(it["id"])
            if it["status"] != "ok":
                reasons["no_prediction"] = reasons.get("no_prediction", 0) + 1
                continue
            if m == "detector":
                flag, matched, why = _detect(t.kind, it["prediction"])
                per[key] = {"flag": int(flag), "method": m, "matched": matched,
                            "reason": why}
            else:
                rid = f"judge/{t.name}/{it['id']}"
                mine = [outcomes[repeat_id(rid, k)] for k in range(repeats)]
                verdicts = []
                for k, o in enumerate(mine):
                    v, _ = _model_verdict(o, t.kind, m)
                    verdicts.append(v)
                    if v is not None:
                        repeat_flags[k].append(v)
                maybe, record = _model_verdict(mine[0], t.kind, m)
                record["usage"] = usage_of(mine)
                if repeats > 1:
                    by_repeat[key] = verdicts
                    record["repeat_flags"] = [None if v is None else int(v) for v in verdicts]
                    record["agreement"] = item_agreement(verdicts)
                per[key] = record
                if maybe is None:
                    reasons[record["reason"]] = reasons.get(record["reason"], 0) + 1
                    continue
                flag = maybe
                if mine[0].response is not None and mine[0].response.choice_probs is not None:
                    probs.append(mine[0].response.choice_probs.get("Yes"))
            flags.append(flag)
            labels.append(tuple(it["labels"]))
        total = len(t.score.items)
        cov = {"total": total, "scored": len(flags), "unscored": total - len(flags),
               "reasons": dict(sorted(reasons.items()))}
        n, hits = len(flags), sum(flags)
        what = qa_rgb.METRICS.get("reject_rate_judged" if t.kind == "reject"
                                  else "ed_judged").label
        version, validation = detector_of(t.kind)
        judge_name = f"{'ragmeter' if m == 'detector' else backend.name}:" + (
            version if m == "detector" else f"{model}:{m}")
        if t.kind == "reject":
            row: dict[str, Any] = {"reject_rate_judged": qa_rgb.judge_reject_rate(flags),
                                   "rejected": hits, "n": n, "ci95": {
                                       "reject_rate_judged": qa_rgb.wilson(hits, n)}}
        else:
            ok = qa_rgb.judged_correct_count(flags, labels)
            row = {"ed_judged": qa_rgb.judge_reject_rate(flags),
                   "cr_judged": qa_rgb.judged_correct_rate(flags, labels),
                   "detected": hits, "n": n, "cr_correct": ok,
                   "ci95": {"ed_judged": qa_rgb.wilson(hits, n),
                            "cr_judged": qa_rgb.wilson(ok, hits)}}
        row.update({"coverage": cov, "method": m, "judge": judge_name,
                    "card": judge_card(judge_name, validation if m == "detector"
                                       else None)})
        if repeats > 1:
            if m == "detector":
                row["stability"] = deterministic_stability(repeats, judge_name)
            else:
                row["stability"] = {**repeat_agreement(by_repeat, repeats),
                                    "rate_per_repeat": [qa_rgb.judge_reject_rate(f)
                                                        for f in repeat_flags]}
        alarm = check_degenerate(flags, judge=judge_name, what=f"{what} on {t.name}",
                                 probabilities=probs if probs else None) \
            or check_validity(row["card"], what=f"{what} on {t.name}")
        if alarm is not None:
            row["alarm"] = alarm
            out.alarms.append(alarm)
        out.rates[t.name] = row
        out.items[t.name] = per
    return out


@dataclass
class RgbJudgeResult:
    """``rgb judge``: judged rates of one predictions file, with the scored items."""

    dataset: str
    kind: str  # reject | fact
    lang: str
    score: RgbScore
    rates: dict[str, Any]
    items: dict[str, dict[str, Any]]
    signature: str
    judge_info: dict[str, Any]
    alarms: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"schema_version": 1, "family": "rgb", "kind": "judge", "dataset": self.dataset,
                "task": self.kind, "lang": self.lang, "judge": self.judge_info,
                "metrics": {k: v for k, v in self.rates.items()
                            if k not in ("coverage", "ci95", "card", "alarm", "stability")},
                "ci95": self.rates.get("ci95"), "coverage": self.rates["coverage"],
                "judges": [self.rates["card"]], "signature": self.signature,
                "score": self.score.to_json(),
                **({"stability": self.rates["stability"]} if "stability" in self.rates
                   else {}),
                **({"alarms": self.alarms} if self.alarms else {})}

    def iter_items(self) -> list[dict[str, Any]]:
        out = []
        for it in self.score.items:
            row = dict(it)
            judged = self.items.get(str(it["id"]))
            if judged is not None:
                row["judge"] = judged
                if "usage" in judged:
                    row["usage"] = judged["usage"]
            out.append(row)
        return out


def task_kind(dataset: RgbDataset) -> str:
    """What a predictions file of this data is judged for: Rej* (default data) or ED*/CR*."""
    if dataset.kind == "int":
        raise ConfigError(f"rgb: {dataset.name} is integration (_int) data, which has no judged "
                          "rate. Fix: judge default data (Rej*) or _fact data (ED*, CR*).")
    return "reject" if dataset.kind == "default" else "fact"


def task_judge_info(backend: Backend, prompts: JudgePrompts, method: str,
                    kind: str = "reject") -> dict[str, Any]:
    """The identity of the judge of one task of ``kind`` (``method`` resolved): the
    detector's version, or the backend, model and judge prompts."""
    if method == "detector":
        return {"backend": "ragmeter", "model": detector_of(kind)[0], "method": method,
                "prompts": "none"}
    return {"backend": backend.name, "model": str(backend.identity().get("model", backend.name)),
            "method": method, "prompts": prompts.version}


def judge_result_signature(dataset: RgbDataset, noise_rate: float, judge_info: dict[str, Any],
                           repeats: int = 1) -> str:
    """``rgb judge``'s signature: the data, the predictions' noise rate, the judged rates and
    the judge."""
    from ragmeter.runs._schema import Signature

    judged = qa_rgb.ROLE_METRICS["rejection" if task_kind(dataset) == "reject" else "fact_doc"]
    rates = ",".join(qa_rgb.METRICS.get(n).label for n in judged if qa_rgb.METRICS.get(n).judged)
    return Signature.make("rgb", qa_rgb.metric_version(), {
        "data": dataset.name, "kind": dataset.kind, "lang": dataset.lang, "noise": noise_rate,
        "rate": rates, "judge": judge_signature(judge_info),
        "repeats": repeats if repeats > 1 else None,
    }).render()


def judge_predictions(dataset: RgbDataset, predictions: Any, prompts: JudgePrompts,
                      backend: Backend, store: Store | None, runner: RunnerConfig, *,
                      method: str = "auto", noise_rate: float | None = None,
                      passage_num: int = 5, correct_rate: float = 0.0, seed: int = 2333,
                      repeats: int = 1) -> RgbJudgeResult:
    """Rej* (default data) or ED*/CR* (_fact data) of existing predictions, no generation.

    ``predictions``: ``{id: Prediction}`` (:func:`ragmeter.suites.rgb.read_predictions`).
    ``noise_rate``: the noise rate the predictions were made at (default 1.0 for default data,
    the rejection setting; 0 for _fact data); it enters the strict labels' accuracy only.
    """
    from ragmeter.rgb._build import BuildConfig
    from ragmeter.rgb._scoring import score_predictions, signature_for

    kind = task_kind(dataset)
    rate = noise_rate if noise_rate is not None else (1.0 if kind == "reject" else 0.0)
    config = BuildConfig(noise_rate=rate, passage_num=passage_num, correct_rate=correct_rate,
                         seed=seed)
    score = score_predictions(dataset, predictions, config,
                              signature=signature_for(dataset, config))
    task = JudgeTask(f"{dataset.name}/{config.label()}", kind, dataset, score)
    rates = judge_tasks([task], prompts, backend, store, runner, method, repeats=repeats)
    info = task_judge_info(backend, prompts, rates.methods[kind], kind)
    sig = judge_result_signature(dataset, rate, info, repeats)
    return RgbJudgeResult(dataset=dataset.name, kind=kind, lang=dataset.lang, score=score,
                          rates=rates.rates[task.name], items=rates.items[task.name],
                          signature=sig, judge_info=info, alarms=rates.alarms)
