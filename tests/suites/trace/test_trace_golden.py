"""Golden test: ``trace score`` reproduces RAGBench's released scores on every row.

Source: the released RAGBench test splits covidqa, delucionqa, emanual and hotpotqa
(rungalileo/ragbench on Hugging Face, CC-BY-4.0; copied into ../shared/data/ragbench, see its
PROVENANCE.md).  Expected values are the files' own ``relevance_score``,
``utilization_score``, ``completeness_score`` and ``adherence_score`` columns.
"""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from ragmeter.trace._scorer import ScoreConfig, score_file
from tests.conftest import shared

SPLITS = ("covidqa", "delucionqa", "emanual", "hotpotqa")
ROWS = {"covidqa": 246, "delucionqa": 184, "emanual": 132, "hotpotqa": 390}
EXPECTED = ("relevance_score", "utilization_score", "completeness_score", "adherence_score")


def split_path(name: str):
    return shared("ragbench", name, "test-00000-of-00001.parquet")


@pytest.mark.parametrize("split", SPLITS)
def test_every_row_reproduced_exactly(split):
    path = split_path(split)
    expected = pq.read_table(path, columns=["id", *EXPECTED]).to_pylist()
    result = score_file(path, ScoreConfig(ci=False))
    assert result.coverage == {"rows": ROWS[split], "scored": ROWS[split], "unscored": 0,
                               "reasons": {}}
    assert len(result.rows) == len(expected)
    for got, exp in zip(result.rows, expected, strict=True):
        assert got.id == exp["id"]
        # exact equality: the same float division as the release
        assert got.relevance == exp["relevance_score"], (split, got.row)
        assert got.utilization == exp["utilization_score"], (split, got.row)
        assert got.completeness == exp["completeness_score"], (split, got.row)
        assert got.adherence is exp["adherence_score"], (split, got.row)


def test_cli_score_writes_items_and_aggregates(run_cli, tmp_path):
    path = split_path("emanual")
    out, items = tmp_path / "m.json", tmp_path / "items.jsonl"
    code, stdout, stderr = run_cli("trace", "score", path, "--json", out, "--items", items)
    assert code == 0, stderr
    import json

    data = json.loads(out.read_text())
    assert data["coverage"]["scored"] == 132
    rows = [json.loads(x) for x in items.read_text().splitlines()]
    assert len(rows) == 132 and set(rows[0]) >= {"id", "relevance", "utilization",
                                                "completeness", "adherence"}
    expected = pq.read_table(path, columns=["relevance_score"]).column(0).to_pylist()
    mean = sum(expected) / len(expected)
    assert data["metrics"]["relevance"]["mean"] == pytest.approx(mean, abs=1e-12)
    lo, hi = data["metrics"]["relevance"]["ci95"]
    assert lo <= mean <= hi
    assert "relevance" in stdout
