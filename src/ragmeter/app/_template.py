"""The request template of an HTTP application: a JSON value whose strings may hold
placeholders, filled from one test-set row.  Pure.

``{name}`` is the row's field ``name`` (``{question}``, ``{id}``, ``{reference}``, ``{lang}``
or any column of the test set); ``{{`` and ``}}`` are literal braces.  A string that is exactly
one placeholder takes the field's value as it is (a list stays a list, a number a number);
inside a longer string the value is written as text (JSON for a list or an object).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ragmeter.errors import ConfigError

__all__ = ["placeholders", "render", "parse_template", "MissingPlaceholder"]

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


class MissingPlaceholder(Exception):
    """A placeholder names a field the row does not have."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def placeholders(template: Any) -> list[str]:
    """The field names a template uses, in order of first use."""
    names: dict[str, None] = {}
    for text in _strings(template):
        for m in _PLACEHOLDER.finditer(text):
            if m.group(1):
                names.setdefault(m.group(1))
    return list(names)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _fill(text: str, values: Mapping[str, Any]) -> Any:
    whole = _PLACEHOLDER.fullmatch(text)
    if whole is not None and whole.group(1):
        if whole.group(1) not in values:
            raise MissingPlaceholder(whole.group(1))
        return values[whole.group(1)]

    def one(m: re.Match[str]) -> str:
        if m.group(0) == "{{":
            return "{"
        if m.group(0) == "}}":
            return "}"
        if m.group(1) not in values:
            raise MissingPlaceholder(m.group(1))
        return _as_text(values[m.group(1)])

    return _PLACEHOLDER.sub(one, text)


def render(template: Any, values: Mapping[str, Any]) -> Any:
    """``template`` with every placeholder filled from ``values``;
    :class:`MissingPlaceholder` for a field ``values`` lacks."""
    if isinstance(template, str):
        return _fill(template, values)
    if isinstance(template, Mapping):
        return {_as_text(render(k, values)): render(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [render(v, values) for v in template]
    return template


def parse_template(template: Any, what: str = "template") -> Any:
    """A template given as JSON text or as a value: checked to be JSON with at least one
    placeholder (a body without one would send every row the same request)."""
    value = template
    if isinstance(template, str):
        try:
            value = json.loads(template)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"app: {what} is not JSON ({exc.msg} at character {exc.pos}). "
                              'Fix: give a JSON object such as {"query": "{question}"}.'
                              ) from None
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"app: {what} cannot be sent as JSON ({exc}). Fix: use objects, "
                          "lists, text, numbers, true/false and null.") from None
    if not placeholders(value):
        raise ConfigError(f"app: {what} has no placeholder, so every row would send the same "
                          'request. Fix: put {question} (or {id}, or any column of the test '
                          'set) where the question goes, e.g. {"query": "{question}"}.')
    return value
