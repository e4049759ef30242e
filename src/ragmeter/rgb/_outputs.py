"""Writing a run's results where the HTML report and later sessions can read them.

``<out>/rgb_results.json``: aggregates, the paper's tables, per-setting coverage and
signatures; ``<out>/rgb_items.jsonl``: one row per (setting, instance) with labels, factlabel,
correctness, the prediction and the judge's verdict; ``<out>/rgb_accuracy_vs_noise.png`` when
matplotlib is installed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragmeter.errors import MissingDependencyError
from ragmeter.io import write_bytes, write_json, write_jsonl

__all__ = ["RESULTS_NAME", "ITEMS_NAME", "PLOT_NAME", "write_run_outputs"]

RESULTS_NAME = "rgb_results.json"
ITEMS_NAME = "rgb_items.jsonl"
PLOT_NAME = "rgb_accuracy_vs_noise.png"


def write_run_outputs(result: Any, out_dir: str | Path, *, plot: bool = True,
                      doc: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write results, items and (optionally) the plot; returns the paths and notes.
    ``doc``: the results document to write [default: ``result.to_json()``] (the public
    :class:`~ragmeter.result.Result` summary adds the spend and ``--by`` groups)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Any] = {"results": str(out / RESULTS_NAME),
                               "items": str(out / ITEMS_NAME), "plot": None, "notes": []}
    doc = dict(doc) if doc is not None else result.to_json()
    if plot:
        from ragmeter.rgb._plot import accuracy_vs_noise_png

        try:
            png = accuracy_vs_noise_png(result.tables)
        except MissingDependencyError as err:
            written["notes"].append(f"plot skipped: {err}")
        else:
            if png is not None:
                write_bytes(out / PLOT_NAME, png)
                written["plot"] = str(out / PLOT_NAME)
    doc["files"] = {"items": ITEMS_NAME,
                    "plot": PLOT_NAME if written["plot"] else None}
    write_json(out / RESULTS_NAME, doc)
    write_jsonl(out / ITEMS_NAME, result.iter_items())
    return written
