"""Options shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def field_option(f: F) -> F:
    return click.option(
        "--field", "fields", multiple=True, metavar="NAME=COLUMN",
        help="Read ragmeter's field NAME from your column COLUMN (repeatable).",
    )(f)


def json_out_option(f: F) -> F:
    return click.option("--json", "json_out", type=click.Path(dir_okay=False),
                        help="Write the aggregate results as JSON to this file.")(f)


def items_out_option(f: F) -> F:
    return click.option("--items", "items_out", type=click.Path(dir_okay=False),
                        help="Write per-item results as JSON Lines to this file.")(f)


def input_path() -> Callable[[F], F]:
    return click.argument("path", type=click.Path(dir_okay=False))
