"""The options every model-calling command shares, and their translation into a runner setup.

::

    @group.command()
    @backend_options
    def judge(path, **kwargs):
        backend, store, config, dry_run = runner_context(**kwargs)

``runner_context`` picks the keys it knows out of ``kwargs`` and ignores the rest, so a command
can pass all of its keyword arguments through.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from ragmeter.backends._types import Backend
from ragmeter.cli.options import FiniteFloat, input_file
from ragmeter.runner._run import RunnerConfig
from ragmeter.runner._store import Store

__all__ = ["backend_options", "runner_context", "BACKEND_OPTION_NAMES"]

F = TypeVar("F", bound=Callable[..., Any])

BACKEND_OPTION_NAMES = ("backend", "endpoint", "model", "base_url", "concurrency", "rpm", "tpm",
                        "timeout", "max_retries", "store", "replay", "dry_run", "price_prompt",
                        "price_completion", "engine", "ray_address", "ray_workers",
                        "ray_cpus_per_worker", "ray_num_gpus", "ray_batch_size", "batch_size")


def backend_options(f: F) -> F:
    """Add --backend, --endpoint, --model, --base-url, --concurrency, --batch-size, --rpm, --tpm, --timeout,
    --max-retries, --store, --replay, --dry-run and the engine options (--engine,
    --ray-address, --ray-workers, --ray-cpus-per-worker, --ray-num-gpus, --ray-batch-size) to a
    click command."""
    options = [
        click.option("--backend", default="local", show_default=True, metavar="NAME",
                     help="Model backend: local (offline SmolLM2, the default) or openai (any "
                          "OpenAI-compatible endpoint: vLLM, llama.cpp server, Ollama, OpenAI)."),
        click.option("--endpoint", default=None, metavar="NAME",
                     help="A named OpenAI-compatible endpoint from endpoints.toml in "
                          "$RAGMETER_HOME (base_url, model, api_key_env): implies --backend "
                          "openai; --model overrides its model."),
        click.option("--model", default=None, metavar="NAME|PATH",
                     help="Model name for --backend openai (required there); for local, a GGUF "
                          "file or Hugging Face folder on disk [default: SmolLM2-135M-Instruct]."),
        click.option("--base-url", default=None, metavar="URL",
                     help="Endpoint of an OpenAI-compatible server, e.g. "
                          "http://127.0.0.1:8000/v1 [default: https://api.openai.com/v1]. The key "
                          "comes from RAGMETER_API_KEY or OPENAI_API_KEY and is never stored."),
        click.option("--concurrency", default=8, show_default=True, type=click.IntRange(1, 4096),
                     help="Model calls in flight at once."),
        click.option("--batch-size", default=1, show_default=True,
                     type=click.IntRange(1, 256), metavar="N",
                     help="Local backend: gather up to N concurrent calls into one batched "
                          "forward pass (left-padded; greedy outputs equal one at a time, "
                          "choice probabilities within 1e-4). 1 runs them one at a time, the "
                          "exact reference path. Set --concurrency to at least N."),
        click.option("--rpm", default=None, type=FiniteFloat(min=0, min_open=True),
                     metavar="N", help="Limit requests per minute."),
        click.option("--tpm", default=None, type=FiniteFloat(min=0, min_open=True),
                     metavar="N", help="Limit tokens per minute (prompt + completion, estimated)."),
        click.option("--timeout", default=120.0, show_default=True,
                     type=FiniteFloat(min=0, min_open=True), metavar="SECONDS",
                     help="Give up on one attempt of a call to a remote backend after this "
                          "long (then retry). The local model's calls run to the end (they "
                          "cannot be interrupted)."),
        click.option("--max-retries", default=5, show_default=True, type=click.IntRange(0, 100),
                     help="Retries of a call on 429, 5xx, timeouts, connection errors and "
                          "malformed bodies; then the item is reported unscored with its reason."),
        click.option("--store", default=None, type=input_file(), metavar="PATH",
                     help="SQLite store of calls (the cache) [default: store.sqlite in the "
                          "per-user data folder, or in $RAGMETER_HOME]."),
        click.option("--replay", is_flag=True,
                     help="Use stored responses only; fail on a cache miss instead of calling."),
        click.option("--price-in", "--price-prompt", "price_prompt", default=None,
                     type=FiniteFloat(min=0), metavar="USD",
                     help="Price per million input (prompt) tokens: money in --dry-run and in "
                          "the running cost counter."),
        click.option("--price-out", "--price-completion", "price_completion", default=None,
                     type=FiniteFloat(min=0), metavar="USD",
                     help="Price per million output (completion) tokens."),
        click.option("--dry-run", is_flag=True,
                     help="Print how many calls and roughly how many tokens would be spent, "
                          "then exit without calling anything."),
        click.option("--engine", default="local", show_default=True,
                     type=click.Choice(["local", "ray"]),
                     help="Where the calls not in the store run: local (this process) or ray "
                          "(Ray Data actors, one backend each; needs ragmeter[ray]). The store "
                          "stays here either way. See docs/scale.md."),
        click.option("--ray-address", default=None, metavar="ADDR",
                     help="With --engine ray: the cluster to join (HOST:PORT from `ray start "
                          "--head`, or auto) [default: start Ray on this machine]."),
        click.option("--ray-workers", default=2, show_default=True, type=click.IntRange(1),
                     metavar="N", help="With --engine ray: actors in the pool, each loading "
                                       "the backend once."),
        click.option("--ray-cpus-per-worker", default=1, show_default=True,
                     type=click.IntRange(1), metavar="N",
                     help="With --engine ray: CPUs reserved per actor, and the threads its "
                          "model computes with (torch, BLAS, Arrow), so that N actors are N "
                          "times one."),
        click.option("--ray-num-gpus", default=0.0, show_default=True,
                     type=FiniteFloat(min=0), metavar="N",
                     help="With --engine ray: GPUs reserved per actor (e.g. 1, or 0.5 to pack "
                          "two actors on a GPU)."),
        click.option("--ray-batch-size", default=16, show_default=True,
                     type=click.IntRange(1), metavar="N",
                     help="With --engine ray: requests per batch sent to an actor (results "
                          "are stored batch by batch)."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def runner_context(**kwargs: Any) -> tuple[Backend, Store, RunnerConfig, bool]:
    """Turn the values of :func:`backend_options` into ``(backend, store, config, dry_run)``.

    Unknown keys are ignored; missing keys take the options' defaults.  ``description`` and
    ``progress`` may be given to shape the progress bar (progress defaults to on when stderr is a
    terminal).  The backend is :func:`ragmeter.backends.from_options`, the same value the
    Python API takes as ``backend=`` (``endpoint`` names one of :mod:`ragmeter.backends._endpoints`).
    ``on_progress`` goes to :class:`RunnerConfig` (the web app's live progress).
    """
    from ragmeter.backends import from_options

    choice = from_options(**kwargs)
    from ragmeter.runner import config_for

    config = config_for(
        choice,
        replay=bool(kwargs.get("replay")),
        progress=bool(kwargs.get("progress", sys.stderr.isatty())),
        description=str(kwargs.get("description") or "calls"))
    if kwargs.get("on_progress") is not None:
        from ragmeter._util._record import replace

        config = replace(config, on_progress=kwargs["on_progress"])
    return choice.instance(), Store(kwargs.get("store")), config, bool(kwargs.get("dry_run"))
