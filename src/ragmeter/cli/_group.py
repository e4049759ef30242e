"""The click group behind ``ragmeter``: families registered lazily as ``"module:attr"``
entries, so that ``ragmeter --help`` imports nothing heavy, and did-you-mean hints.  Imported
by :mod:`ragmeter.cli` when a command line is not one that :mod:`ragmeter.cli._fast` runs
without click."""

from __future__ import annotations

import importlib
from typing import Any

from ragmeter._util._gc import paused_gc

with paused_gc():  # start-up imports allocate much and make few cycles (issue 26.5)
    import click

    from ragmeter._version import __version__
    from ragmeter.cli._commands import COMMANDS
    from ragmeter.cli.options import FiniteFloat
    from ragmeter.errors import did_you_mean

__all__ = ["LazyGroup", "cli"]


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use, with did-you-mean."""

    def __init__(self, *args: Any, lazy: dict[str, tuple[str, str]] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            target, _ = self.lazy[cmd_name]
            module, _, attr = target.partition(":")
            with paused_gc():  # as for click above
                return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The lazy commands' one-line help as registered (nothing imported); the others'
        short help cut at the width click's own group gives it."""
        shown = {n: c for n, c in self.commands.items() if n not in self.lazy and not c.hidden}
        names = [*self.lazy, *shown]
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = [(name, self.lazy[name][1]) for name in self.lazy]
        rows += [(n, c.get_short_help_str(limit)) for n, c in shown.items()]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(sorted(rows))

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            hints = did_you_mean(name, self.list_commands(ctx))
            msg = f"No such command {name!r}."
            if hints:
                msg += f" Did you mean: {', '.join(hints)}?"
            ctx.fail(msg)
        return super().resolve_command(ctx, args)


@click.group(cls=LazyGroup, lazy=COMMANDS,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="ragmeter")
@click.option("--max-line-mb", type=FiniteFloat(min=0.001), default=None, metavar="N",
              help="Largest line (JSONL, CSV) or record (JSON) read from a data file, in MiB "
                   "(default 32, or RAGMETER_MAX_LINE_MB).")
def cli(max_line_mb: float | None) -> None:
    """ragmeter: measure retrieval-augmented generation (RAG) systems.

    Score outputs you already have (no model needed), or run a benchmark against a model
    (an offline local model by default, or any OpenAI-compatible endpoint).
    Every command has --help.
    """
    if max_line_mb is not None:
        import os

        os.environ["RAGMETER_MAX_LINE_MB"] = str(max_line_mb)
