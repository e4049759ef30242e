"""The one console ragmeter prints through (rich), in a module every layer may import."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["console"]


def console(*, stderr: bool = False) -> Console:
    """The one console ragmeter prints through: the terminal's width, or 140 columns when
    output is redirected (rich would otherwise squeeze tables into 80).

    Markup is off: no string is ever parsed as rich markup, so user data (a system named
    ``[/bold]``, an evaluator, a ``--by`` value, an install hint ``ragmeter[local]``) prints
    as written and can never crash the console.  Style goes through ``style=`` arguments.
    """
    import os
    import sys

    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() or os.environ.get("COLUMNS") else 140
    return Console(highlight=False, soft_wrap=False, width=width, markup=False,
                   emoji=False, stderr=stderr)
