"""LBRAG's 0–1 semantic score with a judge model: the prompt, the requests, and the reading of
replies (pure; the calls are made by the runner).

Two ways, recorded per row as ``semantic_method``: ``generate`` (the judge writes
``{"score", "explanation"}``, LBRAG's way; :func:`parse_semantic_reply`) and ``choices``
(P(yes) of a yes/no question from the backend's logits or logprobs).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ragmeter._util._package import package_file
from ragmeter.backends._types import Message, Request
from ragmeter.judges._types import Answer

__all__ = ["SemanticPrompt", "SemanticParse", "parse_semantic_reply", "semantic_requests",
           "semantic_rows"]

Scoring = Literal["choices", "generate"]


@dataclass(frozen=True)
class SemanticParse:
    """A parsed semantic-judge reply: ``score`` in [0, 1] or None with a ``reason``."""

    score: float | None
    explanation: str
    reason: str | None = None  # empty_reply | no_json_object | invalid_json | no_score |
    #                            not_a_number
    detail: str | None = None
    clipped: bool = False

    @property
    def ok(self) -> bool:
        return self.score is not None


def parse_semantic_reply(reply: str) -> SemanticParse:
    """LBRAG's semantic judge reply: the first ``{...}`` JSON object, ``score`` clipped to
    [0, 1], ``explanation`` kept.

    The first object is decoded with ``json.JSONDecoder.raw_decode`` from the first ``{``, so
    trailing text (or a second object) is ignored.  LBRAG scores every failure 0.0; here a
    failure has a reason and no score.
    """
    if reply is None or not reply.strip():
        return SemanticParse(None, "", "empty_reply", "the judge returned no text")
    start = reply.find("{")
    if start < 0:
        return SemanticParse(None, reply.strip(), "no_json_object", "no '{' in the reply")
    try:
        obj, _ = json.JSONDecoder().raw_decode(reply[start:])
    except json.JSONDecodeError as exc:
        return SemanticParse(None, reply.strip(), "invalid_json", exc.msg)
    if not isinstance(obj, dict):
        return SemanticParse(None, reply.strip(), "invalid_json", "not an object")
    explanation = str(obj.get("explanation", obj.get("reason", "")))
    if "score" not in obj:
        return SemanticParse(None, explanation, "no_score", "the object has no 'score'")
    raw = obj["score"]
    try:
        if isinstance(raw, bool):
            raise ValueError
        value = float(raw)
    except (TypeError, ValueError):
        return SemanticParse(None, explanation, "not_a_number", f"score is {raw!r}")
    if not math.isfinite(value):
        return SemanticParse(None, explanation, "not_a_number", f"score is {raw!r}")
    clipped = min(1.0, max(0.0, value))
    return SemanticParse(clipped, explanation, clipped=clipped != value)


@dataclass(frozen=True)
class SemanticPrompt:
    version: str
    system: str
    user: str
    choices_user: str
    params: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def default(cls) -> SemanticPrompt:
        p = json.loads(package_file("ragmeter.multilingual", "prompts", "semantic.json")
                       .read_text(encoding="utf-8"))
        return cls(version=p["version"], system=p["system"], user=p["user"],
                   choices_user=p["choices_user"],
                   params={"temperature": 0.0, "max_tokens": 128})


def semantic_requests(answers: Sequence[Answer], prompt: SemanticPrompt,
                      scoring: Scoring) -> list[Request]:
    """One request per answer with a response.  ``choices`` asks yes/no and uses P(yes)."""
    out = []
    for a in answers:
        if a.response is None:
            continue
        lang = str(a.extra.get("sample_lang", a.extra.get("lang", "")))
        values = {"question": a.question, "reference": a.reference, "response": a.response,
                  "lang": lang}
        if scoring == "choices":
            msgs = (Message("system", prompt.system),
                    Message("user", prompt.choices_user.format_map(values)))
            out.append(Request(id=a.id, messages=msgs, choices=("yes", "no")))
        else:
            msgs = (Message("system", prompt.system),
                    Message("user", prompt.user.format_map(values)))
            out.append(Request(id=a.id, messages=msgs, params=dict(prompt.params)))
    return out


def semantic_rows(answers: Sequence[Answer], outcomes: Sequence[Any], scoring: Scoring,
                  prompt: SemanticPrompt, judge_model: str) -> list[dict[str, Any]]:
    """Per answer: ``semantic_score`` in [0, 1], or None with ``semantic_reason``."""
    by_id = {o.request.id: o for o in outcomes}
    rows = []
    for a in answers:
        o = by_id.get(a.id)
        row: dict[str, Any] = {"id": a.id, **a.extra, "semantic_judge": judge_model,
                               "semantic_prompt": prompt.version, "semantic_method": scoring}
        if a.response is None:
            row.update(semantic_score=None, semantic_reason="missing_response")
        elif o is None or not o.ok:
            row.update(semantic_score=None,
                       semantic_reason=getattr(o, "reason", None) or "no_call",
                       semantic_detail=getattr(o, "detail", None))
        elif scoring == "choices":
            probs = o.response.choice_probs or {}
            total = float(probs.get("yes", 0.0)) + float(probs.get("no", 0.0))
            if total > 0:
                row.update(semantic_score=float(probs.get("yes", 0.0)) / total,
                           semantic_method=f"choices:{o.response.choice_method or 'unknown'}")
            else:
                row.update(semantic_score=None, semantic_reason="no_choice_probs")
        else:
            parsed = parse_semantic_reply(o.response.text)
            row.update(semantic_score=parsed.score, semantic_explanation=parsed.explanation,
                       semantic_reply=o.response.text)
            if not parsed.ok:
                row.update(semantic_reason=parsed.reason, semantic_detail=parsed.detail)
            if parsed.clipped:
                row["semantic_clipped"] = True
        rows.append(row)
    return rows
