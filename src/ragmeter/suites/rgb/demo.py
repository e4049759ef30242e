"""The main demo: the built-in RGB-format sample through the offline default model.

The sample (``ragmeter/data/samples/rgb_*.jsonl``) and the prompts are written by the ragmeter
authors (common-knowledge facts; not RGB's CC BY-NC-SA data).  The demo runs every table of the
paper on it with SmolLM2-135M-Instruct on the CPU, greedy decoding, answers capped at
``DEMO_MAX_TOKENS`` tokens, noise rates ``DEMO_NOISE_RATES`` (and 1.0), and the judge by
Yes/No choice scoring, batched ``DEMO_BATCH_SIZE`` requests per forward pass; it finishes
in about a minute on 2 cores and a second run is answered from the store.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

__all__ = ["DEMO_BATCH_SIZE", "DEMO_MAX_TOKENS", "SAMPLE_FILES", "run_demo"]

SAMPLE_FILES = ("rgb_en.jsonl", "rgb_en_int.jsonl", "rgb_en_fact.jsonl", "rgb_zh.jsonl")
DEMO_MAX_TOKENS = 32
DEMO_NOISE_RATES = (0.0, 0.4, 0.8)  # plus 1.0 for rejection
DEMO_BATCH_SIZE = 8  # concurrent requests per forward pass of the local model


def run_demo(out_dir: Path, console: Console, *, backend: Any = None,
             store_path: str | Path | None = None) -> dict[str, Any]:
    """Run RGB on the built-in sample, print the tables and write results to ``out_dir``.

    ``backend``: a backend to use instead of the local default model (tests).  Returns the
    written paths, the wall time, the results document and the result itself.
    """
    from ragmeter.llm.registry import create_backend
    from ragmeter.runner import RunnerConfig
    from ragmeter.samples import sample_path
    from ragmeter.store import Store
    from ragmeter.suites.rgb.data import load_dataset
    from ragmeter.suites.rgb.outputs import write_run_outputs
    from ragmeter.suites.rgb.prompts import load_judge_prompts, load_prompts
    from ragmeter.suites.rgb.run import RgbRunConfig, run_rgb
    from ragmeter.suites.rgb.tables import print_run

    start = time.monotonic()
    datasets = [load_dataset(sample_path(name)) for name in SAMPLE_FILES]
    n = sum(len(d.instances) for d in datasets)
    console.print(Text.assemble(
        ("ragmeter demo", "bold"), f": RGB (Chen et al., AAAI 2024) on the built-in "
        f"sample ({n} questions in {len(datasets)} files), offline default model, "
        "greedy decoding"))
    backend = backend or create_backend("local", batch_size=DEMO_BATCH_SIZE)
    store = Store(store_path)
    # the local backend answers concurrent requests in batches (greedy texts identical to one
    # at a time, checked on this sample by tests/cli/test_demo.py); other backends one by one
    batch = int(getattr(backend, "batch_size", 1) or 1)
    # a batched call answers when its whole batch does: its timeout covers the batch
    runner = RunnerConfig(concurrency=batch, progress=sys.stderr.isatty(),
                          description="rgb demo answers", timeout_s=120.0 * batch)
    config = RgbRunConfig(noise_rates=DEMO_NOISE_RATES, temperature=0.0,
                          max_tokens=DEMO_MAX_TOKENS, judge=True)
    try:
        result = run_rgb(datasets, load_prompts(), backend, store, runner, config,
                         judge_prompts=load_judge_prompts())
    finally:
        store.close()
    print_run(result, console)
    written = write_run_outputs(result, out_dir)
    for note in written["notes"]:
        console.print(f"note: {note}")
    wall = time.monotonic() - start
    console.print(f"results: {written['results']}; items: {written['items']}"
                  + (f"; plot: {written['plot']}" if written["plot"] else "")
                  + f" ({wall:.0f} s)")
    return {**written, "wall_s": wall, "results_doc": result.to_json(), "result": result}
