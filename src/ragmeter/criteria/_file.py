"""Reading and checking criteria files, before any model is called.

A criteria file is YAML (``.yaml``/``.yml``) or JSON (``.json``)::

    version: 1                       # optional: your own version of the file
    criteria:
      - name: relevance              # letters, digits, _ and -; the group of its numbers
        question: Does the answer respond to what the question asks?
        inputs: [question, response] # optional: the fields of a row the judge sees
        scale:                       # two or more whole-number points, one anchor each
          1: The answer is about something else.
          3: The answer responds to part of the question.
          5: The answer responds to exactly what was asked.
        pass_at: 4                   # optional: the least passing point
        examples:                    # optional: worked examples shown to the judge
          - question: When is the workshop open?
            response: Tuesday evenings.
            score: 5
            explanation: It answers the question asked.

A file may also hold one criterion at its top level (``name``, ``question``, ``scale``...).
``pass_at`` defaults to the least point above the middle of the scale.  Everything wrong is
an :class:`~ragmeter.errors.InputError` naming the file, the criterion, the field, what was
expected and the fix.

``criteria=`` of :func:`ragmeter.criteria.judge` (``--criteria``) takes a path, the name of a
shipped file (:func:`shipped_names`: ``relevance``, ``correctness``, ``completeness``), the
parsed mapping itself, a :class:`CriteriaSet`, or a list of these (their criteria in order;
names must differ).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragmeter._util._package import package_file
from ragmeter.criteria._types import (
    DEFAULT_INPUTS,
    CriteriaSet,
    CriteriaSource,
    Criterion,
    Example,
    default_pass_at,
)
from ragmeter.errors import ConfigError, InputError, UnknownNameError
from ragmeter.stats._metric import ALL_GROUP

__all__ = ["load_criteria", "shipped_names", "shipped_path", "parse_criteria"]

COMPONENT = "criteria"
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
_FILE_KEYS = ("version", "name", "description", "criteria")
_CRITERION_KEYS = ("name", "question", "scale", "inputs", "pass_at", "examples",
                   "description")
_SUFFIXES = (".yaml", ".yml", ".json")


def shipped_names() -> list[str]:
    """The criteria files that ship with ragmeter (``ragmeter/criteria/data``), by name."""
    root = package_file("ragmeter.criteria", "data")
    return sorted(p.name.rsplit(".", 1)[0] for p in root.iterdir()
                  if p.name.endswith(_SUFFIXES))


def shipped_path(name: str) -> Path:
    """The path of the shipped criteria file ``name`` (``relevance``)."""
    if name not in shipped_names():
        raise UnknownNameError("criteria file", name, shipped_names(), component=COMPONENT)
    return package_file("ragmeter.criteria", "data", f"{name}.yaml")


class _Where:
    """Builds the errors of one file: its path, the criterion being read, the field."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.criterion = ""

    def error(self, field: str, problem: str, fix: str) -> InputError:
        where = f"{self.criterion}.{field}" if self.criterion else field
        return InputError(problem, component=COMPONENT, path=self.path, field=where, fix=fix)


def _read(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("does not exist.", component=COMPONENT, path=path,
                         fix=f"give a criteria file (.yaml or .json) or a shipped name: "
                             f"{', '.join(shipped_names())}.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot be read ({exc}).", component=COMPONENT, path=path,
                         fix="give a UTF-8 YAML or JSON file.") from None
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"is not valid JSON ({exc.msg} at line {exc.lineno}, column "
                             f"{exc.colno}).", component=COMPONENT, path=path,
                             fix="correct the JSON, or write the file as YAML.") from None
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise InputError(f"is not valid YAML ({problem}{at}).", component=COMPONENT,
                         path=path, fix="correct the YAML (indentation, a ':' inside an "
                                        "unquoted text: quote it).") from None


def _check_keys(data: Mapping[str, Any], known: Sequence[str], where: _Where,
                field: str) -> None:
    from ragmeter.errors import did_you_mean

    for key in data:
        if key not in known:
            hint = did_you_mean(str(key), known)
            raise where.error(field + str(key) if field else str(key),
                              "is not a field of a criteria file" + (
                                  f" (did you mean {hint[0]!r}?)" if hint else "") + ".",
                              f"use only {', '.join(known)}.")


def _text(value: Any, where: _Where, field: str, fix: str) -> str:
    if not isinstance(value, str) or not value.strip():
        got = "missing" if value is None else f"{type(value).__name__} {value!r}"
        raise where.error(field, f"is {got}; expected a non-empty text.", fix)
    return value.strip()


def _point(value: Any, where: _Where, field: str) -> int:
    """A scale point: a whole number (YAML reads ``1:`` as 1; JSON keys are text)."""
    if isinstance(value, bool):
        value = None
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int):
        raise where.error(field, f"point {value!r} is not a whole number.",
                          "number the scale's points with whole numbers (1, 2, 3 ... or 0, "
                          "1, 2); put the words in the anchor.")
    return value


def _scale(raw: Any, where: _Where) -> tuple[tuple[int, str], ...]:
    fix = ("give the scale as 'POINT: anchor' lines (e.g. 1: Wrong. / 5: Right.), or a list of "
           "{score: POINT, anchor: TEXT}.")
    pairs: list[tuple[Any, Any]]
    if isinstance(raw, Mapping):
        pairs = list(raw.items())
    elif isinstance(raw, list) and all(isinstance(p, Mapping) for p in raw):
        pairs = []
        for i, p in enumerate(raw):
            _check_keys(p, ("score", "anchor"), where, f"scale[{i}].")
            pairs.append((p.get("score"), p.get("anchor")))
    else:
        got = "missing" if raw is None else f"a {type(raw).__name__}"
        raise where.error("scale", f"is {got}; expected a point and an anchor per line.", fix)
    scale: dict[int, str] = {}
    for point_raw, anchor in pairs:
        point = _point(point_raw, where, "scale")
        if point in scale:
            raise where.error("scale", f"point {point} is given twice.", "give each point once.")
        scale[point] = _text(anchor, where, f"scale.{point}",
                             "write what this point means (its anchor).")
    if len(scale) < 2:
        raise where.error("scale", f"has {len(scale)} point(s); expected two or more.", fix)
    return tuple(sorted(scale.items()))


def _inputs(raw: Any, where: _Where) -> tuple[str, ...]:
    if raw is None:
        return DEFAULT_INPUTS
    if isinstance(raw, str):
        raw = [raw]
    fix = ("list the fields of your rows the judge must see, e.g. inputs: [question, "
           "response, reference].")
    if not isinstance(raw, list) or not raw:
        raise where.error("inputs", f"is {raw!r}; expected a list of field names.", fix)
    out = []
    for name in raw:
        if not isinstance(name, str) or not _NAME.match(name):
            raise where.error("inputs", f"has {name!r}; expected a field name (letters, "
                                        "digits, _).", fix)
        if name in out:
            raise where.error("inputs", f"names {name!r} twice.", "name each field once.")
        out.append(name)
    return tuple(out)


def _examples(raw: Any, crit: Criterion, where: _Where) -> tuple[Example, ...]:
    if raw is None:
        return ()
    fix = ("give a list of examples, each with the criterion's inputs "
           f"({', '.join(crit.inputs)}), a score and optionally an explanation.")
    if not isinstance(raw, list):
        raise where.error("examples", f"is a {type(raw).__name__}; expected a list.", fix)
    out = []
    for i, ex in enumerate(raw):
        field = f"examples[{i + 1}]"
        if not isinstance(ex, Mapping):
            raise where.error(field, f"is {ex!r}; expected a mapping.", fix)
        _check_keys(ex, (*crit.inputs, "score", "explanation"), where, f"{field}.")
        values = {name: _text(ex.get(name), where, f"{field}.{name}", fix)
                  for name in crit.inputs}
        score = _point(ex.get("score"), where, f"{field}.score")
        if score not in crit.points:
            raise where.error(f"{field}.score", f"is {score}, not a point of the scale "
                                                f"({', '.join(map(str, crit.points))}).",
                              "give the example a score from the scale.")
        explanation = ex.get("explanation")
        out.append(Example(values, score, None if explanation is None else _text(
            explanation, where, f"{field}.explanation", fix)))
    return tuple(out)


def _criterion(raw: Any, where: _Where, position: int) -> Criterion:
    where.criterion = f"criteria[{position}]"
    if not isinstance(raw, Mapping):
        raise where.error("", f"is {raw!r}; expected a mapping with name, question and scale.",
                          "write each criterion as name:, question:, scale: (see "
                          "docs/criteria.md).")
    name_raw = raw.get("name")
    if isinstance(name_raw, str) and name_raw.strip():
        where.criterion = name_raw.strip()
    _check_keys(raw, _CRITERION_KEYS, where, "")
    name = _text(name_raw, where, "name", "give the criterion a name (letters, digits, _ -).")
    if name == ALL_GROUP:
        raise where.error("name", f"is {name!r}, the name of the group across criteria.",
                          "rename the criterion.")
    if not _NAME.match(name):
        raise where.error("name", f"is {name!r}; expected letters, digits, _ or -, starting "
                                  "with a letter (it names the criterion's numbers).",
                          "rename it, e.g. answer_relevance.")
    question = _text(raw.get("question"), where, "question",
                     "write the question the judge answers, e.g. 'Does the answer respond "
                     "to what was asked?'.")
    scale = _scale(raw.get("scale"), where)
    points = tuple(p for p, _ in scale)
    pass_at = default_pass_at(points)
    if raw.get("pass_at") is not None:
        pass_at = _point(raw.get("pass_at"), where, "pass_at")
        if pass_at not in points or pass_at == points[0]:
            raise where.error("pass_at", f"is {pass_at}; expected a point of the scale above "
                                         f"its lowest ({', '.join(map(str, points[1:]))}).",
                              "give the least point that counts as passing.")
    crit = Criterion(name=name, question=question, scale=scale,
                     inputs=_inputs(raw.get("inputs"), where), pass_at=pass_at,
                     source=where.path)
    examples = _examples(raw.get("examples"), crit, where)
    if raw.get("description") is not None:
        _text(raw.get("description"), where, "description", "give a text or leave it out.")
    from dataclasses import replace

    return replace(crit, examples=examples)


def parse_criteria(data: Any, label: str, name: str) -> tuple[list[Criterion], CriteriaSource]:
    """The criteria of one parsed file (``label``: its path, for errors) and its source."""
    where = _Where(label)
    if not isinstance(data, Mapping):
        got = "empty" if data is None else f"a {type(data).__name__}"
        raise InputError(f"is {got}; expected a mapping with a list of criteria (or one "
                         "criterion).", component=COMPONENT, path=label,
                         fix="start the file with 'criteria:' (see docs/criteria.md).")
    if "criteria" in data:
        _check_keys(data, _FILE_KEYS, where, "")
        raw = data["criteria"]
        if not isinstance(raw, list) or not raw:
            raise where.error("criteria", f"is {raw!r}; expected a non-empty list.",
                              "list one or more criteria under 'criteria:'.")
        criteria = [_criterion(c, where, i + 1) for i, c in enumerate(raw)]
    else:
        single = {k: v for k, v in data.items() if k != "version"}
        criteria = [_criterion(single, where, 1)]
    seen: set[str] = set()
    for c in criteria:
        if c.name in seen:
            raise InputError(f"names the criterion {c.name!r} twice.", component=COMPONENT,
                             path=label, field="name", fix="give every criterion its own name.")
        seen.add(c.name)
    version = data.get("version")
    canonical = json.dumps({"version": version, "criteria": [c.to_dict() for c in criteria]},
                           sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]
    source = CriteriaSource(name=name, path=label, sha256=digest,
                            version=None if version is None else str(version))
    return criteria, source


def _one(spec: Any) -> tuple[list[Criterion], list[CriteriaSource]]:
    if isinstance(spec, CriteriaSet):
        return list(spec.criteria), list(spec.sources)
    if isinstance(spec, Mapping):
        name = str(spec.get("name") or "criteria")
        found, source = parse_criteria(spec, "<criteria>", name)
        return found, [source]
    if isinstance(spec, (str, Path)):
        text = str(spec)
        path = Path(text)
        if not path.exists() and path.suffix.lower() not in _SUFFIXES and "/" not in text \
                and text in shipped_names():
            path = shipped_path(text)
            found, source = parse_criteria(_read(path), text, text)
            return found, [source]
        if not path.exists() and path.suffix.lower() not in _SUFFIXES and "/" not in text:
            raise UnknownNameError("criteria file", text, shipped_names(), component=COMPONENT)
        found, source = parse_criteria(_read(path), str(path), path.stem)
        return found, [source]
    raise ConfigError(f"criteria: criteria={spec!r} is not a path, a shipped name "
                      f"({', '.join(shipped_names())}), a mapping or a CriteriaSet.")


def load_criteria(spec: Any) -> CriteriaSet:
    """The criteria named by ``spec`` (see the module docstring), checked."""
    specs = list(spec) if isinstance(spec, (list, tuple)) else [spec]
    if not specs:
        raise ConfigError("criteria: no criteria were given. Fix: --criteria FILE (or a "
                          f"shipped name: {', '.join(shipped_names())}).")
    criteria: list[Criterion] = []
    sources: list[CriteriaSource] = []
    for s in specs:
        found, src = _one(s)
        for c in found:
            if any(c.name == other.name for other in criteria):
                raise InputError(f"names the criterion {c.name!r}, which an earlier criteria "
                                 "file names too.", component=COMPONENT, path=c.source,
                                 field="name", fix="rename one of them: criterion names "
                                                   "must differ within a run.")
            criteria.append(c)
        sources += src
    return CriteriaSet(tuple(criteria), tuple(sources))
