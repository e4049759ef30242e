"""The app family's own error: :class:`AppFailedError` (a run in which no row was answered).
Imports nothing of the family, so the façade can export it cheaply."""

from __future__ import annotations

from typing import Any

from ragmeter.errors import UserError

__all__ = ["AppFailedError"]


class AppFailedError(UserError):
    """``app run`` got no answer for any row (every call failed, or no reply held the answer):
    nothing is written to ``out``.

    ``cause`` says why in one line (the reasons and the first row's detail), ``fix`` what to
    check; ``result`` is the run's :class:`~ragmeter.result.Result` (its items say what
    happened to every row).  The CLI prints the table and writes ``--json`` and the run
    record, then this message, and exits with code 1 (the run failed; options were not
    wrong)."""

    exit_code = 1

    def __init__(self, cause: str, fix: str, result: Any = None) -> None:
        super().__init__(f"app run: {cause}. Fix: {fix}.")
        self.cause = cause
        self.fix = fix
        self.result = result
