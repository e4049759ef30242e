"""Options shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

# re-exported: the commands import them from here
from ragmeter.cli._calls import end_run as end_run
from ragmeter.cli._calls import run_verb as run_verb

F = TypeVar("F", bound=Callable[..., Any])


class FiniteFloat(click.FloatRange):
    """A number flag: ``click.FloatRange`` that also refuses ``nan``, ``inf`` and values that
    overflow a float (``1e999``), which pass every range comparison and used to fail after
    the calls were paid (issue 29.3).  The check is :func:`ragmeter._util.number_problem`,
    the same one the Python API's options and the web form's fields use."""

    name = "float"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        from ragmeter._util import number_problem

        number = click.FLOAT.convert(value, param, ctx)
        problem = number_problem(number, lo=self.min, hi=self.max, lo_open=self.min_open)
        if problem is None and self.max_open and self.max is not None and number >= self.max:
            problem = f"must be below {self.max:g}, got {number!r}."
        if problem is not None:
            self.fail(problem, param, ctx)
        return number


def idle_blas_threads() -> None:
    """Before numpy is first imported: OpenBLAS's worker threads go to sleep as soon as they
    are idle (``OPENBLAS_THREAD_TIMEOUT``) instead of spinning for a while first.  numpy's
    import starts them, and their spin cost 0.05-0.1 s of CPU of every scoring process that
    had a free core (perf, issue 26.3), where scoring makes next to no BLAS calls (`multilingual score`, `trace score`).  A value
    the user set wins; no effect with another BLAS or once numpy is loaded."""
    import os
    import sys

    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")


def field_option(f: F) -> F:
    return click.option(
        "--field", "fields", multiple=True, metavar="NAME=COLUMN",
        help="Read ragmeter's field NAME from your column COLUMN (repeatable).",
    )(f)


def repeats_option(f: F) -> F:
    """``--repeats N`` of a judged command (ragmeter.judges._repeats)."""
    return click.option(
        "--repeats", default=1, show_default=True, type=click.IntRange(1, 50),
        help="Judge every item N times with distinct calls (resumable from the store) and "
             "print the judge's stability: flip rate, per-item agreement, Fleiss' kappa. "
             "The headline numbers stay the first repeat's.")(f)


def by_option(f: F) -> F:
    """``--by FIELD`` of a score or judge command (ragmeter._verb._groups)."""
    return click.option(
        "--by", "by", default=None, metavar="FIELD",
        help="Also report quality, coverage and cost per group of items sharing FIELD "
             "(e.g. lang, dataset, system, or any column of your data), with 95% CIs.")(f)


def json_out_option(f: F) -> F:
    return click.option("--json", "json_out", type=output_file(),
                        help="Write the aggregate results as JSON to this file.")(f)


def items_out_option(f: F) -> F:
    return click.option("--items", "items_out", type=output_file(),
                        help="Write per-item results as JSON Lines to this file.")(f)


def input_path() -> Callable[[F], F]:
    return click.argument("path", type=input_file())


def write_outputs(result: Any, json_out: str | None, items_out: str | None) -> None:
    """Write ``result.to_json()`` to ``--json`` and ``result.iter_items()`` to ``--items``
    (atomically), saying where on stderr."""
    from ragmeter.io import write_json, write_jsonl

    if json_out:
        write_json(json_out, result.to_json())
        click.echo(f"wrote {json_out}", err=True)
    if items_out:
        n = write_jsonl(items_out, result.iter_items())
        click.echo(f"wrote {n} items to {items_out}", err=True)


class GuardedPath(click.Path):
    """A path option or argument with a role: ``input`` (read), ``output`` (written).

    Every output is checked against every input of the same command line as soon as both are
    parsed, before the command runs (:func:`ragmeter.io._read.check_output`): an output that
    resolves to an input (same file, symlink or hard link) is refused with exit 2.
    ``pattern`` on an input folder names the files read from it.
    """

    def __init__(self, role: str, *, pattern: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.role = role
        self.pattern = pattern

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        value = super().convert(value, param, ctx)
        if ctx is None or value is None:
            return value
        from ragmeter.io import check_output

        label = ("path" if param is None else param.human_readable_name
                 if isinstance(param, click.Argument) else param.opts[0])
        paths = ctx.meta.setdefault("ragmeter.paths", {"input": [], "output": []})
        if self.role == "input":
            entry = (label, str(value), self.pattern)
            paths["input"].append(entry)
            for out_label, out in paths["output"]:
                check_output(out, [entry], label=out_label)
        else:
            paths["output"].append((label, str(value)))
            check_output(value, paths["input"], label=label)
        return value


def input_file(**kwargs: Any) -> GuardedPath:
    """A data file the command reads."""
    return GuardedPath("input", dir_okay=False, **kwargs)


def output_file(**kwargs: Any) -> GuardedPath:
    """A file the command writes (never allowed to be one of its inputs)."""
    return GuardedPath("output", dir_okay=False, **kwargs)
