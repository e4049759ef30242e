"""Judging answers on RAGaliq's 0–5 scale: prompts, requests
and the reading of replies.  Pure: the calls are made by the runner in the CLI.

Two ways to get a grade, recorded per row as ``method``:

- ``choices``: the judge is asked for one digit and the backend scores the six continuations
  "0".."5" (the local model's logits, or an endpoint's logprobs); the row gets
  ``grade_probs``, ``expected_grade`` and the most probable grade.  Deterministic, so repeats
  agree by construction.
- ``generate``: the judge writes text that is parsed, strictly (RAGaliq's ``[RESULT]`` rule,
  for ``--prompt-file judge_prompt.txt``) or leniently (ragmeter's default prompt).  Repeats
  use seed ``seed + repeat`` so that sampled grades can differ.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ragmeter._util._package import package_file
from ragmeter.backends._types import Message, Request
from ragmeter.errors import ConfigError, InputError
from ragmeter.io import FieldMap, as_text, is_blank, is_path, iter_rows, require
from ragmeter.judges._types import Answer
from ragmeter.prompts._templates import check_template
from ragmeter.rubric import _metrics as rubric

__all__ = ["JudgePrompt", "Answer", "load_prompt", "read_answers", "build_requests",
           "judged_rows", "ALIASES"]

COMPONENT = "rubric"
Scoring = Literal["choices", "generate"]
# Canonical field -> alternative column names accepted without --field (RAGaliq's names).
ALIASES: Mapping[str, tuple[str, ...]] = {
    "question": ("instruction",),
    "reference": ("true_answer", "gold_answer", "reference_answer", "answer"),
    "response": ("generated_answer", "pred_answer", "prediction"),
}


def load_prompt(name: str) -> dict[str, Any]:
    """A built-in prompt of this family (``judge``, ``semantic``, ``reader``)."""
    text = package_file("ragmeter.rubric", "prompts", f"{name}.json").read_text(encoding="utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class JudgePrompt:
    """A judge prompt: a user template with ``{question}``, ``{reference}``, ``{response}``
    (RAGaliq's ``{instruction}`` and ``{reference_answer}`` also work), optional system text,
    how its replies are parsed, and its version (part of every signature)."""

    version: str
    user: str
    system: str | None = None
    parser: Literal["strict", "lenient"] = "lenient"
    params: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def default(cls) -> JudgePrompt:
        p = load_prompt("judge")
        return cls(version=p["version"], user=p["user"], system=p["system"],
                   parser="lenient", params={"temperature": 0.0, "max_tokens": 64})

    @classmethod
    def from_file(cls, path: str | Path) -> JudgePrompt:
        """A text template used with ``str.format`` exactly as RAGaliq's eval.py does (one user
        message, temperature 0.001, max_tokens 512, strict ``[RESULT]`` parsing)."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot be read ({exc}).", component=COMPONENT, path=p,
                             fix="give a UTF-8 text file.") from None
        check_template(text, p, component=COMPONENT,
                       required=[("response",), ("question", "instruction")],
                       known=("question", "instruction", "reference", "reference_answer",
                              "response"))
        prompt = cls(version=f"file:{p.name}:{_digest(text)}", user=text, parser="strict",
                     params={"temperature": 0.001, "max_tokens": 512})
        try:
            prompt.render("q", "r", "a")
        except (KeyError, IndexError, ValueError) as exc:
            raise InputError(f"is not a valid template ({type(exc).__name__}: {exc}).",
                             component=COMPONENT, path=p,
                             fix="use the fields {question}/{instruction}, {reference}/"
                                 "{reference_answer}, {response}; double literal braces {{ }}.",
                             ) from None
        return prompt

    def render(self, question: str, reference: str, response: str,
               **extra: str) -> tuple[Message, ...]:
        values = {"question": question, "instruction": question, "reference": reference,
                  "reference_answer": reference, "response": response, **extra}
        user = self.user.format_map(values)
        msgs = [Message("system", self.system)] if self.system else []
        return (*msgs, Message("user", user))

    def parse(self, reply: str) -> rubric.GradeParse:
        if self.parser == "strict":
            return rubric.parse_result_strict(reply)
        return rubric.parse_grade_lenient(reply)


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _field(row: Any, name: str, fm: FieldMap) -> Any:
    if fm.source(name) == name and name not in row.data:
        for alt in ALIASES.get(name, ()):
            if alt in row.data:
                return row.data[alt]
    return require(row, name, component=COMPONENT, field_map=fm)


def read_answers(path: Any, field_map: FieldMap | None = None,
                 keep: Sequence[str] = ("lang", "system", "sample_lang", "sample_id")) -> list[Answer]:
    """Rows with ``question``, ``reference`` and ``response`` (or RAGaliq's ``true_answer`` and
    ``generated_answer``); ``id`` optional (else the row number).  A RAGaliq log's file name
    supplies ``lang`` when its rows have none."""
    fm = field_map or FieldMap()
    file_lang = rubric.ragaliq_file_meta(path).get("lang") if is_path(path) else None
    out: list[Answer] = []
    seen: dict[str, int] = {}
    for row in iter_rows(path, component=COMPONENT, field_map=fm):
        q = as_text(row, "question", _field(row, "question", fm), component=COMPONENT)
        ref = as_text(row, "reference", _field(row, "reference", fm), component=COMPONENT)
        raw = _field(row, "response", fm)
        resp = None if raw is None else as_text(row, "response", raw, component=COMPONENT)
        rid = row.data.get("id", row.data.get("sample_id"))
        item_id = str(rid) if not is_blank(rid) else str(row.number)
        if item_id in seen:
            raise row.error(f"duplicate id {item_id!r} (first at row/line {seen[item_id]}).",
                            component=COMPONENT, field="id", fix="give every row its own id.")
        seen[item_id] = row.number
        extra = {k: row.data[k] for k in keep if k in row.data}
        if file_lang and "lang" not in extra:
            extra["lang"] = file_lang
        out.append(Answer(item_id, q, ref, resp, extra))
    return out


def build_requests(answers: Sequence[Answer], prompt: JudgePrompt, scoring: Scoring,
                   repeats: int = 1, seed: int = 0,
                   temperature: float | None = None) -> list[Request]:
    """One request per (answer with a response, repeat), in that order."""
    if repeats < 1:
        raise ConfigError("rubric: --repeats must be at least 1.")
    params = dict(prompt.params)
    if temperature is not None:
        params["temperature"] = temperature
    requests = []
    for a in answers:
        if a.response is None:
            continue
        messages = prompt.render(a.question, a.reference, a.response)
        for r in range(repeats):
            if scoring == "choices":
                requests.append(Request(id=f"{a.id}#{r}", messages=messages, params={},
                                        choices=tuple(str(g) for g in rubric.GRADES), repeat=r))
            else:
                requests.append(Request(id=f"{a.id}#{r}", messages=messages,
                                        params={**params, "seed": seed + r}, repeat=r))
    return requests


def judged_rows(answers: Sequence[Answer], outcomes: Sequence[Any], prompt: JudgePrompt,
                scoring: Scoring, repeats: int, judge_model: str) -> list[dict[str, Any]]:
    """Rows of JUDGED.jsonl: one per (answer, repeat), scored or unscored with a reason."""
    by_id = {o.request.id: o for o in outcomes}
    rows: list[dict[str, Any]] = []
    for a in answers:
        for r in range(repeats):
            row: dict[str, Any] = {"id": a.id, **a.extra, "repeat": r, "question": a.question,
                                   "reference": a.reference, "response": a.response,
                                   "judge_model": judge_model, "prompt_version": prompt.version,
                                   "method": scoring}
            outcome = by_id.get(f"{a.id}#{r}")
            if outcome is not None:
                from ragmeter.judges._spend import usage_of

                row["usage"] = usage_of([outcome])
            if a.response is None:
                row.update(score=None, status="unscored", reason="missing_response",
                           detail="the answer is null")
            elif outcome is None or not outcome.ok:
                row.update(score=None, status="unscored",
                           reason=getattr(outcome, "reason", None) or "no_call",
                           detail=getattr(outcome, "detail", None))
            elif scoring == "choices":
                _choice_row(row, outcome.response)
            else:
                parsed = prompt.parse(outcome.response.text)
                row.update(reply=outcome.response.text, feedback=parsed.feedback,
                           score=parsed.grade, status="ok" if parsed.ok else "unscored")
                if not parsed.ok:
                    row.update(reason=parsed.reason, detail=parsed.detail)
            rows.append(row)
    return rows


def _choice_row(row: dict[str, Any], response: Any) -> None:
    probs = rubric.grade_distribution(response.choice_probs or {})
    row["method"] = f"choices:{response.choice_method or 'unknown'}"
    if probs is None:
        row.update(score=None, status="unscored", reason="no_choice_probs",
                   detail="the backend returned no probabilities for 0..5")
        return
    best = max(rubric.GRADES, key=lambda g: probs[g])  # ties: the lowest grade
    row.update(score=best, status="ok", grade_probs={str(g): probs[g] for g in rubric.GRADES},
               expected_grade=math.fsum(g * p for g, p in probs.items()))


def with_params(prompt: JudgePrompt, **params: Any) -> JudgePrompt:
    """A copy of ``prompt`` with sampling parameters changed."""
    return replace(prompt, params={**prompt.params, **params})
