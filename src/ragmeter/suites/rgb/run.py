"""``rgb run``: build every setting of the paper, generate through the runner, score, judge.

The settings follow the paper's tables (Chen et al., AAAI 2024, Tables 1-6) and the RGB
readme:

* default data (``en.json``, ``zh.json``, ``*_refine.json``): accuracy at each noise rate
  (noise robustness) and, at noise 1.0, the rejection rate Rej (``all_rate`` at noise 1.0) and,
  with a judge, Rej*;
* ``_int`` data: accuracy at noise 0, 0.2 and 0.4 (information integration);
* ``_fact`` data: Acc (no documents: ``passage_num 0``), Acc_doc (counterfactual documents at
  noise 0, correct rate 0), ED (``fact_check_rate``), CR (``correct_rate``) and, with a judge,
  ED* and CR* (fact_evalue.py).

All calls go through :func:`ragmeter.runner.run_requests` (cache, resume, replay); a failed call
makes its item ``unscored`` with the runner's reason, counted in the coverage of its setting.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.errors import ConfigError
from ragmeter.llm.base import Backend, Request
from ragmeter.metrics import qa_rgb
from ragmeter.records import Coverage, ItemResult, Signature
from ragmeter.runner import Outcome, RunnerConfig, run_requests
from ragmeter.store import Store
from ragmeter.suites.rgb.build import BuildConfig, build_rows
from ragmeter.suites.rgb.data import COMPONENT, RgbDataset
from ragmeter.suites.rgb.judge import (
    JUDGE_METHODS,
    judge_record,
    judge_request,
    parse_fact,
    parse_reject,
)
from ragmeter.suites.rgb.prompts import JudgePrompts, RgbPrompts
from ragmeter.suites.rgb.scoring import (
    METRIC_VERSION,
    Prediction,
    RgbScore,
    score_predictions,
    signature_for,
)

__all__ = ["RgbRunConfig", "Setting", "RgbRunResult", "plan_settings", "generation_requests",
           "run_rgb"]

PAPER_NOISE_RATES = (0.0, 0.2, 0.4, 0.6, 0.8)
PAPER_INT_NOISE_RATES = (0.0, 0.2, 0.4)


@dataclass(frozen=True)
class RgbRunConfig:
    """Options of a run.  Defaults follow evalue.py (temperature 0.7, 5 passages, seed 2333)."""

    noise_rates: tuple[float, ...] = PAPER_NOISE_RATES
    int_noise_rates: tuple[float, ...] = PAPER_INT_NOISE_RATES
    rejection: bool = True  # add noise 1.0 for default data
    passage_num: int = 5
    correct_rate: float = 0.0
    seed: int = 2333
    temperature: float = 0.7
    max_tokens: int = 256
    mode: str = "strict"
    judge: bool = False
    judge_method: str = "auto"  # auto: choice for the local backend, text otherwise
    limit: int | None = None  # only the first N instances of each file

    def __post_init__(self) -> None:
        if self.judge_method not in (*JUDGE_METHODS, "auto"):
            raise ConfigError(f"rgb: unknown judge method {self.judge_method!r}. "
                              "Fix: use auto, text or choice.")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"rgb: --limit must be at least 1, got {self.limit}.")

    def params(self) -> dict[str, Any]:
        """Sampling parameters of the generation calls (they enter the cache key)."""
        out: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        if self.temperature > 0:
            out["seed"] = self.seed
        return out


@dataclass(frozen=True)
class Setting:
    """One evalue.py invocation: a data file at one build configuration, with its role."""

    dataset: RgbDataset
    build: BuildConfig
    role: str  # noise | rejection | integration | fact_doc | fact_nodoc

    @property
    def name(self) -> str:
        return f"{self.dataset.name}/{self.build.label()}"


def plan_settings(datasets: Sequence[RgbDataset], config: RgbRunConfig) -> list[Setting]:
    """The settings of the paper's tables for each data file (see module docstring)."""
    out: list[Setting] = []
    base = {"passage_num": config.passage_num, "seed": config.seed}
    for ds in datasets:
        if ds.kind == "default":
            rates = [r for r in dict.fromkeys(config.noise_rates) if r != 1.0]
            for r in rates:
                out.append(Setting(ds, BuildConfig(noise_rate=r, **base), "noise"))
            if config.rejection or 1.0 in config.noise_rates:
                out.append(Setting(ds, BuildConfig(noise_rate=1.0, **base), "rejection"))
        elif ds.kind == "int":
            for r in dict.fromkeys(config.int_noise_rates):
                out.append(Setting(ds, BuildConfig(noise_rate=r, **base), "integration"))
        else:
            out.append(Setting(ds, BuildConfig(noise_rate=0.0, correct_rate=config.correct_rate,
                                               **base), "fact_doc"))
            out.append(Setting(ds, BuildConfig(noise_rate=0.0, passage_num=0,
                                               seed=config.seed), "fact_nodoc"))
    return out


def _instances(setting: Setting, config: RgbRunConfig) -> Any:
    insts = setting.dataset.instances
    return insts[:config.limit] if config.limit else insts


def generation_requests(settings: Sequence[Setting], prompts: RgbPrompts,
                        config: RgbRunConfig) -> list[Request]:
    """One chat request per (setting, instance); ids ``<data>/<setting>/<instance id>``."""
    params = config.params()
    out: list[Request] = []
    for s in settings:
        n = len(_instances(s, config))
        for k, row in enumerate(build_rows(s.dataset, prompts, s.build)):
            if k >= n:
                break
            out.append(Request.chat(f"{s.name}/{row['id']}", row["messages"], params=params))
    return out


@dataclass
class RgbRunResult:
    """Everything a report needs: per-setting scores, judged rates, tables, items."""

    scores: list[tuple[Setting, RgbScore]]
    judged: dict[str, dict[str, Any]]  # setting name -> judged rates
    tables: dict[str, Any]
    signature: str
    model: dict[str, Any]
    config: RgbRunConfig
    prompts_version: str
    judge_info: dict[str, Any] | None
    notes: list[str] = field(default_factory=list)
    judge_items: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict, repr=False)

    def coverage(self) -> Coverage:
        items: list[ItemResult] = []
        for _, sc in self.scores:
            for it in sc.items:
                items.append(ItemResult(id=str(it["id"])) if it["status"] == "ok" else
                             ItemResult.unscored(str(it["id"]), it["reason"]))
        return Coverage.of(items)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": 1, "family": COMPONENT, "kind": "run",
            "signature": self.signature, "model": self.model,
            "prompts": self.prompts_version, "judge": self.judge_info,
            "config": {"noise_rates": list(self.config.noise_rates),
                       "int_noise_rates": list(self.config.int_noise_rates),
                       "passage_num": self.config.passage_num,
                       "correct_rate": self.config.correct_rate, "seed": self.config.seed,
                       "temperature": self.config.temperature,
                       "max_tokens": self.config.max_tokens, "mode": self.config.mode,
                       "limit": self.config.limit},
            "tables": self.tables,
            "coverage": self.coverage().model_dump(),
            "settings": [{"setting": s.name, "role": s.role, **sc.to_json(),
                          **({"judged": self.judged[s.name]} if s.name in self.judged else {})}
                         for s, sc in self.scores],
            "notes": self.notes,
        }

    def iter_items(self) -> Iterator[dict[str, Any]]:
        for s, sc in self.scores:
            judged = self.judge_items.get(s.name, {})
            for it in sc.items:
                row = {"dataset": s.dataset.name, "setting": s.build.label(), "role": s.role,
                       "noise_rate": s.build.noise_rate, **it}
                if str(it["id"]) in judged:
                    row["judge"] = judged[str(it["id"])]
                yield row


def _predictions(setting: Setting, outcomes: dict[str, Outcome],
                 config: RgbRunConfig) -> dict[str, Prediction]:
    preds: dict[str, Prediction] = {}
    for inst in _instances(setting, config):
        o = outcomes[f"{setting.name}/{inst.id}"]
        if o.ok and o.response is not None:
            preds[inst.key] = Prediction(o.response.text)
        else:
            preds[inst.key] = Prediction(None, o.reason or "call_failed", o.detail)
    return preds


def _limited(ds: RgbDataset, config: RgbRunConfig) -> RgbDataset:
    if not config.limit:
        return ds
    return RgbDataset(path=ds.path, name=ds.name, kind=ds.kind, lang=ds.lang,
                      instances=ds.instances[:config.limit])


def run_rgb(datasets: Sequence[RgbDataset], prompts: RgbPrompts, backend: Backend,
            store: Store | None, runner: RunnerConfig, config: RgbRunConfig, *,
            judge_prompts: JudgePrompts | None = None,
            judge_backend: Backend | None = None) -> RgbRunResult:
    """Build, generate, score and (with ``config.judge``) judge every setting."""
    datasets = [_limited(d, config) for d in datasets]
    settings = plan_settings(datasets, config)
    requests = generation_requests(settings, prompts, config)
    outcomes = {o.request.id: o for o in run_requests(requests, backend, store, runner)}
    identity = backend.identity()
    model = str(identity.get("model", backend.name))
    scores: list[tuple[Setting, RgbScore]] = []
    for s in settings:
        sig = signature_for(s.dataset, s.build, mode=config.mode, prompts=prompts.version,
                            model=f"{backend.name}:{model}")
        sc = score_predictions(s.dataset, _predictions(s, outcomes, config), s.build,
                               mode=config.mode, signature=sig)
        scores.append((s, sc))
    judged: dict[str, dict[str, Any]] = {}
    judge_items: dict[str, dict[str, dict[str, Any]]] = {}
    judge_info = None
    if config.judge:
        jb = judge_backend or backend
        method = config.judge_method
        if method == "auto":
            method = "choice" if jb.name == "local" else "text"
        jp = judge_prompts
        if jp is None:
            from ragmeter.suites.rgb.prompts import load_judge_prompts
            jp = load_judge_prompts(None)
        jmodel = str(jb.identity().get("model", jb.name))
        judge_info = {"backend": jb.name, "model": jmodel, "method": method,
                      "prompts": jp.version}
        judged, judge_items = _judge(scores, jp, jb, store, runner, method)
    tables = _tables(scores, judged, config)
    settings_sig: dict[str, Any] = {
        "model": f"{backend.name}:{model}", "prompts": prompts.version,
        "temp": config.temperature, "max_tokens": config.max_tokens,
        "passages": config.passage_num, "seed": config.seed,
        "labels": "strict" if config.mode == "strict" else "lenient(not-paper)",
        "limit": config.limit,
    }
    if judge_info:
        settings_sig["judge"] = (f"{judge_info['backend']}:{judge_info['model']}"
                                 f"|judge-method:{judge_info['method']}"
                                 f"|judge-prompts:{judge_info['prompts']}")
    signature = Signature.make(COMPONENT, METRIC_VERSION, settings_sig).render()
    notes = []
    if config.mode == "lenient":
        notes.append("lenient labels are NOT the paper's metric and are not comparable with "
                     "published RGB numbers; the strict numbers are the paper's.")
    if config.limit:
        notes.append(f"only the first {config.limit} instance(s) of each file were run.")
    return RgbRunResult(scores=scores, judged=judged, tables=tables, signature=signature,
                        model=identity, config=config, prompts_version=prompts.version,
                        judge_info=judge_info, notes=notes, judge_items=judge_items)


def _judge(scores: list[tuple[Setting, RgbScore]], jp: JudgePrompts, backend: Backend,
           store: Store | None, runner: RunnerConfig, method: str,
           ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, dict[str, Any]]]]:
    """Rej* on the noise-1.0 predictions of default data, ED*/CR* on Acc_doc predictions."""
    todo: list[tuple[Setting, RgbScore, str]] = []
    for s, sc in scores:
        if s.role == "rejection":
            todo.append((s, sc, "reject"))
        elif s.role == "fact_doc":
            todo.append((s, sc, "fact"))
    requests: list[Request] = []
    for s, sc, kind in todo:
        queries = {i.key: i.query for i in s.dataset.instances}
        template = jp.reject if kind == "reject" else jp.fact
        for it in sc.items:
            if it["status"] == "ok":
                requests.append(judge_request(f"judge/{s.name}/{it['id']}", template,
                                              queries[str(it["id"])], it["prediction"], method))
    jrunner = dataclasses.replace(runner, description="judge calls")
    outcomes = {o.request.id: o for o in run_requests(requests, backend, store, jrunner)}
    judged: dict[str, dict[str, Any]] = {}
    items: dict[str, dict[str, dict[str, Any]]] = {}
    for s, sc, kind in todo:
        flags: list[bool] = []
        labels: list[tuple[int, ...]] = []
        per: dict[str, dict[str, Any]] = {}
        reasons: dict[str, int] = {}
        for it in sc.items:
            key = str(it["id"])
            if it["status"] != "ok":
                reasons["no_generation"] = reasons.get("no_generation", 0) + 1
                continue
            o = outcomes[f"judge/{s.name}/{it['id']}"]
            if not o.ok or o.response is None:
                reasons[o.reason or "call_failed"] = reasons.get(o.reason or "call_failed", 0) + 1
                per[key] = {"status": "unscored", "reason": o.reason, "detail": o.detail}
                continue
            flag = (parse_reject if kind == "reject" else parse_fact)(o.response, method)
            flags.append(flag)
            labels.append(tuple(it["labels"]))
            per[key] = judge_record(o.response, flag, method)
        total = len(sc.items)
        cov = {"total": total, "scored": len(flags), "unscored": total - len(flags),
               "reasons": dict(sorted(reasons.items()))}
        if kind == "reject":
            judged[s.name] = {"reject_rate_judged": qa_rgb.judge_reject_rate(flags),
                              "rejected": sum(flags), "n": len(flags), "coverage": cov}
        else:
            judged[s.name] = {"ed_judged": qa_rgb.judge_reject_rate(flags),
                              "cr_judged": qa_rgb.judged_correct_rate(flags, labels),
                              "detected": sum(flags), "n": len(flags), "coverage": cov}
        items[s.name] = per
    return judged, items


def _tables(scores: list[tuple[Setting, RgbScore]], judged: dict[str, dict[str, Any]],
            config: RgbRunConfig) -> dict[str, Any]:
    """The paper's tables as plain data (read by the console and HTML reports)."""
    noise: dict[str, dict[str, Any]] = {}
    rejection: dict[str, dict[str, Any]] = {}
    integration: dict[str, dict[str, Any]] = {}
    fact: dict[str, dict[str, Any]] = {}
    lenient: dict[str, dict[str, Any]] = {}
    for s, sc in scores:
        ds = s.dataset.name
        acc = sc.metrics["accuracy"]
        if s.role == "noise":
            noise.setdefault(ds, {})[str(s.build.noise_rate)] = acc
        elif s.role == "rejection":
            row = {"rej": acc, "rej_judged": judged.get(s.name, {}).get("reject_rate_judged")}
            rejection[ds] = row
        elif s.role == "integration":
            integration.setdefault(ds, {})[str(s.build.noise_rate)] = acc
        elif s.role == "fact_doc":
            row = fact.setdefault(ds, {})
            row.update({"acc_doc": acc, "ed": sc.metrics.get("fact_check_rate"),
                        "cr": sc.metrics.get("correct_rate")})
            j = judged.get(s.name, {})
            row.update({"ed_judged": j.get("ed_judged"), "cr_judged": j.get("cr_judged")})
        elif s.role == "fact_nodoc":
            fact.setdefault(ds, {})["acc"] = acc
        if sc.lenient is not None:
            lenient[s.name] = {"accuracy": sc.lenient["accuracy"],
                               "strict_accuracy": acc, "flips": sc.lenient["flips"]}
    out: dict[str, Any] = {"noise_robustness": noise, "rejection": rejection,
                           "integration": integration, "counterfactual": fact}
    if config.mode == "lenient":
        out["lenient"] = lenient
    return out
