"""``rubric judge --strategy overlap``: the offline 0–5 grader (no generative model).

The grading rule is :mod:`ragmeter.rubric._overlap` (abstention → 0, else reference
recall cut into 1..5).  Its cut points live in a small JSON file: the shipped one,
``ragmeter/rubric/data/overlap_v1.json``, is fitted on both RAGaliq judged runs (en and ru,
140 answers graded by RAGaliq's Gemini-Flash judge) and records its provenance and its
cross-language validation (cut points fitted on one language, scored on the other).
:func:`fit_files` refits it from those logs byte for byte; ``--grader FILE`` uses your own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter._util._package import package_file
from ragmeter.errors import InputError
from ragmeter.rubric import _metrics as rubric
from ragmeter.rubric import _overlap as rubric_overlap
from ragmeter.rubric._judge import Answer, read_answers
from ragmeter.rubric._scorer import ragaliq_file_meta

__all__ = ["OverlapGrader", "fit_files", "overlap_rows", "STRATEGY"]

COMPONENT = "rubric"
STRATEGY = "overlap"
SHIPPED = "overlap_v1.json"


@dataclass(frozen=True)
class OverlapGrader:
    """Cut points of the overlap grader with their identity (name goes into signatures)."""

    name: str
    cut_points: tuple[float, float, float, float]
    validation: dict[str, Any]

    @classmethod
    def shipped(cls) -> OverlapGrader:
        text = package_file("ragmeter.rubric", "data", SHIPPED).read_text(encoding="utf-8")
        return cls.from_json(json.loads(text), SHIPPED)

    @classmethod
    def from_file(cls, path: str | Path) -> OverlapGrader:
        p = Path(path)
        try:
            obj = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"cannot be read as JSON ({exc}).", component=COMPONENT, path=p,
                             fix="give a grader file written by fit_files().") from None
        return cls.from_json(obj, p.name)

    @classmethod
    def from_json(cls, obj: Any, where: str) -> OverlapGrader:
        cuts = obj.get("cut_points") if isinstance(obj, dict) else None
        if (not isinstance(cuts, list) or len(cuts) != 4
                or not all(isinstance(c, (int, float)) for c in cuts)
                or sorted(cuts) != cuts):
            raise InputError("has no list of four ascending numbers under 'cut_points'.",
                             component=COMPONENT, path=where, field="cut_points",
                             fix="give a grader file written by fit_files().")
        c = [float(x) for x in cuts]
        return cls(name=str(obj.get("name", where)), cut_points=(c[0], c[1], c[2], c[3]),
                   validation=dict(obj.get("validation", {})))

    def grade(self, reference: str, response: str, lang: str = "en") -> tuple[int, float, bool]:
        """(grade, reference recall, abstained) of one answer."""
        abstained = rubric_overlap.is_abstention(response)
        recall = rubric_overlap.reference_recall(reference, response, lang)
        return (rubric_overlap.grade_from_recall(recall, abstained, self.cut_points), recall,
                abstained)


def overlap_rows(answers: Sequence[Answer], grader: OverlapGrader) -> list[dict[str, Any]]:
    """Rows of JUDGED.jsonl, the same columns as an LLM judge's (``method`` = overlap)."""
    rows = []
    for a in answers:
        row: dict[str, Any] = {"id": a.id, **a.extra, "repeat": 0, "question": a.question,
                               "reference": a.reference, "response": a.response,
                               "judge_model": f"ragmeter-{STRATEGY}:{grader.name}",
                               "prompt_version": rubric_overlap.ABSTENTION_VERSION,
                               "method": STRATEGY}
        if a.response is None:
            row.update(score=None, status="unscored", reason="missing_response",
                       detail="the answer is null")
        else:
            grade, recall, abstained = grader.grade(a.reference, a.response,
                                                    str(a.extra.get("lang", "en")))
            row.update(score=grade, status="ok", reference_recall=round(recall, 6),
                       abstained=abstained)
        rows.append(row)
    return rows


def _labelled(paths: Sequence[str | Path]) -> dict[str, tuple[list[float], list[bool], list[int]]]:
    """Per language: recalls, abstentions and reference grades of graded answers."""
    out: dict[str, tuple[list[float], list[bool], list[int]]] = {}
    for path in paths:
        meta = ragaliq_file_meta(path)
        scores = [r.get("score") for r in json.loads(Path(path).read_text(encoding="utf-8"))]
        answers = read_answers(path)
        for a, score in zip(answers, scores, strict=True):
            if a.response is None or not isinstance(score, int) or score not in rubric.WEIGHTS:
                continue
            lang = str(a.extra.get("lang", meta.get("lang", "en")))
            rec, ab, gr = out.setdefault(lang, ([], [], []))
            rec.append(rubric_overlap.reference_recall(a.reference, a.response, lang))
            ab.append(rubric_overlap.is_abstention(a.response))
            gr.append(score)
    return out


def _scores(cuts: Sequence[float], data: tuple[list[float], list[bool], list[int]],
            ) -> dict[str, Any]:
    pred = [rubric_overlap.grade_from_recall(r, a, cuts) for r, a in zip(data[0], data[1],
                                                                          strict=True)]
    agr = rubric.agreement(pred, data[2]).to_dict()
    return {k: _round(agr[k]) for k in ("n", "qwk", "exact", "within_one", "mae", "spearman",
                                         "ci95")}


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, list):
        return [_round(v) for v in value]
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    return value


def fit_files(paths: Sequence[str | Path], name: str = "overlap-v1") -> dict[str, Any]:
    """Fit the cut points on RAGaliq judged logs (``eval_res_*.json``): on all of them for the
    shipped grader, and on each language alone scored on every other language (the honest,
    out-of-language validation).  Deterministic: the same logs give the same dict."""
    from ragmeter import __version__

    data = _labelled(paths)
    if not data:
        raise InputError("hold no graded answers.", component=COMPONENT,
                         path=", ".join(map(str, paths)),
                         fix="give RAGaliq eval_res_*.json logs with a score per answer.")
    langs = sorted(data)
    recalls = [r for lang in langs for r in data[lang][0]]
    abstained = [a for lang in langs for a in data[lang][1]]
    grades = [g for lang in langs for g in data[lang][2]]
    cuts, train_kappa = rubric_overlap.fit_cut_points(recalls, abstained, grades)
    cross = []
    for train in langs:
        c, k = rubric_overlap.fit_cut_points(*data[train])
        for test in langs:
            if test != train:
                cross.append({"fit_on": train, "tested_on": test, "cut_points": c,
                              "train_qwk": round(k, 4), **_scores(c, data[test])})
    return {
        "name": name,
        "rule": f"{rubric_overlap.ABSTENTION_VERSION}; grade = 1 + #{{cut <= reference "
                f"recall}} over content stems of {rubric_overlap.STEM_CHARS} characters",
        "cut_points": cuts,
        "train_qwk": round(train_kappa, 4),
        "provenance": {
            "labels": "RAGaliq (chameleon-lizard/Ragaliq @ 1c0006d7, MIT): logs/eval "
                      "eval_res_questions_<lang>_Qwen2.5-7B-Instruct_multilingual-e5-large-"
                      "instruct_bge-reranker-v2-m3_<lang>.json, grades by its Gemini-Flash "
                      "judge",
            "files": sorted(Path(p).name for p in paths),
            "n_per_language": {lang: len(data[lang][2]) for lang in langs},
            "ragmeter": __version__,
        },
        "validation": {"cross_language": cross},
    }


def dumps(fitted: dict[str, Any]) -> str:
    """The canonical text of a grader file (what is shipped and what a refit must equal)."""
    return json.dumps(fitted, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
