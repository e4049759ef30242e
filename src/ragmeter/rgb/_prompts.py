"""RGB prompts: the generation prompt (system + instruction) and the two judge prompts.

Layouts are RGB's (chen700564/RGB @ 65ec39e): ``config/instruction.yaml`` maps a language
(``en``/``zh``) to ``system`` and ``instruction`` (``str.format`` fields ``{DOCS}`` and
``{QUERY}``); the judge prompts (``judge_prompts.yaml``) map ``reject`` and ``fact`` to a
``template`` with ``{question}`` and ``{answer}``.  RGB's own texts are CC BY-NC-SA and are read
from the user's copy (``--prompts``, ``--judge-prompts``); without them ragmeter uses prompts
written by its authors (``ragmeter/rgb/prompts/*.json``), which carry their own version.

Message building follows evalue.py ``predict``: with documents, ``[system, user]`` where the
user message is ``instruction.format(QUERY=query, DOCS="\\n".join(docs))``; with no document,
only the user message with ``DOCS=''`` (and no system prompt).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter._util._package import package_file
from ragmeter.errors import InputError, MissingDependencyError
from ragmeter.rgb._data import COMPONENT

__all__ = ["RgbPrompts", "JudgePrompts", "load_prompts", "load_judge_prompts",
           "build_messages", "build_judge_message"]


@dataclass(frozen=True)
class RgbPrompts:
    version: str
    by_lang: dict[str, tuple[str, str]]  # lang -> (system, instruction)

    def for_lang(self, lang: str, source: str = "prompts") -> tuple[str, str]:
        if lang not in self.by_lang:
            raise InputError(f"has no prompts for language {lang!r} (it has: "
                             f"{', '.join(sorted(self.by_lang)) or 'none'}).",
                             component=COMPONENT, path=source,
                             fix=f"add a section '{lang}:' with system and instruction.")
        return self.by_lang[lang]


@dataclass(frozen=True)
class JudgePrompts:
    version: str
    reject: str  # template with {question} and {answer}
    fact: str  # template with {answer} (and optionally {question})


def _read_mapping(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise InputError("does not exist.", component=COMPONENT, path=path, fix="check the path.")
    raw = path.read_bytes()
    text = raw.decode("utf-8", errors="strict")
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise MissingDependencyError("PyYAML (needed to read RGB's .yaml prompt files)",
                                         "pip install pyyaml") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise InputError(f"is not valid YAML ({exc}).".replace("\n", " "),
                             component=COMPONENT, path=path, fix="check the file's syntax.") from None
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"is not valid JSON ({exc.msg} at line {exc.lineno}).",
                             component=COMPONENT, path=path,
                             fix="check the file's syntax.") from None
    if not isinstance(data, dict):
        raise InputError("must hold a mapping at the top level.", component=COMPONENT,
                         path=path, fix="see RGB's config/instruction.yaml for the layout.")
    return data


def _file_version(path: Path) -> str:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return f"file:{path.name}:{digest}"


def _check_template(template: Any, fields: dict[str, str], path: Path, where: str) -> str:
    if not isinstance(template, str):
        raise InputError(f"{where} is missing or not text.", component=COMPONENT, path=path,
                         fix="give the template as a string.")
    try:
        template.format(**fields)
    except (KeyError, IndexError, ValueError) as exc:
        raise InputError(f"{where} is not a valid template ({type(exc).__name__}: {exc}).",
                         component=COMPONENT, path=path,
                         fix=f"use only the fields {', '.join('{'+f+'}' for f in fields)} "
                             "and double other braces.") from None
    return template


def _builtin(name: str) -> Path:
    return package_file("ragmeter.rgb", "prompts", name)


def load_prompts(path: str | Path | None = None) -> RgbPrompts:
    """RGB's ``instruction.yaml`` (or a JSON file of the same layout); ragmeter's own prompts
    when ``path`` is None."""
    p = Path(path) if path is not None else _builtin("instruction.json")
    data = _read_mapping(p)
    version = str(data["version"]) if path is None else _file_version(p)
    by_lang: dict[str, tuple[str, str]] = {}
    for lang, section in data.items():
        if not isinstance(section, dict):
            continue
        system = _check_template(section.get("system"), {}, p, f"{lang}.system")
        instruction = _check_template(section.get("instruction"), {"DOCS": "", "QUERY": ""},
                                      p, f"{lang}.instruction")
        by_lang[str(lang)] = (system, instruction)
    if not by_lang:
        raise InputError("has no language section with system and instruction.",
                         component=COMPONENT, path=p,
                         fix="use RGB's layout: en: {system: ..., instruction: ...}.")
    return RgbPrompts(version=version, by_lang=by_lang)


def load_judge_prompts(path: str | Path | None = None) -> JudgePrompts:
    """RGB's judge prompts (``reject.template``, ``fact.template``); ragmeter's own few-shot
    judge prompts when ``path`` is None."""
    p = Path(path) if path is not None else _builtin("judge.json")
    data = _read_mapping(p)
    version = str(data["version"]) if path is None else _file_version(p)
    templates: dict[str, str] = {}
    for name in ("reject", "fact"):
        section = data.get(name)
        if not isinstance(section, dict):
            raise InputError(f"has no section {name!r} with a template.", component=COMPONENT,
                             path=p, fix="give reject: {template: ...} and fact: {template: ...}.")
        templates[name] = _check_template(section.get("template"),
                                          {"question": "", "answer": ""}, p, f"{name}.template")
    return JudgePrompts(version=version, reject=templates["reject"], fact=templates["fact"])


def build_messages(system: str, instruction: str, query: str,
                   docs: list[str]) -> list[dict[str, str]]:
    """evalue.py ``predict``: ``[system, user]`` with documents, ``[user]`` without."""
    if len(docs) == 0:
        return [{"role": "user", "content": instruction.format(QUERY=query, DOCS="")}]
    return [{"role": "system", "content": system},
            {"role": "user", "content": instruction.format(QUERY=query, DOCS="\n".join(docs))}]


def build_judge_message(template: str, question: str, answer: str) -> list[dict[str, str]]:
    """reject_evalue.py / fact_evalue.py ``check``: one user message,
    ``prompt.format(question=..., answer=...)``."""
    return [{"role": "user", "content": template.format(question=question, answer=answer)}]
