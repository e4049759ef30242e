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
