"""``rubric score``: aggregate graded items into RAGaliq's table, honestly.

Input: one or more judged files.  Each row is one graded answer with a ``score`` (an integer
0..5; CSV text and whole floats such as ``4.0`` are accepted) or, when it has no score, a raw
judge ``reply`` that is parsed with RAGaliq's ``[RESULT]`` rule.  RAGaliq's own logs
(``eval_res_questions_<lang>_<reader>_<embedder>_<reranker>_<lang>.json``) are read as they are;
their file name supplies ``lang``, ``model_name``, ``embedder_name`` and ``reranker_name`` when
the rows lack them, so ``--by lang`` over several logs gives results.md's rows.

A row whose grade cannot be read is *unscored* with a reason and left out of the aggregate,
which is what RAGaliq does silently (its ``judge()`` drops the item); the coverage line says how
many.  Rows written by ``rubric judge --repeats K`` carry ``repeat``: the table aggregates
repeat 0 (a single judge run, comparable with RAGaliq) and a stability section covers all
repeats.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter import stats
from ragmeter.errors import InputError
from ragmeter.io import FieldMap, Row, as_text, is_blank, iter_rows
from ragmeter.rubric import _metrics as rubric
from ragmeter.rubric._metrics import ragaliq_file_meta
from ragmeter.signature import Signature

__all__ = ["RubricConfig", "RubricResult", "GradedItem", "score_files", "grade_from_row",
           "ragaliq_file_meta"]

COMPONENT = "rubric"


@dataclass(frozen=True)
class RubricConfig:
    """Options of ``rubric score``."""

    by: tuple[str, ...] = ()
    ci: bool = True
    n_resamples: int = stats.DEFAULT_RESAMPLES
    seed: int = stats.DEFAULT_SEED
    field_map: FieldMap = field(default_factory=FieldMap)

    def signature(self, judges: Sequence[str],
                  extra: Mapping[str, Any] | None = None) -> Signature:
        """The signature of the table; ``extra``: what else shaped the grades (a judged
        verb's scoring and prompt, ``rubric run``'s reader and retrieval)."""
        # The weights and the exponent come from the table (one definition): a changed weight
        # is a changed signature.  Spelled as before the table existed, so the signature of
        # RAGaliq's own weights is unchanged: weights:5:1,4:.8,...|ws:mean^2.
        weighted = rubric.METRICS.get("weighted_score").constants
        settings: dict[str, Any] = {"weights": rubric.weights_setting(weighted["weights"]),
                                    "ws": f"mean^{weighted['exponent']}",
                                    "unparsed": "unscored"}
        if judges:
            settings["judge"] = ",".join(sorted(set(judges)))
        if self.ci:
            settings["bootstrap"] = f"{self.n_resamples}@seed{self.seed}"
        settings.update(extra or {})
        return Signature.make(COMPONENT, rubric.METRIC_VERSION, settings)


@dataclass(frozen=True)
class GradedItem:
    """One graded answer (``grade`` None means unscored, with ``reason``)."""

    id: str
    group: tuple[str, ...]
    repeat: int
    grade: int | None
    reason: str | None = None
    detail: str | None = None
    expected_grade: float | None = None
    grade_probs: dict[int, float] | None = None
    judge: str | None = None
    language_consistency: float | None = None

    def to_dict(self, by: Sequence[str]) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, **dict(zip(by, self.group, strict=True)),
                               "repeat": self.repeat,
                               "status": "ok" if self.grade is not None else "unscored",
                               "grade": self.grade}
        if self.grade is None:
            out["reason"], out["detail"] = self.reason, self.detail
        if self.expected_grade is not None:
            out["expected_grade"] = self.expected_grade
        if self.language_consistency is not None:
            out["language_consistency_score"] = self.language_consistency
        return out


def _grade_value(row: Row, name: str, value: Any) -> tuple[int | None, str | None, str | None]:
    """An integer grade 0..5 from a cell, or (None, reason, detail)."""
    if is_blank(value):
        return None, "missing_score", f"{name} is empty at {row.unit} {row.number}"
    if isinstance(value, bool) or isinstance(value, (list, dict)):
        return None, "not_an_integer", f"{name} is {value!r}"
    num: float
    if isinstance(value, str):
        try:
            num = float(value.strip())
        except ValueError:
            return None, "not_an_integer", f"{name} is {value!r}"
    elif isinstance(value, (int, float)):
        num = float(value)
    else:
        return None, "not_an_integer", f"{name} has type {type(value).__name__}"
    if not math.isfinite(num) or num != int(num):
        return None, "not_an_integer", f"{name} is {value!r}"
    if int(num) not in rubric.WEIGHTS:
        return None, "out_of_range", f"{name} is {int(num)}, expected 0..5"
    return int(num), None, None


def grade_from_row(row: Row) -> tuple[int | None, str | None, str | None]:
    """The grade of a row: its ``score`` column, else its parsed judge ``reply``."""
    if "score" in row.data and not is_blank(row.data["score"]):
        return _grade_value(row, "score", row.data["score"])
    if row.data.get("status") == "unscored":
        reason = row.data.get("reason")
        return None, str(reason or "unscored"), str(row.data.get("detail") or "")
    if "reply" in row.data and not is_blank(row.data["reply"]):
        parsed = rubric.parse_result_strict(as_text(row, "reply", row.data["reply"],
                                                    component=COMPONENT))
        return parsed.grade, parsed.reason, parsed.detail
    if "score" in row.data or "reply" in row.data or "status" in row.data:
        reason = row.data.get("reason") if not is_blank(row.data.get("reason")) else None
        return None, str(reason or "missing_score"), str(row.data.get("detail") or
                                                         "no score and no judge reply")
    found = ", ".join(sorted(map(str, row.data))[:15]) or "none"
    raise row.error(f"is missing (required). Found fields: {found}.", component=COMPONENT,
                    field="score", fix="add a score column (0..5) or a reply column with the "
                                       "judge's text, or map yours with --field score=COLUMN.")


def _is_number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def _probs(row: Row) -> tuple[dict[int, float] | None, float | None]:
    raw = row.data.get("grade_probs")
    probs = None
    if isinstance(raw, dict):
        try:
            probs = rubric.grade_distribution({str(k): float(v) for k, v in raw.items()})
        except (TypeError, ValueError):
            probs = None
    eg = row.data.get("expected_grade")
    exp = None
    if isinstance(eg, (int, float)) and not isinstance(eg, bool) and math.isfinite(eg):
        exp = float(eg)
    elif probs is not None:
        exp = math.fsum(g * p for g, p in probs.items())
    return probs, exp


def _source_meta(source: Any) -> dict[str, str]:
    """``file`` (and RAGaliq's run metadata from a log's name) for a path; a label otherwise."""
    from ragmeter.io import is_path, source_label

    if is_path(source):
        meta = ragaliq_file_meta(source)
        meta["file"] = Path(source).name
        return meta
    return {"file": source_label(source)}


def _iter_items(sources: Sequence[Any], config: RubricConfig) -> Iterable[GradedItem]:
    for source in sources:
        meta = _source_meta(source)
        for row in iter_rows(source, component=COMPONENT, field_map=config.field_map):
            data = row.data
            group: list[str] = []
            for col in config.by:
                value = data.get(col, meta.get(col))
                if is_blank(value):
                    raise row.error(
                        f"is missing; --by {col} needs it on every row.", component=COMPONENT,
                        field=col, fix=f"add a {col} column, map one with --field {col}=COLUMN, "
                                       "or group by another column.")
                group.append(str(value))
            rep_raw = data.get("repeat", 0)
            try:
                repeat = int(rep_raw) if not is_blank(rep_raw) else 0
            except (TypeError, ValueError):
                raise row.error(f"is {rep_raw!r}, expected an integer.", component=COMPONENT,
                                field="repeat", fix="repeat counts 0, 1, 2, ...") from None
            item_id = data.get("id", data.get("question_id"))
            if is_blank(item_id):
                item_id = f"{meta['file']}:{row.number}"
            grade, reason, detail = grade_from_row(row)
            probs, exp = _probs(row)
            judge = data.get("judge_model")
            lcs = data.get("language_consistency_score")
            yield GradedItem(id=str(item_id), group=tuple(group), repeat=repeat, grade=grade,
                             reason=reason, detail=detail, expected_grade=exp,
                             grade_probs=probs, judge=str(judge) if judge else None,
                             language_consistency=float(lcs) if lcs is not None and _is_number(lcs)
                             else None)


# The numbers of a group that summary["metrics"] carries (as before the table existed).
_HEADLINE = (*rubric.RESULTS_COLUMNS, "expected_grade_mean", "language_consistency_mean")


@dataclass
class RubricResult:
    """Per-group RAGaliq rows, coverage, CIs and (with repeats) judge stability."""

    by: tuple[str, ...]
    groups: list[dict[str, Any]]
    coverage: dict[str, Any]
    signature: str
    notes: list[str] = field(default_factory=list)
    items: list[GradedItem] = field(default_factory=list, repr=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema_version": 1, "family": COMPONENT,
                               "signature": self.signature, "by": list(self.by),
                               "groups": self.groups, "coverage": self.coverage}
        # The headline numbers per group ("all" without --by), as every family's summary
        # carries them for Result tables, ragmeter.testing and ragmeter gate.
        metrics: dict[str, Any] = {}
        cis: dict[str, Any] = {}
        for g in self.groups:
            label = " ".join(str(g[c]) for c in self.by) or "all"
            metrics[label] = {k: g.get(k) for k in _HEADLINE if k in g}
            metrics[label]["n"] = g["n"]
            if g.get("ci95"):
                cis[label] = dict(g["ci95"])
        out["metrics"] = metrics
        if cis:
            out["ci95"] = cis
        if self.notes:
            out["notes"] = self.notes
        return out

    def iter_items(self) -> Iterable[dict[str, Any]]:
        for item in self.items:
            yield item.to_dict(self.by)


def _ci(values: Sequence[float], config: RubricConfig) -> list[float] | None:
    interval = stats.bootstrap_ci(values, n_resamples=config.n_resamples, seed=config.seed)
    return list(interval) if interval else None


def _squared(interval: list[float] | None) -> list[float] | None:
    """An interval of the mean weight as an interval of the weighted score (the map is
    monotone on [0, 1])."""
    return [rubric.weighted_from_mean(b) for b in interval] if interval else None


def summarize_group(items: Sequence[GradedItem], config: RubricConfig) -> dict[str, Any]:
    """RAGaliq's row for one group, plus coverage, CIs, expected-grade and stability figures."""
    first = [i for i in items if i.repeat == 0] or list(items)
    grades = [i.grade for i in first if i.grade is not None]
    summary = rubric.summarize(grades).to_dict()
    reasons: dict[str, int] = {}
    for i in first:
        if i.grade is None:
            reasons[i.reason or "unknown"] = reasons.get(i.reason or "unknown", 0) + 1
    out: dict[str, Any] = dict(summary)
    out["coverage"] = {"total": len(first), "scored": len(grades),
                       "unscored": len(first) - len(grades), "reasons": dict(sorted(reasons.items()))}
    if config.ci and grades:
        weights = [rubric.grade_weight(g) for g in grades]
        w_ci = _ci(weights, config)
        nonzero = [float(g) for g in grades if g != 0]
        out["ci95"] = {
            # (mean weight)^2 is monotone on [0, 1]: square the interval of the mean weight.
            "weighted_score": _squared(w_ci),
            "mean_grade": _ci(nonzero, config) if nonzero else None,
            "percentage_with_zero": _ci([g * 20.0 for g in grades], config),
        }
    exp = [i.expected_grade for i in first if i.grade is not None and i.expected_grade is not None]
    if exp:
        out["expected_grade_mean"] = stats.mean(exp)
        dists = [i.grade_probs for i in first if i.grade is not None and i.grade_probs]
        if dists:
            ew = [rubric.expected_weight(d) for d in dists]
            out["expected_weighted_score"] = rubric.weighted_from_mean(math.fsum(ew) / len(ew))
    lcs = [i.language_consistency for i in first if i.language_consistency is not None]
    if lcs:
        # RAGaliq logs a language_consistency_score per answer; ragmeter's rubric run computes
        # its own (lingua confidence).  Shown beside the grades, over answers that have one.
        out["language_consistency_mean"] = stats.mean(lcs)
        out["language_consistency_n"] = len(lcs)
    repeats = sorted({i.repeat for i in items})
    if len(repeats) > 1:
        out["stability"] = _stability(items, repeats, config)
    return out


def _stability(items: Sequence[GradedItem], repeats: list[int],
               config: RubricConfig) -> dict[str, Any]:
    by_item: dict[str, list[int]] = {}
    per_repeat: dict[int, list[int]] = {r: [] for r in repeats}
    for i in items:
        if i.grade is not None:
            by_item.setdefault(i.id, []).append(i.grade)
            per_repeat[i.repeat].append(i.grade)
    from ragmeter.stats._stability import repeat_agreement

    st = rubric.repeat_stability(by_item, len(repeats))
    ws = {str(r): rubric.weighted_score(g) for r, g in per_repeat.items()}
    present = [v for v in ws.values() if v is not None]
    out: dict[str, Any] = st.to_dict()
    # issue 15 item 7: flip rate, per-item agreement and Fleiss' kappa (repeats as raters)
    agree = repeat_agreement(by_item, len(repeats))
    out.update({k: agree[k] for k in ("flip_rate", "mean_agreement", "fleiss_kappa",
                                      "fleiss_items")})
    out["weighted_score_by_repeat"] = ws
    out["weighted_score_range"] = [min(present), max(present)] if present else None
    # CI of the aggregate over items, each item's grades averaged over its repeats.
    item_weights = [math.fsum(rubric.grade_weight(g) for g in gs) / len(gs)
                    for gs in by_item.values()]
    ci = _ci(item_weights, config) if item_weights else None
    out["weighted_score_all_repeats"] = (
        rubric.weighted_from_mean(math.fsum(item_weights) / len(item_weights))
        if item_weights else None)
    out["weighted_score_all_repeats_ci95"] = _squared(ci)
    return out


def score_items(items: Sequence[GradedItem], config: RubricConfig) -> RubricResult:
    """Aggregate graded items per group (see module docstring)."""
    groups: dict[tuple[str, ...], list[GradedItem]] = {}
    for item in items:
        groups.setdefault(item.group, []).append(item)
    rows: list[dict[str, Any]] = []
    for key, members in groups.items():
        row: dict[str, Any] = dict(zip(config.by, key, strict=True))
        row.update(summarize_group(members, config))
        rows.append(row)
    total = sum(r["coverage"]["total"] for r in rows)
    scored = sum(r["coverage"]["scored"] for r in rows)
    reasons: dict[str, int] = {}
    for r in rows:
        for k, v in r["coverage"]["reasons"].items():
            reasons[k] = reasons.get(k, 0) + v
    notes = []
    if total > scored:
        notes.append(f"{total - scored} item(s) have no readable grade and are left out of the "
                     "aggregates (RAGaliq drops them silently); see --items for reasons.")
    judges = [i.judge for i in items if i.judge]
    return RubricResult(
        by=config.by, groups=rows,
        coverage={"total": total, "scored": scored, "unscored": total - scored,
                  "reasons": dict(sorted(reasons.items()))},
        signature=config.signature(judges).render(), notes=notes, items=list(items))


def score_files(sources: Sequence[Any], config: RubricConfig) -> RubricResult:
    """Read judged sources (paths, or in-memory rows as :func:`ragmeter.io.iter_rows` takes)
    and aggregate them (see module docstring)."""
    if not sources:
        raise InputError("no judged file was given.", component=COMPONENT,
                         fix="give one or more files: ragmeter rubric score JUDGED.jsonl")
    return score_items(list(_iter_items(sources, config)), config)
