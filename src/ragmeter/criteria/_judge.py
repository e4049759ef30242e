"""Judging rows on criteria: reading the rows, building the prompts and requests, and reading
the replies.  Pure: the calls are made by the runner.

Two modes, recorded on every row as ``mode``:

- ``per-criterion``: one call per (row, criterion).  With ``scoring="choices"`` the backend
  scores the scale's points as the continuation of "Answer with the score only" (the local
  model's logits, an endpoint's logprobs): the row gets ``score_probs``, the most probable
  point as ``score`` and the probability-weighted ``expected_score`` (G-Eval's score, Liu et
  al. 2023, eq. 1).  With ``scoring="generate"`` the judge writes a JSON object
  ``{"score": N, "explanation": "..."}``.
- ``combined``: one call per row for all its criteria; the judge writes one JSON object with
  an entry per criterion.  Text only (a reply's first token cannot score several criteria).

A reply that cannot be read makes the row *unscored* with a reason: ``malformed_json`` (no
JSON object in the reply), ``missing_score`` (the object has no ``score``),
``missing_criterion`` (a combined reply without this criterion), ``not_a_number``,
``out_of_scale`` (a number that is not a point of the scale), ``no_choice_probs`` (choice
scoring returned no probabilities); a failed call keeps the runner's reason.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter._util._package import package_file
from ragmeter.backends._types import Message, Request
from ragmeter.criteria._types import INPUT_LABELS, CriteriaSet, Criterion, ScoreParse
from ragmeter.errors import ConfigError, InputError
from ragmeter.io import FieldMap, is_blank, iter_rows, require

__all__ = ["Item", "JudgePrompt", "MODES", "SCORINGS", "read_items", "build_requests",
           "judged_rows", "parse_reply", "parse_combined", "read_score", "request_id"]

COMPONENT = "criteria"
MODES = ("per-criterion", "combined")
SCORINGS = ("auto", "choices", "generate")
_EXPLANATION_KEYS = ("explanation", "reason", "rationale")


@dataclass(frozen=True)
class Item:
    """One row to judge: its id, the texts of the fields the criteria show the judge (None:
    empty), the reference scores per criterion (``--reference-field``) and the row's other
    columns (for ``--by``)."""

    id: str
    values: Mapping[str, str | None]
    references: Mapping[str, int] = field(default_factory=dict)
    data: Mapping[str, Any] = field(default_factory=dict)

    def missing(self, criterion: Criterion) -> list[str]:
        """The inputs of ``criterion`` this row leaves empty."""
        return [f for f in criterion.inputs if self.values.get(f) is None]


# ------------------------------------------------------------------ reading the rows


def _as_input(value: Any) -> str | None:
    """A field as the judge reads it: text as is, a list as numbered passages, anything else
    as JSON; None when empty."""
    if is_blank(value) or (isinstance(value, (list, tuple)) and not value):
        return None
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (list, tuple)):
        return "\n".join(f"[{i}] {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
                         for i, v in enumerate(value, 1))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return json.dumps(value, ensure_ascii=False, default=str)


def _reference(row: Any, criterion: Criterion, column: str, several: bool) -> int | None:
    """The reference score of ``criterion`` in ``column`` (a number, or an object keyed by
    criterion), checked against the scale; None when the row has none.  ``several``: the
    column was named for several criteria, so it must hold an object."""
    value = row.data.get(column)
    if isinstance(value, Mapping):
        value = value.get(criterion.name)
    elif several and not is_blank(value):
        raise row.error(f"holds one score ({value!r}) but was named for several criteria.",
                        component=COMPONENT, field=column,
                        fix=f"give {{criterion: score}} in the column, or name it for one "
                            f"criterion: reference_field='{criterion.name}={column}' "
                            f"(--reference-field {criterion.name}={column}).")
    if is_blank(value):
        return None
    parsed = read_score(value, criterion)
    if parsed.score is None:
        raise row.error(f"reference score {value!r} for criterion {criterion.name!r} is not a "
                        f"point of its scale ({', '.join(map(str, criterion.points))}).",
                        component=COMPONENT, field=column,
                        fix="give a point of the scale (round averaged scores), or leave the "
                            "cell empty to leave the row out of the validation.")
    return parsed.score


def read_items(data: Any, criteria: CriteriaSet, field_map: FieldMap | None = None,
               references: Mapping[str, str] | None = None,
               shared: Collection[str] = ()) -> list[Item]:
    """The rows of ``data`` with the fields the criteria need.  A field missing from a row is
    an error (before any call); an empty one makes that row's criteria that need it unscored
    (``missing_input``).  ``references`` maps a criterion to the column of its reference
    scores (a number on its scale, or an object ``{criterion: score}``); a column that no row
    has is an error; a column in ``shared`` (named for every criterion) must hold an object
    when there are several criteria."""
    # `ragmeter app run` writes the retrieved passages as `retrieved_contexts`: a criterion that
    # asks for `contexts` reads them as they are (the user's own --field mapping still wins).
    fm = (field_map or FieldMap()).with_aliases({"contexts": ("retrieved_contexts",)})
    needed = criteria.inputs()
    refs = dict(references or {})
    unknown = [c for c in refs if c not in criteria.names]
    if unknown:
        raise ConfigError(f"criteria: a reference field names the criterion {unknown[0]!r}, "
                          f"which is not among the criteria ({', '.join(criteria.names)}).")
    items: list[Item] = []
    seen: dict[str, int] = {}
    found_ref = dict.fromkeys(refs, 0)
    last_row: Any = None
    for row in iter_rows(data, component=COMPONENT, field_map=fm):
        last_row = row
        values = {name: _as_input(require(row, name, component=COMPONENT, field_map=fm))
                  for name in needed}
        raw_id = row.data.get("id")
        item_id = str(raw_id) if not is_blank(raw_id) else str(row.number)
        if item_id in seen:
            raise row.error(f"duplicate id {item_id!r} (first at {row.unit} {seen[item_id]}).",
                            component=COMPONENT, field="id", fix="give every row its own id.")
        seen[item_id] = row.number
        scores: dict[str, int] = {}
        for crit_name, column in refs.items():
            if column in row.data:
                found_ref[crit_name] += 1
                score = _reference(row, criteria.get(crit_name), column,
                                   column in shared and len(criteria) > 1)
                if score is not None:
                    scores[crit_name] = score
        items.append(Item(item_id, values, scores, dict(row.data)))
    for crit_name, count in found_ref.items():
        if not count and last_row is not None:
            found = ", ".join(sorted(map(str, last_row.data))[:15])
            raise InputError(f"no row has the reference field {refs[crit_name]!r} (for the "
                             f"criterion {crit_name!r}). Found fields: {found}.",
                             component=COMPONENT, field=refs[crit_name],
                             fix="name the column of your human scores: reference_field="
                                 "'COLUMN' (--reference-field COLUMN), or CRITERION=COLUMN "
                                 "for one criterion.")
    return items


# ------------------------------------------------------------------ prompts


def _load_templates() -> dict[str, str]:
    text = package_file("ragmeter.criteria", "prompts", "judge.json").read_text(encoding="utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class JudgePrompt:
    """ragmeter's criteria judge prompt (``prompts/judge.json``); its ``version`` is part of
    every signature."""

    templates: Mapping[str, str]

    @classmethod
    def default(cls) -> JudgePrompt:
        return cls(_load_templates())

    @property
    def version(self) -> str:
        return str(self.templates["version"])

    def _inputs(self, fields: Sequence[str], values: Mapping[str, str | None]) -> str:
        t = self.templates["input"]
        return "\n\n".join(t.format(label=_label(f), text=values.get(f) or "")
                           for f in fields)

    def _examples(self, criterion: Criterion) -> str:
        if not criterion.examples:
            return ""
        parts = [self.templates["examples_heading"]]
        for i, ex in enumerate(criterion.examples, 1):
            parts.append(self.templates["example"].format(
                number=i, inputs=self._inputs(criterion.inputs, ex.values), score=ex.score,
                explanation=f" ({ex.explanation})" if ex.explanation else ""))
        return "\n" + "\n\n".join(parts) + "\n"

    def per_criterion(self, criterion: Criterion, item: Item, choices: bool
                      ) -> tuple[Message, ...]:
        points = _points(criterion)
        instruction = self.templates["instruction_choices" if choices
                                     else "instruction_generate"].format(points=points)
        user = self.templates["per_criterion"].format(
            name=criterion.name, question=criterion.question, scale=_scale(criterion),
            examples=self._examples(criterion),
            inputs=self._inputs(criterion.inputs, item.values), instruction=instruction)
        return (Message("system", self.templates["system"]), Message("user", user))

    def combined(self, criteria: Sequence[Criterion], item: Item) -> tuple[Message, ...]:
        blocks = [self.templates["combined_criterion"].format(
            name=c.name, question=c.question, scale=_scale(c),
            examples=self._examples(c).rstrip("\n")) for c in criteria]
        shape = "{" + ", ".join(self.templates["combined_entry"].format(
            name=c.name, points=_points(c)) for c in criteria) + "}"
        fields = tuple(dict.fromkeys(f for c in criteria for f in c.inputs))
        user = self.templates["combined"].format(
            count=len(criteria), criteria="\n\n".join(blocks),
            inputs=self._inputs(fields, item.values),
            instruction=self.templates["instruction_combined"].format(shape=shape))
        return (Message("system", self.templates["system"]), Message("user", user))


def _label(name: str) -> str:
    return INPUT_LABELS.get(name) or name.replace("_", " ").capitalize()


def _scale(criterion: Criterion) -> str:
    return "\n".join(f"{p} = {anchor}" for p, anchor in criterion.scale)


def _points(criterion: Criterion) -> str:
    return ", ".join(map(str, criterion.points))


# ------------------------------------------------------------------ requests


def request_id(item_id: str, criterion: str | None) -> str:
    """``<item>::<criterion>`` (per-criterion) or ``<item>::*`` (combined)."""
    return f"{item_id}::{criterion if criterion is not None else '*'}"


def _judged(item: Item, criteria: CriteriaSet) -> list[Criterion]:
    return [c for c in criteria if not item.missing(c)]


def build_requests(items: Sequence[Item], criteria: CriteriaSet, prompt: JudgePrompt, *,
                   mode: str, scoring: str, temperature: float = 0.0,
                   max_tokens: int | None = None) -> list[Request]:
    """Repeat 0 of every call, in input order (:func:`ragmeter.judges.repeat_requests` adds
    the repeats).  ``scoring``: ``choices`` or ``generate`` (resolved)."""
    if mode not in MODES:
        raise ConfigError(f"criteria: mode={mode!r} is not one of {', '.join(MODES)}.")
    if mode == "combined" and scoring == "choices":
        raise ConfigError("criteria: scoring='choices' scores one criterion per call; with "
                          "mode='combined' the judge writes its scores as text. Fix: "
                          "mode='per-criterion' (--mode per-criterion), or scoring='generate'.")
    requests = []
    for item in items:
        todo = _judged(item, criteria)
        if mode == "combined":
            if todo:
                budget = max_tokens or 48 + 80 * len(todo)
                requests.append(Request(
                    id=request_id(item.id, None), messages=prompt.combined(todo, item),
                    params={"temperature": temperature, "max_tokens": budget}))
            continue
        for crit in todo:
            rid = request_id(item.id, crit.name)
            if scoring == "choices":
                requests.append(Request(id=rid, messages=prompt.per_criterion(crit, item, True),
                                        params={}, choices=tuple(map(str, crit.points))))
            else:
                requests.append(Request(
                    id=rid, messages=prompt.per_criterion(crit, item, False),
                    params={"temperature": temperature, "max_tokens": max_tokens or 128}))
    return requests


# ------------------------------------------------------------------ replies


def read_score(value: Any, criterion: Criterion, explanation: str | None = None) -> ScoreParse:
    """A point of ``criterion``'s scale from a value: an integer, a whole float (4.0) or the
    text of one ("4"); else unscored with ``not_a_number`` or ``out_of_scale``."""
    number: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number):
        return ScoreParse(None, "not_a_number", f"score is {_clip(repr(value))}", explanation)
    if number != int(number) or int(number) not in criterion.points:
        return ScoreParse(None, "out_of_scale", f"score {value!r} is not one of "
                                                f"{_points(criterion)}", explanation)
    return ScoreParse(int(number), explanation=explanation)


def _clip(text: str, n: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def _explanation(obj: Mapping[str, Any]) -> str | None:
    for key in _EXPLANATION_KEYS:
        if isinstance(obj.get(key), str) and obj[key].strip():
            return str(obj[key]).strip()
    return None


def _object(reply: str) -> dict[str, Any] | None:
    from ragmeter._util._json import extract_json

    obj, _ = extract_json(reply)
    return obj


def parse_reply(reply: str, criterion: Criterion) -> ScoreParse:
    """The score of a per-criterion reply: ``{"score": N, "explanation": "..."}`` (code fences
    and text around the object are ignored; a reply cut off after its score is repaired)."""
    obj = _object(reply)
    if obj is None:
        return ScoreParse(None, "malformed_json", f"no JSON object in {_clip(reply)!r}")
    if "score" not in obj:
        return ScoreParse(None, "missing_score",
                          f"the object has no \"score\" (keys: {', '.join(map(str, obj))})",
                          _explanation(obj))
    return read_score(obj["score"], criterion, _explanation(obj))


def parse_combined(reply: str, criteria: Sequence[Criterion]) -> dict[str, ScoreParse]:
    """The score of each criterion in a combined reply: ``{"<name>": {"score": N,
    "explanation": "..."}, ...}`` (a bare number per criterion is read too)."""
    obj = _object(reply)
    if obj is None:
        bad = ScoreParse(None, "malformed_json", f"no JSON object in {_clip(reply)!r}")
        return {c.name: bad for c in criteria}
    out = {}
    for c in criteria:
        entry = obj.get(c.name)
        if entry is None:
            out[c.name] = ScoreParse(None, "missing_criterion",
                                     f"the reply has no entry {c.name!r} (keys: "
                                     f"{', '.join(map(str, obj))})")
        elif isinstance(entry, Mapping):
            out[c.name] = (read_score(entry["score"], c, _explanation(entry))
                           if "score" in entry else
                           ScoreParse(None, "missing_score",
                                      f"the entry {c.name!r} has no \"score\"",
                                      _explanation(entry)))
        else:
            out[c.name] = read_score(entry, c)
    return out


def _distribution(criterion: Criterion, probs: Mapping[str, float]) -> dict[int, float] | None:
    """The probability of each point, renormalized over the scale; None without mass."""
    mass = {p: float(probs.get(str(p), 0.0) or 0.0) for p in criterion.points}
    total = math.fsum(v for v in mass.values() if math.isfinite(v) and v > 0)
    if total <= 0:
        return None
    return {p: (v / total if math.isfinite(v) and v > 0 else 0.0) for p, v in mass.items()}


def _choice_fields(criterion: Criterion, response: Any) -> dict[str, Any]:
    dist = _distribution(criterion, response.choice_probs or {})
    if dist is None:
        return {"score": None, "status": "unscored", "reason": "no_choice_probs",
                "detail": f"the backend returned no probabilities for the points "
                          f"({response.choice_method or 'no method'})"}
    best = max(criterion.points, key=lambda p: dist[p])  # ties: the lowest point
    return {"score": best, "status": "ok", "score_probs": {str(p): dist[p] for p in dist},
            "expected_score": math.fsum(p * q for p, q in dist.items())}


def judged_rows(items: Sequence[Item], criteria: CriteriaSet, outcomes: Sequence[Any], *,
                mode: str, scoring: str, repeats: int, judge_model: str,
                prompt_version: str, keep: Sequence[str] = ()) -> list[dict[str, Any]]:
    """One row per (item, criterion, repeat), in that order: scored, or unscored with a
    reason.  In combined mode a call's ``usage`` is on the row of its first criterion (so
    that summing rows counts each call once)."""
    from ragmeter.judges._repeats import repeat_id
    from ragmeter.judges._spend import usage_of

    by_id = {o.request.id: o for o in outcomes}
    rows: list[dict[str, Any]] = []
    for item in items:
        todo = _judged(item, criteria)
        for r in range(repeats):
            combined_outcome = by_id.get(repeat_id(request_id(item.id, None), r)) \
                if mode == "combined" else None
            parsed = (parse_combined(combined_outcome.response.text, todo)
                      if combined_outcome is not None and combined_outcome.ok else {})
            first = True
            for crit in criteria:
                row: dict[str, Any] = {"id": item.id, "criterion": crit.name, "repeat": r,
                                       **{k: item.data[k] for k in keep if k in item.data},
                                       "judge_model": judge_model,
                                       "prompt_version": prompt_version, "mode": mode,
                                       "method": scoring}
                if crit.name in item.references:
                    row["reference_score"] = item.references[crit.name]
                outcome = combined_outcome if mode == "combined" else by_id.get(
                    repeat_id(request_id(item.id, crit.name), r))
                missing = item.missing(crit)
                if missing:
                    row.update(score=None, status="unscored", reason="missing_input",
                               detail=f"empty field(s): {', '.join(missing)}")
                    rows.append(row)
                    continue
                if outcome is not None and first:
                    row["usage"] = usage_of([outcome])
                    first = mode != "combined"
                if outcome is None or not outcome.ok:
                    row.update(score=None, status="unscored",
                               reason=getattr(outcome, "reason", None) or "no_call",
                               detail=getattr(outcome, "detail", None))
                elif scoring == "choices":
                    row["method"] = f"choices:{outcome.response.choice_method or 'unknown'}"
                    row.update(_choice_fields(crit, outcome.response))
                else:
                    got = parsed[crit.name] if mode == "combined" else parse_reply(
                        outcome.response.text, crit)
                    row.update(score=got.score, status="ok" if got.ok else "unscored",
                               reply=outcome.response.text)
                    if got.explanation:
                        row["explanation"] = got.explanation
                    if not got.ok:
                        row.update(reason=got.reason, detail=got.detail)
                rows.append(row)
    return rows
