"""The one stateful part: call policy (retries, limits), progress, the store (cache and
claims), dry-run estimates and engines (Ray).  See :mod:`ragmeter.runner._run`."""

from __future__ import annotations

from ragmeter.runner._policy import (
    config_for,
    engine_for,
)
from ragmeter.runner._run import (
    DryRunEstimate,
    Outcome,
    RunnerConfig,
    RunStats,
    approx_tokens,
    arun_requests,
    estimate_requests,
    run_requests,
    run_sync,
)
from ragmeter.runner._store import (
    Store,
    StoreStats,
    default_store_path,
)

__all__ = [
    "config_for",
    "engine_for",
    "DryRunEstimate",
    "Outcome",
    "RunStats",
    "RunnerConfig",
    "Store",
    "StoreStats",
    "approx_tokens",
    "arun_requests",
    "default_store_path",
    "estimate_requests",
    "run_requests",
    "run_sync",
]
