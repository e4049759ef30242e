"""The GPT-labelling write-up's TRACe variant (issue 15 item 3), on the write-up's own worked
examples (``../shared/writeups/003_9c59e4f3d0cbdd28.txt``) and against an independent
computation on a shared RAGBench split."""

from __future__ import annotations

import json

import pytest

from ragmeter.trace._metrics import (
    writeup_adherence,
    writeup_completeness,
    writeup_relevance,
    writeup_scores,
    writeup_utilization,
)
from tests.conftest import shared


def test_complete_example_of_the_writeup():
    """Section "Complete Example": R = U = {0a,0b,1a,1b}, sentence c not fully supported ->
    relevance 4/20 = 0.20, utilization 1.0, completeness 1.0, adherence 0.0, average 0.55."""
    keys = ["0a", "0b", "1a", "1b"]
    s = writeup_scores(keys, keys, [True, True, False])
    assert (s.relevance, s.utilization, s.completeness, s.adherence) == (0.2, 1.0, 1.0, 0.0)
    assert s.average == pytest.approx(0.55)


def test_step3_example_of_the_writeup():
    """Section "Step 3": R = [0a,0b,1a], U = [0a,1a,1b] -> relevance 3/20, utilization 1.0,
    completeness 2/3, adherence 0.0 (sentence b is false)."""
    s = writeup_scores(["0a", "0b", "1a"], ["0a", "1a", "1b"], [True, False])
    assert s.relevance == pytest.approx(0.15)
    assert s.utilization == 1.0
    assert s.completeness == pytest.approx(2 / 3)
    assert s.adherence == 0.0


@pytest.mark.parametrize(("relevant", "utilized", "rel", "util", "comp"), [
    ([], [], 0.0, 0.0, 1.0),               # nothing relevant, nothing used
    ([], ["0a"], 0.0, 0.0, 0.0),           # nothing relevant but something used: 0, not 1
    (["0a"] * 25, ["0a"], 1.0, 0.04, 1.0),  # min(1, 25/20); sets for completeness
    (["0a", "0b"], ["0a", "0b", "0c"], 0.1, 1.0, 1.0),  # utilization capped at 1
])
def test_edge_cases(relevant, utilized, rel, util, comp):
    assert writeup_relevance(relevant) == pytest.approx(rel)
    assert writeup_utilization(relevant, utilized) == pytest.approx(util)
    assert writeup_completeness(relevant, utilized) == pytest.approx(comp)


@pytest.mark.parametrize(("verdicts", "expected"), [
    ([], 1.0), ([True, True], 1.0), ([True, None], 0.0), ([False], 0.0)])
def test_adherence_counts_null_as_unsupported(verdicts, expected):
    assert writeup_adherence(verdicts) == expected


def test_cli_writeup_on_delucionqa_matches_an_independent_count(run_cli, tmp_path):
    """Write-up adherence = share of rows whose every fully_supported is true (nulls fail),
    counted here straight from the Parquet file; RAGBench's stays the default."""
    import pyarrow.parquet as pq

    path = shared("ragbench", "delucionqa", "test-00000-of-00001.parquet")
    info = pq.read_table(path, columns=["sentence_support_information"]).column(0).to_pylist()
    expected = sum(all(s.get("fully_supported") is True for s in row) for row in info) / len(info)
    out = tmp_path / "w.json"
    code, stdout, err = run_cli("trace", "score", path, "--definitions", "writeup", "--json", out,
                                "--no-record", "--resamples", "100")
    assert code == 0, err
    data = json.loads(out.read_text())
    assert data["metrics"]["adherence"]["mean"] == pytest.approx(expected)
    assert "average" in data["metrics"] and "definitions:writeup" in data["signature"]
    assert "write-up variant" in stdout
    code, _, err = run_cli("trace", "score", path, "--json", out, "--no-record",
                           "--resamples", "100")
    default = json.loads(out.read_text())
    assert "average" not in default["metrics"]
    assert default["metrics"]["adherence"]["mean"] > data["metrics"]["adherence"]["mean"]
