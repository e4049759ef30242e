"""Loading and checking prompt templates before any call is paid for (the prompt texts
themselves live with their family: ``ragmeter/<family>/prompts/``)."""

from __future__ import annotations

from ragmeter.prompts._templates import (
    check_template,
)

__all__ = [
    "check_template",
]
