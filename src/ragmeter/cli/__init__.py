"""The ``ragmeter`` command line: ``ragmeter <family> <verb>``.

Wiring only.  Command groups are registered lazily as ``"module:attr"`` entries so that
``ragmeter --help`` imports nothing heavy, and every group goes through the same path.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from ragmeter._util._gc import paused_gc

with paused_gc():  # start-up imports allocate much and make few cycles (issue 26.5)
    import click

    from ragmeter._version import __version__
    from ragmeter.cli.options import FiniteFloat
    from ragmeter.errors import RunFailedError, UserError, did_you_mean

__all__ = ["main", "cli", "COMMANDS"]

# name -> ("module:attr", one-line help).  Add a family here.
COMMANDS: dict[str, tuple[str, str]] = {
    "criteria": ("ragmeter.cli.criteria:group",
                 "Judges on your own criteria: a scale per criterion, QWK against human scores."),
    "app": ("ragmeter.cli.app:group",
            "Run your own RAG application on a test set; keep its answers and contexts."),
    "demo": ("ragmeter.cli.demo:demo", "Run ragmeter's main job on its built-in sample."),
    "multilingual": ("ragmeter.cli.multilingual:group",
                     "Multilingual QA (LBRAG): EM, F1, RLC, cost, CNBE, semantic score."),
    "rgb": ("ragmeter.cli.rgb:group", "RGB benchmark (AAAI 2024): build, score and run, paper-exact."),
    "trace": ("ragmeter.cli.trace:group", "TRACe (RAGBench): score, label, validate a judge."),
    "reliability": ("ragmeter.cli.reliability:group",
                    "Annotator reliability against QC: flag mismatch, Cohen's κ, matrix plot."),
    "retrieval": ("ragmeter.cli.retrieval:group",
                  "Retrieval metrics exact to trec_eval: P@k, recall, nDCG, hit rate, MRR, MAP."),
    "generate": ("ragmeter.cli.generate:generate", "Send a file of requests to a model (cached)."),
    "cache": ("ragmeter.cli.cache:group", "The store of model calls: stats and clear."),
    "models": ("ragmeter.cli.models:models", "Model backends, the default model, what to install."),
    "gate": ("ragmeter.cli.gate:gate", "Check a result file against thresholds (CI gate)."),
    "runs": ("ragmeter.cli.runs:group", "Run records: prune old ones (retention)."),
    "report": ("ragmeter.cli.report:report", "One self-contained HTML report from stored runs."),
    "rubric": ("ragmeter.cli.rubric:group", "Rubric judging (RAGaliq): 0-5 grades, weighted score, stability, RAG run."),
    "view": ("ragmeter.cli.view:view", "A local web app: browse, compare and launch runs."),
}


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
        rows = [(name, self.lazy[name][1]) for name in sorted(self.lazy)]
        rows += [(n, c.get_short_help_str()) for n, c in self.commands.items()
                 if n not in self.lazy]
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


def _echo_error(message: str) -> None:
    """``error: message`` on stderr; a file name that is not UTF-8 is shown escaped."""
    text = f"error: {message}".encode("utf-8", "backslashreplace").decode("utf-8")
    click.echo(" ".join(text.splitlines()), err=True)


def main(argv: list[str] | None = None) -> None:
    """Entry point: user errors print one line and exit 2, without a traceback; a run that
    failed as a whole (every model call failed, or nothing kept) prints one line and exits
    1."""
    try:
        cli.main(args=argv, prog_name="ragmeter", standalone_mode=False)
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
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
    except click.exceptions.Exit as err:
        sys.exit(err.exit_code)
    except BrokenPipeError:
        sys.exit(0)
    sys.exit(0)
