"""Scoring multilingual answers exactly as LBRAG's experiment script does.

Per row: EM, F1, RLC and RLC_OK are recomputed from ``gold_answer``/``pred_answer`` (never read
from the file); cost is ``translate_tokens`` when present, else the sum of
``evidence[].metadata.token_count``; CNBE pairs each row with the baseline system's row of the
same ``sample_id``.  Per system: mean and sample std (n-1; 0.0 when n < 2) of each, the keys of
LBRAG's ``metrics.json``.

The scorer streams its input in batches and keeps only compact per-row numbers, so a file of
millions of rows fits in little memory.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.errors import InputError, UnknownNameError
from ragmeter.io import FieldMap, Row, as_number, as_text, is_blank, iter_rows, require, seq_of_dicts
from ragmeter.metrics import stats
from ragmeter.metrics.language import LidRlc, rlc_batch, RLC_OK_THRESHOLD
from ragmeter.metrics.qa import f1_from_normalized
from ragmeter.records import Signature
from ragmeter.text.languages import canonical_language, is_known_language
from ragmeter.text.normalize import normalize_text

__all__ = ["MultilingualConfig", "MultilingualResult", "score_file", "score_rows", "METRIC_KEYS"]

COMPONENT = "multilingual"
METRIC_VERSION = "lbrag-1"
METRIC_KEYS = ("em", "f1", "rlc", "rlc_ok", "cost", "cnbe", "semantic_score")
REQUIRED = ("sample_id", "sample_lang", "system", "gold_answer", "pred_answer")
BATCH = 4096


@dataclass(frozen=True)
class MultilingualConfig:
    """Options of one scoring run.  Defaults reproduce LBRAG; the rest are opt-in."""

    baseline: str | None = "direct"
    baseline_required: bool = False  # True when the user named --baseline explicitly
    ci: bool = False  # 95% bootstrap CIs for every metric
    paired: bool = False  # paired tests of each system against the baseline on F1 and EM
    rlc_lid: bool = False  # language-identification RLC (lingua)
    n_resamples: int = stats.DEFAULT_RESAMPLES
    seed: int = stats.DEFAULT_SEED
    field_map: FieldMap = field(default_factory=FieldMap)

    def signature(self) -> Signature:
        settings: dict[str, Any] = {"norm": "lbrag", "f1": "char:ja,zh,zh_cn,zh_tw",
                                    "rlc": f"script>={RLC_OK_THRESHOLD}",
                                    "baseline": self.baseline or "none"}
        if self.ci or self.paired:
            settings["bootstrap"] = f"{self.n_resamples}@seed{self.seed}"
        if self.rlc_lid:
            settings["rlc_lid"] = "lingua"
        return Signature.make(COMPONENT, METRIC_VERSION, settings)


@dataclass
class _Columns:
    """Compact per-row values of one system, in input order."""

    sample_ids: list[str] = field(default_factory=list)
    langs: list[str] = field(default_factory=list)
    em: list[float] = field(default_factory=list)
    f1: list[float] = field(default_factory=list)
    rlc: list[float] = field(default_factory=list)
    cost: list[float | None] = field(default_factory=list)
    semantic: list[float | None] = field(default_factory=list)
    rlc_lid: list[float | None] = field(default_factory=list)
    places: list[str] = field(default_factory=list)  # "line 17" for error messages


@dataclass
class MultilingualResult:
    """Per-system aggregates plus everything needed to write items and reports."""

    systems: list[str]
    metrics: dict[str, dict[str, float | int | None]]
    coverage: dict[str, Any]
    signature: str
    baseline: str | None
    baseline_f1: float | None
    ci: dict[str, dict[str, list[float] | None]] = field(default_factory=dict)
    paired_tests: dict[str, dict[str, dict[str, float | int | str]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    columns: dict[str, _Columns] = field(default_factory=dict, repr=False)
    cnbe_values: dict[str, list[float | None]] = field(default_factory=dict, repr=False)
    unscored_items: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema_version": 1,
            "family": COMPONENT,
            "signature": self.signature,
            "baseline": self.baseline,
            "baseline_f1": self.baseline_f1,
            "metrics": self.metrics,
            "coverage": self.coverage,
        }
        if self.ci:
            out["ci95"] = self.ci
        if self.paired_tests:
            out["paired_tests"] = self.paired_tests
        if self.notes:
            out["notes"] = self.notes
        return out

    def iter_items(self) -> Iterator[dict[str, Any]]:
        """Per-row results (scored rows by system in input order, then unscored rows)."""
        for system in self.systems:
            cols = self.columns[system]
            cnbe = self.cnbe_values.get(system, [])
            for i, sid in enumerate(cols.sample_ids):
                item: dict[str, Any] = {
                    "sample_id": sid, "system": system, "sample_lang": cols.langs[i],
                    "status": "ok", "em": cols.em[i], "f1": cols.f1[i], "rlc": cols.rlc[i],
                    "rlc_ok": 1.0 if cols.rlc[i] >= RLC_OK_THRESHOLD else 0.0,
                    "cost": cols.cost[i], "cnbe": cnbe[i] if i < len(cnbe) else None,
                    "semantic_score": cols.semantic[i],
                }
                if cols.rlc_lid and cols.rlc_lid[i] is not None:
                    item["rlc_lid"] = cols.rlc_lid[i]
                yield item
        yield from self.unscored_items


# ------------------------------------------------------------------ row validation


@dataclass(frozen=True)
class _Parsed:
    sample_id: str
    lang: str
    system: str
    gold: str
    pred: str | None
    cost: float | None
    semantic: float | None
    place: str


def _row_cost(row: Row) -> float | None:
    tt = row.data.get("translate_tokens")
    if not is_blank(tt):
        return as_number(row, "translate_tokens", tt, component=COMPONENT, lo=0)
    if "evidence" not in row.data:
        return None
    total = 0.0
    for k, ev in enumerate(seq_of_dicts(row.data.get("evidence"))):
        if not isinstance(ev, dict):
            raise row.error(f"evidence[{k}] is not an object.", component=COMPONENT,
                            field="evidence", fix="give a list of objects with metadata.")
        meta = ev.get("metadata") or {}
        if isinstance(meta, dict) and not is_blank(meta.get("token_count")):
            total += as_number(row, f"evidence[{k}].metadata.token_count",
                               meta["token_count"], component=COMPONENT, lo=0)
    return total


def _parse_row(row: Row, fm: FieldMap, lang_ok: dict[str, bool]) -> _Parsed:
    values = {name: require(row, name, component=COMPONENT, field_map=fm) for name in REQUIRED}
    lang_raw = as_text(row, "sample_lang", values["sample_lang"], component=COMPONENT)
    lang = canonical_language(lang_raw)
    known = lang_ok.get(lang)
    if known is None:
        known = lang_ok[lang] = is_known_language(lang)
    if not known:
        raise row.error(f"{lang_raw!r} is not a known language code.", component=COMPONENT,
                        field="sample_lang",
                        fix="use an ISO 639-1 code, optionally with a region: en, de, zh_cn.")
    pred_raw = values["pred_answer"]
    pred = None if pred_raw is None else as_text(row, "pred_answer", pred_raw, component=COMPONENT)
    sem_raw = row.data.get("semantic_score")
    semantic = None if is_blank(sem_raw) else as_number(row, "semantic_score", sem_raw,
                                                        component=COMPONENT)
    unit = "line" if row.unit == "line" else "row"
    return _Parsed(
        sample_id=as_text(row, "sample_id", values["sample_id"], component=COMPONENT),
        lang=lang,
        system=as_text(row, "system", values["system"], component=COMPONENT),
        gold=as_text(row, "gold_answer", values["gold_answer"], component=COMPONENT,
                     allow_none=False),
        pred=pred,
        cost=_row_cost(row),
        semantic=semantic,
        place=f"{unit} {row.number}",
    )


# ------------------------------------------------------------------ scoring


def _score_batch(batch: list[_Parsed], columns: dict[str, _Columns], lid: LidRlc | None,
                 unscored: list[dict[str, Any]]) -> None:
    scored = [p for p in batch if p.pred is not None]
    for p in batch:
        if p.pred is None:
            unscored.append({"sample_id": p.sample_id, "system": p.system,
                             "sample_lang": p.lang, "status": "unscored",
                             "reason": "missing_prediction",
                             "detail": f"pred_answer is null at {p.place}"})
    if not scored:
        return
    rlcs = rlc_batch([p.pred for p in scored], [p.lang for p in scored])  # type: ignore[misc]
    for p, r in zip(scored, rlcs.tolist(), strict=True):
        cols = columns.get(p.system)
        if cols is None:
            cols = columns[p.system] = _Columns()
        pn = normalize_text(p.pred)  # type: ignore[arg-type]
        gn = normalize_text(p.gold)
        cols.sample_ids.append(p.sample_id)
        cols.langs.append(p.lang)
        cols.em.append(1.0 if pn == gn else 0.0)
        cols.f1.append(f1_from_normalized(pn, gn, p.lang))
        cols.rlc.append(r)
        cols.cost.append(p.cost)
        cols.semantic.append(p.semantic)
        cols.places.append(p.place)
        if lid is not None:
            cols.rlc_lid.append(lid.score(p.pred, p.lang))  # type: ignore[arg-type]


def score_rows(rows: Iterable[Row], config: MultilingualConfig,
               source: str = "input") -> MultilingualResult:
    """Score a stream of rows (see module docstring)."""
    fm = config.field_map
    columns: dict[str, _Columns] = {}
    unscored: list[dict[str, Any]] = []
    seen: dict[tuple[str, str], str] = {}
    lang_ok: dict[str, bool] = {}
    batch: list[_Parsed] = []
    parsed_all: list[_Parsed] | None = [] if config.rlc_lid else None
    lid: LidRlc | None = None
    n_rows = 0
    for row in rows:
        p = _parse_row(row, fm, lang_ok)
        n_rows += 1
        key = (p.system, p.sample_id)
        if key in seen:
            raise row.error(
                f"duplicate row for system {p.system!r} and sample_id {p.sample_id!r} "
                f"(first at {seen[key]}).", component=COMPONENT, field="sample_id",
                fix="keep one answer per system and sample.")
        seen[key] = p.place
        if parsed_all is not None:
            parsed_all.append(p)
            continue
        batch.append(p)
        if len(batch) >= BATCH:
            _score_batch(batch, columns, None, unscored)
            batch = []
    if parsed_all is not None:
        lid = LidRlc(sorted({p.lang for p in parsed_all}))
        batch = parsed_all
    if batch:
        _score_batch(batch, columns, lid, unscored)
    del seen
    systems = list(columns)
    for u in unscored:
        if u["system"] not in systems:
            systems.append(u["system"])
            columns[u["system"]] = _Columns()
    return _aggregate(columns, systems, unscored, config, n_rows, lid)


def score_file(path: str | Path, config: MultilingualConfig) -> MultilingualResult:
    """Score an answers file (JSONL, JSON, CSV or Parquet)."""
    rows = iter_rows(path, component=COMPONENT, field_map=config.field_map)
    return score_rows(rows, config, source=str(path))


def _cnbe_for(columns: dict[str, _Columns], systems: list[str], baseline: str,
              ) -> dict[str, list[float | None]]:
    base = columns[baseline]
    base_f1 = dict(zip(base.sample_ids, base.f1, strict=True))
    out: dict[str, list[float | None]] = {}
    for system in systems:
        cols = columns[system]
        if system == baseline:
            out[system] = [0.0] * len(cols.f1)
            continue
        vals: list[float | None] = []
        missing: list[int] = []
        for i, (sid, f1, cost) in enumerate(zip(cols.sample_ids, cols.f1, cols.cost,
                                                strict=True)):
            bf1 = base_f1.get(sid)
            if bf1 is None:
                missing.append(i)
                vals.append(None)
                continue
            vals.append(None if cost is None else (0.0 if cost == 0 else (f1 - bf1) / cost))
        if missing:
            first = missing[0]
            raise InputError(
                f"system {system!r} has {len(missing)} sample_id(s) with no row of the "
                f"baseline system {baseline!r}, first {cols.sample_ids[first]!r} at "
                f"{cols.places[first]}.", component=COMPONENT, field="sample_id",
                fix="give the baseline an answer for every sample, or choose another "
                    "--baseline.")
        out[system] = vals
    return out


def _summ(values: list[float | None]) -> tuple[list[float], float | None, float | None]:
    present = [v for v in values if v is not None]
    return present, stats.mean(present), stats.sample_std(present)


def _aggregate(columns: dict[str, _Columns], systems: list[str],
               unscored: list[dict[str, Any]], config: MultilingualConfig, n_rows: int,
               lid: LidRlc | None) -> MultilingualResult:
    notes: list[str] = []
    baseline = config.baseline
    if baseline is not None and baseline not in columns:
        if config.baseline_required:
            raise UnknownNameError("baseline system", baseline, systems, component=COMPONENT)
        notes.append(f"no system named {baseline!r} in the input: CNBE is not computed "
                     f"(choose one with --baseline).")
        baseline = None
    if baseline is not None and not columns[baseline].sample_ids:
        notes.append(f"the baseline {baseline!r} has no scored row: CNBE is not computed.")
        baseline = None
    cnbe = _cnbe_for(columns, systems, baseline) if baseline else {}
    metrics: dict[str, dict[str, float | int | None]] = {}
    ci: dict[str, dict[str, list[float] | None]] = {}
    rows_without_cost = 0
    for system in systems:
        cols = columns[system]
        per: dict[str, list[float | None]] = {
            "em": list(cols.em), "f1": list(cols.f1), "rlc": list(cols.rlc),
            "rlc_ok": [1.0 if r >= RLC_OK_THRESHOLD else 0.0 for r in cols.rlc],
            "cost": list(cols.cost), "cnbe": cnbe.get(system, [None] * len(cols.em)),
            "semantic_score": list(cols.semantic),
        }
        if lid is not None:
            per["rlc_lid"] = list(cols.rlc_lid)
        rows_without_cost += sum(1 for c in cols.cost if c is None)
        m: dict[str, float | int | None] = {}
        sys_ci: dict[str, list[float] | None] = {}
        for key, vals in per.items():
            present, mu, sd = _summ(vals)
            m[key] = mu
            m[f"{key}_std"] = sd
            if len(present) != len(cols.em):
                m[f"{key}_n"] = len(present)
            if config.ci:
                interval = stats.bootstrap_ci(present, n_resamples=config.n_resamples,
                                              seed=config.seed)
                sys_ci[key] = list(interval) if interval else None
        m["n"] = len(cols.em)
        metrics[system] = m
        if config.ci:
            ci[system] = sys_ci
    if rows_without_cost:
        notes.append(f"{rows_without_cost} row(s) have neither translate_tokens nor evidence: "
                     "their cost and CNBE are not computed and not counted.")
    if lid is not None and lid.unsupported:
        notes.append("rlc_lid: lingua does not know " + ", ".join(lid.unsupported) +
                     "; those rows have no rlc_lid.")
    paired: dict[str, dict[str, dict[str, float | int | str]]] = {}
    if config.paired:
        if baseline is None:
            notes.append("paired tests need a baseline system; none was available.")
        else:
            paired = _paired_tests(columns, systems, baseline, config)
    reasons: dict[str, int] = {}
    for u in unscored:
        reasons[u["reason"]] = reasons.get(u["reason"], 0) + 1
    scored = sum(len(columns[s].em) for s in systems)
    coverage = {"rows": n_rows, "scored": scored, "unscored": n_rows - scored,
                "reasons": reasons}
    base_f1 = metrics[baseline]["f1"] if baseline else None
    return MultilingualResult(
        systems=systems, metrics=metrics, coverage=coverage,
        signature=config.signature().render(), baseline=baseline,
        baseline_f1=base_f1 if isinstance(base_f1, float) else None, ci=ci,
        paired_tests=paired, notes=notes, columns=columns, cnbe_values=cnbe,
        unscored_items=unscored,
    )


def _paired_tests(columns: dict[str, _Columns], systems: list[str], baseline: str,
                  config: MultilingualConfig) -> dict[str, dict[str, dict[str, float | int | str]]]:
    base = columns[baseline]
    index = {sid: i for i, sid in enumerate(base.sample_ids)}
    out: dict[str, dict[str, dict[str, float | int | str]]] = {}
    for system in systems:
        if system == baseline:
            continue
        cols = columns[system]
        pairs = [(i, index[sid]) for i, sid in enumerate(cols.sample_ids) if sid in index]
        if not pairs:
            continue
        res: dict[str, dict[str, float | int | str]] = {}
        for key in ("f1", "em"):
            a = np.array([getattr(cols, key)[i] for i, _ in pairs])
            b = np.array([getattr(base, key)[j] for _, j in pairs])
            boot = stats.paired_bootstrap(a, b, n_resamples=config.n_resamples, seed=config.seed)
            perm = stats.paired_permutation(a, b, seed=config.seed)
            res[key] = {"n": boot.n, "mean_diff": boot.mean_diff, "ci_low": boot.ci_low,
                        "ci_high": boot.ci_high, "p_bootstrap": boot.p_value,
                        "p_permutation": perm.p_value,
                        "significant": "yes" if perm.p_value < 0.05 else "no"}
        out[system] = res
    return out


def _finite(x: float) -> bool:
    return math.isfinite(x)
