"""``ragmeter generate REQUESTS --out RESPONSES``: a thin door onto :func:`ragmeter.generate`
(see :mod:`ragmeter._verb._generate` for the request and response rows)."""

from __future__ import annotations

from typing import Any

import click

from ragmeter.cli.backend_options import backend_options
from ragmeter.cli.options import end_run, input_file, output_file, run_verb

__all__ = ["generate"]


@click.command(name="generate")
@click.argument("requests_path", metavar="REQUESTS", type=input_file())
@click.option("--out", "out_path", required=True, type=output_file(),
              help="Write the responses here as JSON Lines (in input order, atomically).")
@backend_options
def generate(requests_path: str, out_path: str, **kwargs: Any) -> None:
    """Send a file of requests to a model and write one response row per request.

    REQUESTS holds rows {"id", "messages": [{"role", "content"}...]} or {"id", "system",
    "prompt"}, with optional "params" and "choices" (JSON Lines, JSON, CSV or Parquet).
    Failed calls become rows with "status": "unscored" and a "reason"; completed calls are
    stored, so running the command again calls nothing.

    \b
    Examples:
      ragmeter generate requests.jsonl --out responses.jsonl
      ragmeter generate requests.jsonl --out responses.jsonl --backend openai \\
          --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen2.5-7B-Instruct --concurrency 32
    """
    from ragmeter._verb._generate import generate as run_generate
    from ragmeter.backends import from_options
    from ragmeter.io import write_jsonl

    result, failure = run_verb(run_generate, requests_path, backend=from_options(**kwargs),
                          store=kwargs.get("store"), replay=bool(kwargs.get("replay")),
                          dry_run=bool(kwargs.get("dry_run")))
    if result.summary.get("dry_run"):
        click.echo(result.dry_run_text)
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
    click.echo(msg + f". Store: {result.summary['store']}", err=True)
    from ragmeter.judges._spend import spend_line

    click.echo(spend_line(result.summary["spend"]), err=True)
    end_run(result, failure)
