"""The detector refit of issue 27.5: leave one domain out on RAGBench's train/validation
files, each domain's test split scored (``benchmarks/bench_detector.py``, protocol ``lodo``),
against the numbers docs/trace.md prints; and the shipped v4 file's provenance."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import shared

ROOT = Path(__file__).resolve().parents[3]
SPLITS = ("covidqa", "delucionqa", "emanual", "hotpotqa")
# docs/trace.md, "v4: fitted on train/validation": (AUROC, relevance RMSE, utilization RMSE)
# of the detector fitted without the domain, on the domain's test split (point values)
DOCUMENTED = {"covidqa": (0.667, 0.167, 0.105), "delucionqa": (0.695, 0.130, 0.098),
              "emanual": (0.792, 0.159, 0.127), "hotpotqa": (0.551, 0.096, 0.083)}
# the best released judge's AUROC and GPT-3.5's RMSEs on the same test splits (the same table)
RELEASED = {"covidqa": (0.651, 0.172, 0.101), "delucionqa": (0.698, 0.180, 0.106),
            "emanual": (0.609, 0.170, 0.112), "hotpotqa": (0.665, 0.111, 0.079)}


@pytest.fixture(scope="module")
def lodo():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_detector
    finally:
        sys.path.pop(0)
    data = shared("ragbench", "hotpotqa", "test-00000-of-00001.parquet").parents[1]
    return bench_detector.run(Path(data), 200, ["lexical"], None, 0, "lodo")


@pytest.mark.slow
def test_held_out_table_is_the_documented_one(lodo):
    assert lodo["fitting_rows"] == {"covidqa": 267, "delucionqa": 182, "emanual": 1186,
                                    "hotpotqa": 424}
    for split, (auroc, rel, util) in DOCUMENTED.items():
        ours = lodo["modes"]["lexical"][split]["judges"]["ragmeter detector, lexical (held out)"]
        assert round(ours["hallucination_auroc"]["value"], 3) == auroc
        assert round(ours["relevance_rmse"]["value"], 3) == rel
        assert round(ours["utilization_rmse"]["value"], 3) == util
        lo, hi = ours["hallucination_auroc"]["ci95"]
        assert lo < auroc < hi


@pytest.mark.slow
def test_where_the_targets_are_met_and_missed(lodo):
    """The targets as docs/trace.md states them: relevance below GPT-3.5 everywhere; AUROC
    above every released judge on covidqa and emanual only; utilization on delucionqa only."""
    met = {}
    for split, (best_auroc, gpt_rel, gpt_util) in RELEASED.items():
        ours = lodo["modes"]["lexical"][split]["judges"]["ragmeter detector, lexical (held out)"]
        met[split] = (ours["hallucination_auroc"]["value"] > best_auroc,
                      ours["relevance_rmse"]["value"] < gpt_rel,
                      ours["utilization_rmse"]["value"] < gpt_util)
    assert met == {"covidqa": (True, True, False), "delucionqa": (False, True, True),
                   "emanual": (True, True, False), "hotpotqa": (False, True, False)}


def test_shipped_v4_names_its_training_files_and_keeps_the_test_splits_out():
    raw = json.loads((ROOT / "src" / "ragmeter" / "trace" / "data"
                      / "trace-detector-v4.json").read_text(encoding="utf-8"))
    assert raw["name"] == "trace-detector-v4"
    files = [f["file"] for t in raw["provenance"]["training"] for f in t.get("files", [t])]
    assert files == ["validation-00000-of-00001.parquet"] * 2 + [
        "train-00000-of-00001.parquet", "validation-00000-of-00001.parquet",
        "validation-00000-of-00001.parquet"]
    assert not any(f.startswith("test-") for f in files)
    assert [t["split"] for t in raw["provenance"]["training"]] == list(SPLITS)
    assert sum(t["trainable_rows"] for t in raw["provenance"]["training"]) == 2059
    assert "test splits are kept out" in raw["provenance"]["dataset"]
