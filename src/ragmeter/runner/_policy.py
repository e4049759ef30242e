"""The call policy of a backend value: the :class:`RunnerConfig` and the engine that the
runner uses for calls through a :class:`ragmeter.backends.ModelBackend`.

This lives in the runner, not on the backend value: a backend describes a model and how to
reach it; concurrency, retries, limits, prices and the engine are the runner's business
(httpx: policy wraps I/O).
"""

from __future__ import annotations

import sys
from typing import Any

from ragmeter.backends._values import ModelBackend
from ragmeter.runner._types import RunnerConfig

__all__ = ["config_for", "engine_for"]


def engine_for(backend: ModelBackend) -> Any:
    """The runner's engine: None for ``local``; for ``ray`` a Ray engine (needs
    ``ragmeter[ray]``) that builds this backend on each worker from its recipe."""
    if backend.engine == "local":  # make_engine("local"), without importing the engines
        return None  # before a run's first call (issue 26.5)
    from ragmeter.runner.engines import RayOptions, make_engine

    return make_engine(backend.engine, backend.recipe(), RayOptions(
        address=backend.ray_address, workers=backend.ray_workers,
        num_cpus=backend.ray_cpus_per_worker, num_gpus=backend.ray_num_gpus,
        batch_size=backend.ray_batch_size))


def config_for(backend: ModelBackend, *, replay: bool = False, progress: bool | None = None,
               description: str = "calls") -> RunnerConfig:
    """The :class:`RunnerConfig` for calls through ``backend``."""
    return RunnerConfig(
        concurrency=backend.concurrency, rpm=backend.rpm, tpm=backend.tpm,
        max_retries=backend.max_retries, timeout_s=backend.timeout, replay=replay,
        progress=sys.stderr.isatty() if progress is None else progress,
        description=description, price_prompt_per_mtok=backend.price_prompt,
        price_completion_per_mtok=backend.price_completion, engine=engine_for(backend))
