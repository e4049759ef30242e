"""Prompts of ``rubric build`` (question generation, critique, translation) and the pure
parsers of their replies.

RAGaliq (chameleon-lizard/Ragaliq, ``src/data_generation``) generates one factoid question and
answer per chunk, rates each question 1-5 on three criteria and keeps those that pass.  The
built-in prompts (``rubric/prompts/build.json``) are ragmeter's own wording of those steps;
``--generation-prompt-file`` and ``--critique-prompt-file`` take the originals' (or any) text
templates.  The parsers accept both our reply format (``Question:``/``Answer:``,
``Evaluation:``/``Rating:``) and the common variants (``Factoid question:``, ``Total rating:``,
a JSON object), and never invent a value: a reply without a usable rating is a
:class:`CritiqueParse` with ``ok=False`` and a reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.backends._types import Message
from ragmeter.errors import InputError
from ragmeter.rubric._judge import load_prompt

__all__ = ["CRITERIA", "Template", "BuildPrompts", "GenerationParse", "CritiqueParse",
           "parse_generation", "parse_critique"]

COMPONENT = "rubric"
CRITERIA = ("groundedness", "relevance", "standalone")
RATING_SCALE = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class Template:
    """One prompt: an optional system text, a user template (``str.format`` fields) and
    sampling parameters."""

    user: str
    system: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    version: str = ""

    def render(self, **values: str) -> tuple[Message, ...]:
        msgs = [Message("system", self.system)] if self.system else []
        return (*msgs, Message("user", self.user.format_map(values)))


def _file_template(path: str | Path, fields: tuple[str, ...], what: str,
                   params: Mapping[str, Any], required: tuple[tuple[str, ...], ...]) -> Template:
    """A user's prompt file, checked before any call (ragmeter.prompts.check_template): it
    must parse, use only ``fields`` and use each of ``required`` (a critique of groundedness
    without ``{context}`` would rate every question blind, issue 29.11)."""
    import hashlib

    from ragmeter.prompts import check_template

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot be read ({exc}).", component=COMPONENT, path=p,
                         fix="give a UTF-8 text file.") from None
    check_template(text, p, component=COMPONENT, required=required, known=fields)
    tpl = Template(user=text, params=params,
                   version=f"file:{p.name}:{hashlib.sha256(text.encode()).hexdigest()[:12]}")
    try:
        tpl.render(**{f: "x" for f in fields})
    except (KeyError, IndexError, ValueError, AttributeError) as exc:
        raise InputError(f"is not a valid {what} template ({type(exc).__name__}: {exc}).",
                         component=COMPONENT, path=p,
                         fix=f"use only the fields {', '.join('{' + f + '}' for f in fields)}; "
                             "double literal braces {{ }}.") from None
    return tpl


GEN_FIELDS = ("context", "audience")
CRITIQUE_FIELDS = ("context", "question", "answer", "audience")
TRANSLATE_FIELDS = ("text", "language", "source_language")
# The fields a user's file must use: those the built-in prompt it replaces rates on (the
# audience is optional).
GEN_REQUIRED: tuple[tuple[str, ...], ...] = (("context",),)
CRITIQUE_REQUIRED: dict[str, tuple[tuple[str, ...], ...]] = {
    "groundedness": (("context",), ("question",)),
    "relevance": (("question",),),
    "standalone": (("question",),),
}


@dataclass(frozen=True)
class BuildPrompts:
    """The prompts of one build; ``version`` enters every signature."""

    generate: Template
    critique: Mapping[str, Template]
    translate: Template
    translate_retry: Template
    version: str
    # The critiques asking for the digit only, for choice scoring (P("1".."5")).
    critique_choices: Mapping[str, Template] = field(default_factory=dict)

    @classmethod
    def default(cls) -> BuildPrompts:
        p = load_prompt("build")
        v = str(p["version"])
        crit = {name: Template(c["user"], c["system"], dict(c["params"]), v)
                for name, c in p["critique"].items()}
        choices = {name: Template(c["choices_user"], c["system"], {}, v)
                   for name, c in p["critique"].items()}
        t = p["translate"]
        return cls(generate=Template(p["generate"]["user"], p["generate"]["system"],
                                     dict(p["generate"]["params"]), v),
                   critique=crit,
                   translate=Template(t["user"], t["system"], dict(t["params"]), v),
                   translate_retry=Template(t["retry_user"], t["system"], dict(t["params"]), v),
                   version=v, critique_choices=choices)

    def with_files(self, generation: str | Path | None = None,
                   critique: Mapping[str, str | Path] | None = None) -> BuildPrompts:
        """Replace the generation and/or some critique prompts by text templates (one user
        message each, with the built-in prompt's sampling parameters)."""
        gen = self.generate
        if generation is not None:
            gen = _file_template(generation, GEN_FIELDS, "generation", self.generate.params,
                                 GEN_REQUIRED)
        crit = dict(self.critique)
        choices = dict(self.critique_choices)
        for name, path in (critique or {}).items():
            crit[name] = _file_template(path, CRITIQUE_FIELDS, f"{name} critique",
                                        self.critique[name].params, CRITIQUE_REQUIRED[name])
            choices[name] = crit[name]  # a user's template is used as it is
        parts = [self.version]
        if gen is not self.generate:
            parts.append(f"gen={gen.version}")
        parts += [f"{n}={crit[n].version}" for n in CRITERIA if crit[n] is not self.critique[n]]
        return BuildPrompts(gen, crit, self.translate, self.translate_retry, "|".join(parts),
                            choices)


# ------------------------------------------------------------------ parsing


@dataclass(frozen=True)
class GenerationParse:
    question: str | None
    answer: str | None
    reason: str | None = None
    detail: str | None = None

    @property
    def ok(self) -> bool:
        return self.reason is None


@dataclass(frozen=True)
class CritiqueParse:
    rating: int | None
    evaluation: str
    reason: str | None = None
    detail: str | None = None

    @property
    def ok(self) -> bool:
        return self.reason is None


_Q_LABEL = re.compile(r"^\W*(?:factoid\s+)?question\s*\d*\s*\W*\s*:\s*", re.I | re.M)
_A_LABEL = re.compile(r"^\W*answer\s*\d*\s*\W*\s*:\s*", re.I | re.M)


def _first_json_object(text: str) -> dict[str, Any] | None:
    from ragmeter._util._json import extract_json  # the project's one JSON scanner

    return extract_json(text)[0]


def _clean(text: str) -> str:
    return text.strip().strip("*").strip().strip('"').strip()


def _clip(text: str, n: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n - 1] + "…"


def parse_generation(reply: str) -> GenerationParse:
    """Question and answer from a generation reply: ``Question: ... Answer: ...`` (also
    ``Factoid question:``, markdown bold, numbered labels) or a JSON object with ``question``
    and ``answer``.  The question must be non-empty; so must the answer."""
    obj = _first_json_object(reply)
    if obj is not None and isinstance(obj.get("question"), str):
        q, a = obj.get("question"), obj.get("answer")
        if isinstance(q, str) and q.strip() and isinstance(a, (str, int, float)) \
                and str(a).strip():
            return GenerationParse(q.strip(), str(a).strip())
    qm = _Q_LABEL.search(reply)
    if qm is None:
        return GenerationParse(None, None, "no_question",
                               f"no 'Question:' line in the reply: {_clip(reply)!r}")
    am = _A_LABEL.search(reply, qm.end())
    if am is None:
        return GenerationParse(None, None, "no_answer",
                               f"no 'Answer:' line after the question: {_clip(reply)!r}")
    question = _clean(reply[qm.end():am.start()])
    answer = reply[am.end():]
    stop = re.search(r"\n\s*\n|^\W*(?:factoid\s+)?question\s*\d*\s*\W*\s*:", answer,
                     re.I | re.M)
    if stop is not None:
        answer = answer[:stop.start()]
    answer = _clean(answer)
    if not question:
        return GenerationParse(None, None, "empty_question", "the 'Question:' line is empty")
    if not answer:
        return GenerationParse(None, None, "empty_answer", "the 'Answer:' line is empty")
    return GenerationParse(question, answer)


_RATING = re.compile(
    r"(?:total\s+rating|rating|score|grade)\**\s*([:=]?)\s*\**\s*(-?\d+(?:\.\d+)?)"
    r"(\s*/\s*(?:5|10))?", re.I)
_EVAL = re.compile(r"(?:evaluation|explanation|feedback|rationale)\s*\**\s*:\s*\**", re.I)


def parse_critique(reply: str) -> CritiqueParse:
    """A 1-5 rating and its explanation from a critique reply.

    Accepted: ``Evaluation: ... Rating: N`` (also ``Total rating:``, ``Score:``, ``N/5``) and
    a JSON object with ``rating``/``score`` and ``evaluation``/``explanation``.  The last
    labelled rating counts.  No rating, a rating outside 1..5, a fraction or ``N/10`` give
    ``ok=False`` with a reason; never a default."""
    text = reply.strip()
    if not text:
        return CritiqueParse(None, "", "empty_reply", "the critic returned no text")
    obj = _first_json_object(text)
    if obj is not None:
        raw = next((obj[k] for k in ("rating", "score", "total_rating", "grade") if k in obj),
                   None)
        ev = next((obj[k] for k in ("evaluation", "explanation", "feedback", "rationale")
                   if isinstance(obj.get(k), str)), "")
        if raw is not None:
            return _rating(str(raw), "", str(ev).strip())
    matches = list(_RATING.finditer(text))
    if not matches:
        return CritiqueParse(None, _clean(text), "no_rating",
                             f"no 'Rating: N' in the reply: {_clip(text)!r}")
    labelled = [m for m in matches if m.group(1)]
    m = (labelled or matches)[-1]
    em = _EVAL.search(text)
    if em is not None and em.end() <= m.start():
        evaluation = text[em.end():m.start()]
    else:
        evaluation = text[:m.start()]
    return _rating(m.group(2), m.group(3) or "", _clean(evaluation))


def _rating(raw: str, denominator: str, evaluation: str) -> CritiqueParse:
    if "10" in denominator:
        return CritiqueParse(None, evaluation, "off_scale",
                             f"rating {raw}{denominator.strip()} is not on the 1-5 scale")
    try:
        value = float(raw.strip())
    except ValueError:
        return CritiqueParse(None, evaluation, "not_a_number",
                             f"rating {raw!r} is not a number")
    if value != int(value):
        return CritiqueParse(None, evaluation, "not_integer",
                             f"rating {raw} is not a whole number")
    if int(value) not in RATING_SCALE:
        return CritiqueParse(None, evaluation, "off_scale",
                             f"rating {int(value)} is outside 1..5")
    return CritiqueParse(int(value), evaluation)
