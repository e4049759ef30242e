"""The ragmeter exception tree.

Every error a user can fix derives from :class:`UserError`; the CLI prints its message on one
line (no traceback) and exits with code 2.  Everything else is a bug and keeps its traceback.

::

    RagmeterError                    base of everything ragmeter raises on purpose
    ├── UserError                    the user can fix it; CLI exit code 2, no traceback
    │   ├── InputError               a data file is unreadable or a row/field is invalid
    │   │                            (carries file, line/row, field, expected, fix)
    │   ├── UnknownNameError         an unknown system, metric, backend, language, ... with
    │   │                            a did-you-mean suggestion
    │   ├── ConfigError              contradictory or invalid options
    │   ├── MissingDependencyError   an optional extra is not installed (says the pip line)
    │   ├── ReplayMissError          --replay was asked and a response is not in the store
    │   └── RunFailedError           a run in which every model call failed or that kept
    │                                nothing (carries the Result; CLI exit code 1)
    └── BackendError                 a model call failed after retries (becomes "unscored"
                                     data inside runs; only raised to callers that asked)
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = [
    "RagmeterError",
    "UserError",
    "InputError",
    "UnknownNameError",
    "ConfigError",
    "MissingDependencyError",
    "ReplayMissError",
    "RunFailedError",
    "BackendError",
    "did_you_mean",
]


class RagmeterError(Exception):
    """Base of every error ragmeter raises on purpose."""


class UserError(RagmeterError):
    """A problem the user can fix.  ``str(err)`` is the complete message shown by the CLI."""

    exit_code = 2


class InputError(UserError):
    """A data file or one of its rows is invalid.

    The message names the component, the file, the line (JSONL/CSV, 1-based) or row (JSON,
    Parquet; 1-based), the field, what was expected and how to fix it, e.g.
    ``multilingual: line 17 of preds.jsonl: field "pred_answer" is missing (required). Found
    fields: id, output. Fix: add the field or map it with --field pred_answer=COLUMN.``
    """

    def __init__(
        self,
        problem: str,
        *,
        component: str = "ragmeter",
        path: str | Path | None = None,
        line: int | None = None,
        row: int | None = None,
        field: str | None = None,
        fix: str | None = None,
        index: int | None = None,
    ) -> None:
        self.problem = problem
        self.index = index  # 0-based position in in-memory data (list, DataFrame, Arrow table)
        self.component = component
        self.path = str(path) if path is not None else None
        self.line = line
        self.row = row
        self.field = field
        self.fix = fix
        super().__init__(self._render())

    def _render(self) -> str:
        where: list[str] = []
        if self.line is not None:
            where.append(f"line {self.line}")
        elif self.row is not None:
            where.append(f"row {self.row}")
        elif self.index is not None:
            where.append(f"index {self.index}")
        place = " of ".join(where + ([self.path] if self.path else []))
        msg = f"{self.component}: "
        if place:
            msg += f"{place}: "
        if self.field:
            msg += f'field "{self.field}": '
        msg += self.problem
        if self.fix:
            msg += f" Fix: {self.fix}"
        return msg


def did_you_mean(name: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """Close matches of ``name`` among ``choices`` (case-insensitive), best first."""
    pool = {c.lower(): c for c in choices}
    import difflib

    found = difflib.get_close_matches(name.lower(), list(pool), n=n, cutoff=0.6)
    return [pool[f] for f in found]


class UnknownNameError(UserError):
    """An unknown name (system, metric, backend, language, evaluator, ...).

    ``Unknown baseline system 'direkt'. Did you mean: direct? Known: cross, direct, lbrag.``
    """

    def __init__(self, kind: str, name: str, choices: Iterable[str], component: str = "ragmeter"):
        known = sorted(set(choices))
        self.kind = kind
        self.name = name
        self.suggestions = did_you_mean(name, known)
        msg = f"{component}: unknown {kind} {name!r}."
        if self.suggestions:
            msg += f" Did you mean: {', '.join(self.suggestions)}?"
        if known:
            shown = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "")
            msg += f" Known: {shown}."
        super().__init__(msg)


class ConfigError(UserError):
    """Invalid or contradictory options."""


class MissingDependencyError(UserError):
    """An optional dependency is missing; the message gives the exact install command."""

    def __init__(self, what: str, install: str, detail: str = "") -> None:
        self.install = install
        msg = f"{what} is not installed. Install it with: {install}"
        if detail:
            msg += f" ({detail})"
        super().__init__(msg)


class ReplayMissError(UserError):
    """``--replay`` was requested and a needed response is not in the store."""


class RunFailedError(UserError):
    """A run that failed as a whole: every model call failed, or nothing could be kept (no item
    scored, no question written).  Nothing the options said was wrong, so the CLI exits with
    code 1 (not 2).

    ``cause`` says what happened in one line (with the most common reason and an example of
    it), ``fix`` what to change in Python words and ``cli_fix`` in flags; ``result`` is the
    run's :class:`~ragmeter.result.Result`, whose items say what happened to each (the calls
    that succeeded are stored, so a second run does not pay for them again)."""

    exit_code = 1

    def __init__(self, component: str, cause: str, fix: str, result: Any = None,
                 cli_fix: str | None = None) -> None:
        super().__init__(f"{component}: {cause}. Fix: {fix}.")
        self.component = component
        self.cause = cause
        self.fix = fix
        self.cli_fix = cli_fix or fix
        self.result = result

    def cli_message(self) -> str:
        """The message with the fix in the command line's words (flags), the component as a
        command (``rgb run``)."""
        return f"{self.component.replace('.', ' ')}: {self.cause}. Fix: {self.cli_fix}."


class BackendError(RagmeterError):
    """A model call failed; ``reason`` is a short machine-readable code (``http_429``, ...)."""

    def __init__(self, reason: str, detail: str = "", retryable: bool = False,
                 retry_after: float | None = None) -> None:
        self.reason = reason
        self.detail = detail
        self.retryable = retryable
        self.retry_after = retry_after
        super().__init__(f"{reason}: {detail}" if detail else reason)
