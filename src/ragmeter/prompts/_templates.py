"""Checking user prompt templates (``--prompt-file``) before any call is paid for.

Templates are Python ``str.format`` strings.  :func:`check_template` refuses one that does not
parse, names an unknown field, or lacks a field the prompt needs (a judge prompt without
``{response}`` would grade nothing), with a one-line :class:`~ragmeter.errors.InputError`.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from pathlib import Path

from ragmeter.errors import InputError

__all__ = ["check_template"]


def check_template(text: str, path: str | Path, *, component: str,
                   required: Sequence[Sequence[str]], known: Sequence[str]) -> None:
    """``required`` holds groups of alternatives (``("question", "instruction")``: one of them
    must appear); ``known`` every field the caller fills in."""
    fix = ("write the prompt with Python str.format fields " +
           ", ".join("{" + k + "}" for k in known) + "; double literal braces ({{ }}).")
    try:
        fields = {f for _, f, _, _ in string.Formatter().parse(text) if f is not None}
    except ValueError as exc:
        raise InputError(f"is not a valid str.format template ({exc}).", component=component,
                         path=path, fix=fix) from None
    unknown = sorted(f for f in fields if f.split(".")[0].split("[")[0] not in known)
    if unknown:
        raise InputError(f"uses the unknown field {{{unknown[0]}}}.", component=component,
                         path=path, fix=fix)
    for group in required:
        if not fields.intersection(group):
            names = " or ".join("{" + g + "}" for g in group)
            raise InputError(f"has no {names} field, so the model would never see it.",
                             component=component, path=path, fix=fix)
