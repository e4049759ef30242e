"""``rubric validate``: how well a rubric judge's grades agree with reference grades.

Both files hold graded rows as ``rubric score`` reads them (a ``score`` 0..5, or a judge
``reply`` parsed with RAGaliq's ``[RESULT]`` rule; RAGaliq's own ``eval_res_*.json`` logs as
they are).  Rows are paired by ``id`` when every row of both files has one, else by the
question text (``question`` or RAGaliq's ``instruction``, whitespace-stripped), so the output
of ``rubric judge`` on a RAGaliq log pairs with that log.  Only pairs where both sides have a
grade are compared; the rest are counted in the coverage with a reason
(``unscored_prediction``, ``unscored_reference``, ``no_reference``, ``no_prediction``).

Statistics per group (``--by``) and overall: exact agreement, within-one agreement,
quadratic-weighted kappa, MAE and Spearman, each with a percentile bootstrap CI over items
(:func:`ragmeter.rubric._metrics.agreement`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter import stats
from ragmeter.errors import InputError
from ragmeter.io import FieldMap, Row, is_blank, is_path, iter_rows
from ragmeter.rubric import _metrics as rubric
from ragmeter.rubric._scorer import grade_from_row, ragaliq_file_meta
from ragmeter.runs._schema import Signature

__all__ = ["ValidateConfig", "ValidateResult", "GradeRow", "read_grades", "validate_files",
           "validate_grades"]

COMPONENT = "rubric"


@dataclass(frozen=True)
class ValidateConfig:
    """Options of ``rubric validate``."""

    by: tuple[str, ...] = ()
    on: str = "auto"  # auto | id | question
    ci: bool = True
    n_resamples: int = stats.DEFAULT_RESAMPLES
    seed: int = stats.DEFAULT_SEED
    field_map: FieldMap = field(default_factory=FieldMap)

    def signature(self, judges: Sequence[str]) -> Signature:
        settings: dict[str, Any] = {
            "kappa": rubric.METRICS.get("qwk").constants["weighting"],
            "grades": f"{rubric.GRADES[0]}..{rubric.GRADES[-1]}", "unscored": "excluded"}
        if judges:
            settings["judge"] = ",".join(sorted(set(judges)))
        if self.ci:
            settings["bootstrap"] = f"{self.n_resamples}@seed{self.seed}"
        return Signature.make(COMPONENT, rubric.AGREEMENT_VERSION, settings)


@dataclass(frozen=True)
class GradeRow:
    """One graded row of either file (``grade`` None: unscored, with ``reason``)."""

    id: str | None
    question: str | None
    grade: int | None
    reason: str | None
    meta: dict[str, Any]
    judge: str | None
    where: str
    path: str


def _question(row: Row) -> str | None:
    for name in ("question", "instruction"):
        value = row.data.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def read_grades(source: Any, field_map: FieldMap | None = None) -> list[GradeRow]:
    """Graded rows of one file or in-memory table (repeat 0 only, as ``rubric score``'s
    table)."""
    meta = ragaliq_file_meta(source) if is_path(source) else {}
    out: list[GradeRow] = []
    for row in iter_rows(source, component=COMPONENT, field_map=field_map):
        rep = row.data.get("repeat", 0)
        if not is_blank(rep) and str(rep) != "0":
            continue
        grade, reason, _ = grade_from_row(row)
        rid = row.data.get("id", row.data.get("question_id"))
        judge = row.data.get("judge_model")
        out.append(GradeRow(id=None if is_blank(rid) else str(rid), question=_question(row),
                            grade=grade, reason=reason, meta={**meta, **row.data},
                            judge=str(judge) if judge else None,
                            where=f"{row.unit} {row.number}", path=row.path))
    return out


def _key_field(pred: Sequence[GradeRow], ref: Sequence[GradeRow], on: str) -> str:
    if on != "auto":
        return on
    if all(r.id is not None for r in pred) and all(r.id is not None for r in ref):
        return "id"
    return "question"


def _index(rows: Sequence[GradeRow], key: str) -> dict[str, GradeRow]:
    out: dict[str, GradeRow] = {}
    for r in rows:
        k = r.id if key == "id" else r.question
        if k is None:
            raise InputError(f"{r.where} has no {key} to pair it by.", component=COMPONENT,
                             path=r.path, field=key,
                             fix="give every row an id (or a question), or pair with --on "
                                 "question / --on id.")
        if k in out:
            first = out[k]
            raise InputError(f"{r.where} repeats the {key} of {first.where} of "
                             f"{Path(first.path).name} ({k[:60]!r}).",
                             component=COMPONENT, path=r.path, field=key,
                             fix="give every row its own id, or pair with --on id.")
        out[k] = r
    return out


@dataclass
class ValidateResult:
    """Agreement overall and per group, with coverage of the pairing."""

    by: tuple[str, ...]
    paired_on: str
    overall: dict[str, Any]
    groups: list[dict[str, Any]]
    coverage: dict[str, Any]
    signature: str
    items: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def to_json(self) -> dict[str, Any]:
        metrics: dict[str, Any] = {}
        cis: dict[str, Any] = {}
        for g in [*self.groups, {**self.overall, "_label": "all"}]:
            label = g.get("_label") or " ".join(str(g[c]) for c in self.by) or "all"
            metrics[label] = {k: g[k] for k in (*rubric.AGREEMENT_COLUMNS, "n")}
            cis[label] = g.get("ci95") or {}
        return {"schema_version": 1, "family": COMPONENT, "command": "validate",
                "signature": self.signature, "paired_on": self.paired_on,
                "by": list(self.by), "overall": self.overall, "groups": self.groups,
                "metrics": metrics, "ci95": cis, "coverage": self.coverage}

    def iter_items(self) -> list[dict[str, Any]]:
        return self.items


def _agreement_dict(judge: list[int], ref: list[int], config: ValidateConfig) -> dict[str, Any]:
    a = rubric.agreement(judge, ref, n_resamples=config.n_resamples, seed=config.seed,
                         ci=config.ci).to_dict()
    a["judge_mean"] = stats.mean(judge)
    a["reference_mean"] = stats.mean(ref)
    return a


def validate_grades(pred: Sequence[GradeRow], ref: Sequence[GradeRow],
                    config: ValidateConfig) -> ValidateResult:
    """Pair the rows and compute agreement overall and per group (see module docstring)."""
    key = _key_field(pred, ref, config.on)
    p_idx = _index(pred, key)
    r_idx = _index(ref, key)
    items: list[dict[str, Any]] = []
    reasons: dict[str, int] = {}
    groups: dict[tuple[str, ...], tuple[list[int], list[int]]] = {}
    for k, p in p_idx.items():
        r = r_idx.get(k)
        group: list[str] = []
        for col in config.by:
            value = p.meta.get(col, r.meta.get(col) if r else None)
            if is_blank(value) and r is not None:
                value = r.meta.get(col)
            if is_blank(value):
                raise InputError(f"{p.where} has no {col}; --by {col} needs it on every row.",
                                 component=COMPONENT, path=p.path, field=col,
                                 fix=f"add a {col} column or group by another column.")
            group.append(str(value))
        item: dict[str, Any] = {"key": k, **dict(zip(config.by, group, strict=True)),
                                "grade": p.grade,
                                "reference_grade": r.grade if r else None}
        reason = None
        if r is None:
            reason = "no_reference"
        elif p.grade is None:
            reason = "unscored_prediction"
        elif r.grade is None:
            reason = "unscored_reference"
        if reason:
            reasons[reason] = reasons.get(reason, 0) + 1
            item.update(status="unscored", reason=reason)
        else:
            assert p.grade is not None and r is not None and r.grade is not None
            item.update(status="ok", abs_diff=abs(p.grade - r.grade))
            js, rs = groups.setdefault(tuple(group), ([], []))
            js.append(p.grade)
            rs.append(r.grade)
        items.append(item)
    missing_pred = [k for k in r_idx if k not in p_idx]
    if missing_pred:
        reasons["no_prediction"] = len(missing_pred)
    all_j = [g for js, _ in groups.values() for g in js]
    all_r = [g for _, rs in groups.values() for g in rs]
    rows = []
    for gk, (js, rs) in groups.items():
        row: dict[str, Any] = dict(zip(config.by, gk, strict=True))
        row.update(_agreement_dict(js, rs, config))
        rows.append(row)
    total = len(p_idx) + len(missing_pred)
    coverage = {"total": total, "scored": len(all_j), "unscored": total - len(all_j),
                "reasons": dict(sorted(reasons.items()))}
    judges = [p.judge for p in pred if p.judge]
    return ValidateResult(by=config.by, paired_on=key,
                          overall=_agreement_dict(all_j, all_r, config), groups=rows,
                          coverage=coverage, signature=config.signature(judges).render(),
                          items=items)


def validate_files(pred_paths: Sequence[Any], ref_paths: Sequence[Any],
                   config: ValidateConfig) -> ValidateResult:
    """Read the judge's and the reference files and compare them (see module docstring)."""
    if not pred_paths or not ref_paths:
        raise InputError("needs judged files and reference files.", component=COMPONENT,
                         fix="ragmeter rubric validate JUDGED.jsonl --reference REF.json")
    pred = [g for p in pred_paths for g in read_grades(p, config.field_map)]
    ref = [g for p in ref_paths for g in read_grades(p)]
    return validate_grades(pred, ref, config)
