"""The main demo's RGB part: the built-in RGB-format sample through the offline default model.

The sample (``ragmeter/data/samples/rgb_*.jsonl``) and the prompts are written by the ragmeter
authors (common-knowledge facts; not RGB's CC BY-NC-SA data).  The demo runs every table of the
paper on it with SmolLM2-135M-Instruct on the CPU, greedy decoding, answers capped at
``DEMO_MAX_TOKENS`` tokens, noise rates ``DEMO_NOISE_RATES`` (and 1.0), and the judge by
Yes/No choice scoring, up to ``DEMO_BATCH_SIZE`` local-model requests per forward pass, grouped
by prompt length (docs/models.md: where the demo's model time goes); a second run is answered
from the store.  :func:`ragmeter.demo` runs it (through :func:`ragmeter.rgb.run`); this module
holds its settings and the console lines ``ragmeter demo`` prints around the tables.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DEMO_BATCH_SIZE", "DEMO_CONCURRENCY", "DEMO_MAX_TOKENS", "DEMO_NOISE_RATES",
           "SAMPLE_FILES", "intro_text", "outputs_text"]

SAMPLE_FILES = ("rgb_en.jsonl", "rgb_en_int.jsonl", "rgb_en_fact.jsonl", "rgb_zh.jsonl")
DEMO_MAX_TOKENS = 32
DEMO_NOISE_RATES = (0.0, 0.4, 0.8)  # plus 1.0 for rejection
DEMO_BATCH_SIZE = 8  # concurrent requests per forward pass of the local model
# Calls in flight: every answer of the demo (46 distinct requests) waits at the local model at
# once, so each batch is cut from all of them by prompt length (ragmeter.backends._local._batch)
# instead of from the next few in file order.
DEMO_CONCURRENCY = 64


def intro_text() -> Any:
    """The line printed before the RGB part starts (a rich ``Text``)."""
    from rich.text import Text

    from ragmeter.io._samples import sample_path
    from ragmeter.rgb._data import load_dataset

    datasets = [load_dataset(sample_path(name)) for name in SAMPLE_FILES]
    n = sum(len(d.instances) for d in datasets)
    return Text.assemble(
        ("ragmeter demo", "bold"), f": RGB (Chen et al., AAAI 2024) on the built-in "
        f"sample ({n} questions in {len(datasets)} files), offline default model, "
        "greedy decoding")


def outputs_text(written: dict[str, Any], wall_s: float) -> str:
    """The line after the tables: the files written and the wall time."""
    return (f"results: {written['results']}; items: {written['items']}"
            + (f"; plot: {written['plot']}" if written["plot"] else "")
            + f" ({wall_s:.0f} s)")
