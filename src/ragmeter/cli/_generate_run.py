"""What ``ragmeter generate`` does once its command line is parsed, by click
(:mod:`ragmeter.cli.generate`) or by the fast path (:mod:`ragmeter.cli._fast`), which imports
no click (issue 26.5)."""

from __future__ import annotations

from typing import Any

from ragmeter._verb._generate import generate as run_generate
from ragmeter.backends import from_options
from ragmeter.cli._calls import echo, end_run, run_verb
from ragmeter.io import write_jsonl
from ragmeter.runner._run import run_requests  # noqa: F401 (see below)

# The verb imports the runner (and asyncio) when it runs; importing them here lets the fast
# path import them with the collector paused, as click's path imports them with the group's
# options (18 collections of a generate's start-up otherwise).

__all__ = ["run_generate_command"]


def run_generate_command(requests_path: str, out_path: str, **kwargs: Any) -> None:
    """Run the requests, write the responses, print the summary line (see ``generate``)."""
    result, failure = run_verb(run_generate, requests_path, backend=from_options(**kwargs),
                          store=kwargs.get("store"), replay=bool(kwargs.get("replay")),
                          dry_run=bool(kwargs.get("dry_run")))
    if result.summary.get("dry_run"):
        echo(result.dry_run_text)
        return
    n = write_jsonl(out_path, result.iter_items())
    stats = result.summary["stats"]
    ok = result.coverage["scored"]
    msg = (f"wrote {n} responses to {out_path}: {ok} ok ({stats['cached']} from the store, "
           f"{stats['calls']} call attempts), {n - ok} unscored")
    if stats.get("reasons"):
        msg += " (" + ", ".join(f"{k}: {v}" for k, v in sorted(stats["reasons"].items())) + ")"
    msg += (f"; tokens {stats['prompt_tokens']} prompt + {stats['completion_tokens']} "
            "completion")
    if stats.get("cost_usd") is not None:
        msg += f", cost ${stats['cost_usd']:.4f}"
    echo(msg + f". Store: {result.summary['store']}", err=True)
    from ragmeter.judges._spend import spend_line

    echo(spend_line(result.summary["spend"]), err=True)
    end_run(result, failure)
