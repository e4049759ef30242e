"""``ragmeter generate REQUESTS --out RESPONSES``: a thin door onto :func:`ragmeter.generate`
(see :mod:`ragmeter._verb._generate` for the request and response rows)."""

from __future__ import annotations

from typing import Any

import click

from ragmeter.cli.backend_options import backend_options
from ragmeter.cli.options import input_file, output_file

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
    from ragmeter.cli._generate_run import run_generate_command

    run_generate_command(requests_path, out_path, **kwargs)
