"""The rubric family's own error: :class:`BuildFailedError` (a build that wrote no question).
Imports nothing of the family, so the façade can export it cheaply."""

from __future__ import annotations

from typing import Any

from ragmeter.errors import RunFailedError

__all__ = ["BuildFailedError"]


class BuildFailedError(RunFailedError):
    """``rubric build`` generated no question (the model wrote none that could be read, every
    generation call failed, or no chunk was long enough): nothing is written to ``out``.

    ``cause`` says why in one line, ``fix`` what to change; ``result`` is the build's
    :class:`~ragmeter.result.Result` (its items say what happened to every chunk).  The CLI
    prints the tables, writes ``--items``/``--json`` and the run record, then this message,
    and exits with code 1 (the run failed; options were not wrong)."""

    def __init__(self, cause: str, fix: str, result: Any = None) -> None:
        super().__init__("rubric build", cause, fix, result)
