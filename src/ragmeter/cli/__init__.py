"""The ``ragmeter`` command line: ``ragmeter <family> <verb>``.

Wiring only.  Command groups are registered lazily as ``"module:attr"`` entries
(:mod:`ragmeter.cli._commands`, :mod:`ragmeter.cli._group`) so that ``ragmeter --help``
imports nothing heavy, and every group goes through the same path; a ``generate`` line that
:mod:`ragmeter.cli._fast` fully understands runs without click (issue 26.5).
"""

from __future__ import annotations

import sys
from typing import Any

from ragmeter._util._gc import paused_gc

with paused_gc():  # start-up imports allocate much and make few cycles (issue 26.5)
    from ragmeter.cli._commands import COMMANDS
    from ragmeter.errors import RunFailedError, UserError

__all__ = ["main", "cli", "COMMANDS"]


def __getattr__(name: str) -> Any:
    """``cli`` and ``LazyGroup`` (:mod:`ragmeter.cli._group`) are imported on first use: a
    ``generate`` line that :mod:`ragmeter.cli._fast` understands never imports click."""
    if name in ("cli", "LazyGroup"):
        with paused_gc():  # as the group's own imports
            from ragmeter.cli import _group
        return getattr(_group, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _run(argv: list[str] | None) -> None:
    """The command line through the fast path for ``generate`` when it understands it, else
    through click."""
    with paused_gc():  # the imports, as for a command imported through the group
        from ragmeter.cli._fast import generate_args

        fast = generate_args(sys.argv[1:] if argv is None else list(argv))
        if fast is not None:
            from ragmeter.cli._generate_run import run_generate_command

            if argv is None:  # this process's own command line (the entry point)
                import gc

                # What the imports left (modules, classes, functions) lives as long as the
                # process: out of the collector's way, so that the collections while the
                # requests are read and keyed do not traverse it (3 ms before the first call).
                gc.freeze()
    if fast is not None:
        requests_path, out_path, options = fast
        try:
            run_generate_command(requests_path, out_path, **options)
        except (EOFError, KeyboardInterrupt):
            # as through click: its main prints a new line and raises Abort, which main()
            # below turns into "Aborted." and exit 130
            from ragmeter.cli._calls import echo

            echo("", err=True)
            echo("Aborted.", err=True)
            sys.exit(130)
        return
    group = __getattr__("cli")
    group.main(args=argv, prog_name="ragmeter", standalone_mode=False)


def _echo_error(message: str) -> None:
    """``error: message`` on stderr; a file name that is not UTF-8 is shown escaped."""
    text = f"error: {message}".encode("utf-8", "backslashreplace").decode("utf-8")
    from ragmeter.cli._calls import echo

    echo(" ".join(text.splitlines()), err=True)


def main(argv: list[str] | None = None) -> None:
    """Entry point: user errors print one line and exit 2, without a traceback; a run that
    failed as a whole (every model call failed, or nothing kept) prints one line and exits
    1."""
    try:
        _run(argv)
    except RunFailedError as err:
        # a run that failed as a whole: the cause, and the fix in flags (exit 1)
        _echo_error(err.cli_message())
        sys.exit(err.exit_code)
    except UserError as err:
        _echo_error(str(err))
        sys.exit(err.exit_code)
    except RecursionError:
        _echo_error("ragmeter: the input is nested too deeply to process. Fix: flatten it.")
        sys.exit(2)
    except OSError as err:
        # Files the user named (read-only folders, a full disk): one line, never a traceback.
        from ragmeter.io import os_error_message

        _echo_error(os_error_message(err))
        sys.exit(2)
    except Exception as err:
        _click_exit(err)
        raise
    sys.exit(0)


def _click_exit(err: Exception) -> None:
    """Exit as click's own exceptions ask (only click raises them, so only once imported)."""
    click = sys.modules.get("click")
    if click is None:
        return
    if isinstance(err, click.exceptions.Abort):
        click.echo("Aborted.", err=True)
        sys.exit(130)
    if isinstance(err, click.ClickException):
        err.show()
        sys.exit(err.exit_code)
    if isinstance(err, click.exceptions.Exit):
        sys.exit(err.exit_code)
    sys.exit(0)
