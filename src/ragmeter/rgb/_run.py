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

All calls go through :func:`ragmeter.runner._run.run_requests` (cache, resume, replay); a failed call
makes its item ``unscored`` with the runner's reason, counted in the coverage of its setting.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragmeter.backends._types import Backend, Request
from ragmeter.errors import ConfigError
from ragmeter.judges._spend import add_usage, usage_of
from ragmeter.rgb._build import BuildConfig, build_rows
from ragmeter.rgb._data import COMPONENT, RgbDataset
from ragmeter.rgb._judged import (
    JUDGE_METHODS,
    JudgeTask,
    judge_requests,
    judge_signature,
    judge_tasks,
    resolve_method,
)
from ragmeter.rgb._metrics import (
    METRICS,
    ROLE_METRICS,
    TABLE_COLUMNS,
    Rate,
    metric_version,
    setting_rates,
)
from ragmeter.rgb._prompts import JudgePrompts, RgbPrompts
from ragmeter.rgb._scoring import (
    Prediction,
    RgbScore,
    mode_label,
    score_predictions,
    signature_for,
)
from ragmeter.runner._run import Outcome, RunnerConfig, run_requests
from ragmeter.runner._store import Store

if TYPE_CHECKING:  # the run-record schema loads after the first call (issue 26.5)
    from ragmeter.runs._schema import Coverage

__all__ = ["RgbRunConfig", "Setting", "RgbRunResult", "plan_settings", "generation_requests",
           "run_rgb", "run_signature", "judge_tasks_for", "judge_info_for",
           "dry_run_judge_requests", "dry_run_judge_info"]

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
    judge_method: str = "auto"  # see suites/rgb/judged.py: resolve_method
    limit: int | None = None  # only the first N instances of each file
    repeats: int = 1  # judge calls per judged item (--repeats; the answers are generated once)

    def __post_init__(self) -> None:
        if self.judge_method not in JUDGE_METHODS:
            raise ConfigError(f"rgb: unknown judge method {self.judge_method!r}. "
                              f"Fix: use one of {', '.join(JUDGE_METHODS)}.")
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
    alarms: list[dict[str, Any]] = field(default_factory=list)
    # generation usage per request id "<setting>/<instance id>" (ragmeter.judges._spend)
    usage: dict[str, dict[str, int]] = field(default_factory=dict, repr=False)

    def coverage(self) -> Coverage:
        from ragmeter.runs._schema import Coverage, ItemResult

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
            **({"stability": {k: v["stability"] for k, v in self.judged.items()
                              if "stability" in v}}
               if any("stability" in v for v in self.judged.values()) else {}),
            **({"alarms": self.alarms} if self.alarms else {}),
        }

    def iter_items(self) -> Iterator[dict[str, Any]]:
        for s, sc in self.scores:
            judged = self.judge_items.get(s.name, {})
            for it in sc.items:
                row = {"dataset": s.dataset.name, "setting": s.build.label(), "role": s.role,
                       "noise_rate": s.build.noise_rate, **it}
                usage = [self.usage.get(f"{s.name}/{it['id']}")]
                if str(it["id"]) in judged:
                    row["judge"] = judged[str(it["id"])]
                    usage.append(row["judge"].get("usage"))
                row["usage"] = add_usage(usage)
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
    alarms: list[dict[str, Any]] = []
    if config.judge:
        jb = judge_backend or backend
        jp = judge_prompts
        if jp is None:
            from ragmeter.rgb._prompts import load_judge_prompts
            jp = load_judge_prompts(None)
        rates = judge_tasks(judge_tasks_for(scores), jp, jb, store, runner,
                            config.judge_method, repeats=config.repeats)
        judge_info = judge_info_for(jb, jp, rates.methods)
        judged, judge_items, alarms = rates.rates, rates.items, rates.alarms
    tables = _tables(scores, judged, config)
    signature = run_signature(f"{backend.name}:{model}", prompts.version, config, judge_info)
    notes = []
    if config.mode != "strict":
        notes.append(f"{config.mode} labels are NOT the paper's metric and are not comparable "
                     "with published RGB numbers; the strict numbers are the paper's.")
    if config.limit:
        notes.append(f"only the first {config.limit} instance(s) of each file were run.")
    return RgbRunResult(scores=scores, judged=judged, tables=tables, signature=signature,
                        model=identity, config=config, prompts_version=prompts.version,
                        judge_info=judge_info, notes=notes, judge_items=judge_items,
                        alarms=alarms, usage={k: usage_of([o]) for k, o in outcomes.items()})


def run_signature(model: str, prompts_version: str, config: RgbRunConfig,
                  judge_info: dict[str, Any] | None) -> str:
    """The signature of a run: model, prompts, sampling, setting, labels and the judge."""
    from ragmeter.runs._schema import Signature

    settings_sig: dict[str, Any] = {
        "model": model, "prompts": prompts_version,
        "temp": config.temperature, "max_tokens": config.max_tokens,
        "passages": config.passage_num, "seed": config.seed,
        "labels": mode_label(config.mode),
        "limit": config.limit,
        "repeats": config.repeats if config.judge and config.repeats > 1 else None,
    }
    if judge_info:
        settings_sig["judge"] = judge_signature(judge_info)
    return Signature.make(COMPONENT, metric_version(), settings_sig).render()


def judge_tasks_for(scores: Sequence[tuple[Setting, RgbScore]]) -> list[JudgeTask]:
    """Rej* on the noise-1.0 predictions of default data, ED*/CR* on Acc_doc predictions."""
    out: list[JudgeTask] = []
    for s, sc in scores:
        if s.role == "rejection":
            out.append(JudgeTask(s.name, "reject", s.dataset, sc))
        elif s.role == "fact_doc":
            out.append(JudgeTask(s.name, "fact", s.dataset, sc))
    return out


def judge_info_for(backend: Backend, prompts: JudgePrompts, methods: dict[str, str]
                   ) -> dict[str, Any]:
    """The judge's identity for results and signatures; ``method`` names each task's method
    when they differ (``reject:detector,fact:text``)."""
    used = sorted(set(methods.values()))
    method = used[0] if len(used) == 1 else ",".join(f"{k}:{v}"
                                                     for k, v in sorted(methods.items()))
    return {"backend": backend.name, "model": str(backend.identity().get("model", backend.name)),
            "method": method or "none", "prompts": prompts.version}


def dry_run_judge_requests(datasets: Sequence[RgbDataset], prompts: RgbPrompts,
                           config: RgbRunConfig, backend: Backend, store: Store | None,
                           judge_prompts: JudgePrompts, judge_backend: Backend,
                           ) -> tuple[list[Request], int]:
    """The judge calls a run would make, for ``--dry-run``: ``(requests, placeholders)``.

    Each judge prompt holds the answer it judges: an answer already in the store is used as
    it is; one not generated yet is stood in by a placeholder of ``max_tokens`` words (" x",
    one token each in the tokenizers ragmeter counts with: 4 characters per token was half
    of that in o200k), tagged with its instance so that no two placeholders are the same call
    (identical placeholders made "12 requests, 1 call": issue 25), so the calls, prompt
    tokens and completion tokens are upper bounds.  ``placeholders`` counts them.
    """
    datasets = [_limited(d, config) for d in datasets]
    settings = [s for s in plan_settings(datasets, config)
                if s.role in ("rejection", "fact_doc")]
    gen = generation_requests(settings, prompts, config)
    identity = backend.identity()
    keys = {r.id: r.cache_key(identity) for r in gen}
    stored = store.get_many(keys.values()) if store is not None else {}
    filler = " x" * config.max_tokens
    missing = 0
    scores: list[tuple[Setting, RgbScore]] = []
    for s in settings:
        preds: dict[str, Prediction] = {}
        for inst in _instances(s, config):
            hit = stored.get(keys[f"{s.name}/{inst.id}"])
            if hit is None:
                missing += 1
            preds[inst.key] = Prediction(hit.text if hit is not None
                                         else f"[{s.name}/{inst.id}]{filler}")
        scores.append((s, score_predictions(s.dataset, preds, s.build)))
    from ragmeter.judges._repeats import repeat_requests

    requests = repeat_requests(judge_requests(judge_tasks_for(scores), judge_prompts,
                                              config.judge_method, judge_backend),
                               config.repeats)
    return requests, missing


def dry_run_judge_info(datasets: Sequence[RgbDataset], config: RgbRunConfig,
                       judge_backend: Backend, judge_prompts: JudgePrompts) -> dict[str, Any]:
    """The judge a run would use (for a dry run's signature): each planned task's method."""
    kinds = {"rejection": "reject", "fact_doc": "fact"}
    methods = {kinds[s.role]: resolve_method(config.judge_method, judge_backend,
                                             kinds[s.role])
               for s in plan_settings(datasets, config) if s.role in kinds}
    return judge_info_for(judge_backend, judge_prompts, methods)


def _cell(rate: Rate) -> dict[str, Any]:
    """n and the Wilson 95% interval of one table cell (issue 15: RGB tables)."""
    return {"n": rate.n, "ci95": rate.ci95}


# the tables keyed by noise rate, and those keyed by column (TABLE_COLUMNS), per setting role
_BY_RATE = {"noise": "noise_robustness", "integration": "integration"}
_BY_COLUMN = {"rejection": "rejection", "fact_doc": "counterfactual",
              "fact_nodoc": "counterfactual"}


def _tables(scores: list[tuple[Setting, RgbScore]], judged: dict[str, dict[str, Any]],
            config: RgbRunConfig) -> dict[str, Any]:
    """The paper's tables as plain data (read by the console and HTML reports).

    ``cells`` holds, for every value of every table, its n and Wilson 95% interval, in the
    same layout (``cells[table][data][column]``).
    """
    values: dict[str, dict[str, dict[str, Any]]] = {
        "noise_robustness": {}, "rejection": {}, "integration": {}, "counterfactual": {}}
    cells: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in values}
    lenient: dict[str, dict[str, Any]] = {}
    refactor: dict[str, dict[str, Any]] = {}
    for s, sc in scores:
        ds = s.dataset.name
        rates = {r.metric: r for r in setting_rates(s.role, sc.metrics, judged.get(s.name))}
        if s.role in _BY_RATE:
            tab, key = _BY_RATE[s.role], str(s.build.noise_rate)
            rate = rates[ROLE_METRICS[s.role][0]]
            values[tab].setdefault(ds, {})[key] = rate.value
            cells[tab].setdefault(ds, {})[key] = _cell(rate)
        else:
            tab = _BY_COLUMN[s.role]
            row = values[tab].setdefault(ds, {})
            # the measured columns first, then the judged ones (None when not judged)
            for key, metric in sorted(TABLE_COLUMNS[tab], key=lambda c: METRICS.get(c[1]).judged):
                if metric in ROLE_METRICS[s.role]:
                    found = rates.get(metric)
                    row[key] = found.value if found is not None else None
                    if found is not None:
                        cells[tab].setdefault(ds, {})[key] = _cell(found)
        if sc.lenient is not None:
            lenient[s.name] = {"accuracy": sc.lenient["accuracy"],
                               "strict_accuracy": sc.metrics["accuracy"],
                               "flips": sc.lenient["flips"]}
        if sc.refactor is not None:
            refactor[s.name] = refactor_row(s.role, sc)
    out: dict[str, Any] = {**values, "cells": cells}
    if config.mode == "lenient":
        out["lenient"] = lenient
    if config.mode == "refactor":
        out["refactor"] = refactor
    return out


def refactor_row(role: str, sc: RgbScore) -> dict[str, Any]:
    """One setting of the refactor table: the paper's rate, the refactor's, and the flips."""
    rf = sc.refactor or {}
    m = sc.metrics
    label = {name: METRICS.get(name).label for name in ("reject_rate", "ed", "cr")}
    if role == "rejection":
        pairs = [(label["reject_rate"], "rejection_rate", m.get("accuracy"),
                  rf.get("rejection_rate"))]
    elif role == "fact_doc":
        pairs = [(label["ed"], "error_detection_rate", m.get("fact_check_rate"),
                  rf.get("error_detection_rate")),
                 (label["cr"], "error_correction_rate", m.get("correct_rate"),
                  rf.get("error_correction_rate"))]
    else:
        pairs = [("accuracy", "accuracy", m.get("accuracy"), rf.get("accuracy"))]
    flips = rf.get("flips") or {}
    return {"n": rf.get("n"), "rates": [
        {"paper": paper, "refactor": name, "strict_value": sv, "refactor_value": rv,
         "gained": (flips.get(name) or {}).get("gained", 0),
         "lost": (flips.get(name) or {}).get("lost", 0)} for paper, name, sv, rv in pairs]}
