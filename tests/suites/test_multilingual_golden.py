"""Golden test: ragmeter reproduces LBRAG's own metrics.json and per-row values exactly.

Source: kanoes/LBRAG-NEW @ 44d2186e, experiments/results/20251214_2145 (copied byte for byte
into ../shared/data/lbrag, see its PROVENANCE.md).
"""

from __future__ import annotations

import json
import math

import pytest

from ragmeter.io import iter_rows
from ragmeter.multilingual._score import score_file
from ragmeter.multilingual._scorer import METRIC_KEYS, MultilingualConfig
from tests.conftest import shared

RUN = ("lbrag", "20251214_2145")


@pytest.fixture(scope="module")
def lbrag_files():
    folder = shared(*RUN)
    return folder / "20251214_2145_answers.jsonl", folder / "20251214_2145_metrics.json"


def test_metrics_json_reproduced_to_1e9(lbrag_files):
    answers, metrics_path = lbrag_files
    expected = json.loads(metrics_path.read_text(encoding="utf-8"))
    result = score_file(answers, MultilingualConfig())
    assert result.systems == list(expected["metrics"])
    for system, exp in expected["metrics"].items():
        got = result.metrics[system]
        for key in METRIC_KEYS:
            for k in (key, f"{key}_std"):
                assert math.isclose(got[k], exp[k], rel_tol=0, abs_tol=1e-9), (system, k)
        assert got["n"] == exp["n"]
    assert math.isclose(result.baseline_f1, expected["baseline_f1"], abs_tol=1e-9)
    assert result.coverage == {"rows": 400, "scored": 400, "unscored": 0, "reasons": {}}


def test_every_row_reproduced(lbrag_files):
    answers, _ = lbrag_files
    result = score_file(answers, MultilingualConfig())
    items = {(i["system"], i["sample_id"]): i for i in result.iter_items()}
    stored = [r.data for r in iter_rows(answers)]
    assert len(stored) == 400 == len(items)
    for row in stored:
        item = items[(row["system"], row["sample_id"])]
        for key in ("em", "f1", "rlc", "rlc_ok"):
            assert item[key] == pytest.approx(row[key], abs=1e-12), (row["sample_id"], key)
