"""Calling a verb from a command and printing its lines, without importing click for the
common case (``ragmeter generate``'s fast path runs before click is imported, and a plain
run never imports it, issue 26.5); :mod:`ragmeter.cli.options` re-exports them."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["run_verb", "end_run", "echo"]


def run_verb(verb: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """Call a verb that calls a model: ``(result, failure)``.  A run that failed as a whole
    (:class:`~ragmeter.errors.RunFailedError`) comes back as its Result with the error, so the
    command still shows and writes what it would have (nothing lost: the items say what
    happened to each), then :func:`end_run` exits 1 with one line in flags."""
    from ragmeter.errors import RunFailedError

    try:
        return verb(*args, **kwargs), None
    except RunFailedError as err:
        if err.result is None:
            raise
        return err.result, err


def echo(message: str, err: bool = False) -> None:
    """``click.echo(message, err=err)``: the line and a newline, flushed.  ASCII text without
    an escape character is written directly (the same bytes: click would neither strip nor
    re-encode anything); anything else goes through click.echo itself."""
    if not message.isascii() or "\x1b" in message:
        import click

        click.echo(message, err=err)
        return
    stream = sys.stderr if err else sys.stdout
    if stream is None:  # as click.echo: no stream, nothing printed
        return
    stream.write(message + "\n")
    stream.flush()


def end_run(result: Any, failure: Any = None) -> None:
    """The end of a command that called a model: raise ``failure`` (exit 1, one line), or
    print one line on stderr beside the coverage when some items failed (how many, the most
    common reason, an example)."""
    if failure is not None:
        raise failure
    from ragmeter._verb._failure import partial_note

    note = partial_note(result)
    if note:
        echo(f"warning: {note}", err=True)
