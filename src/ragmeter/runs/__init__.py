"""Run records on disk: their schema, the pydantic model, columnar items, list and prune."""

from __future__ import annotations

from ragmeter.runs._columns import (
    ItemColumns,
    ItemPart,
    KeptItems,
    scored_positions,
)
from ragmeter.runs._records import (
    DEFAULT_KEEP_RUNS,
    DEFAULT_MAX_ITEMS,
    RUN_SCHEMA_VERSION,
    InputFile,
    build_record,
    list_runs,
    load_run,
    new_run_id,
    prune_runs,
    record_run,
    retention,
    runs_dir,
)

__all__ = [
    "DEFAULT_KEEP_RUNS",
    "DEFAULT_MAX_ITEMS",
    "InputFile",
    "ItemColumns",
    "ItemPart",
    "KeptItems",
    "RUN_SCHEMA_VERSION",
    "build_record",
    "list_runs",
    "load_run",
    "new_run_id",
    "prune_runs",
    "record_run",
    "retention",
    "runs_dir",
    "scored_positions",
]
