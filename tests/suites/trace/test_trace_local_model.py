"""`trace label` + `validate` with the real offline model (SmolLM2-135M-Instruct) on 30 rows of
RAGBench hotpotqa.  The small model gets the per-sentence choice strategy, support task only
(hallucination detection), with the 4 document sentences sharing most words with each
response sentence as evidence, to keep the run CI-friendly on 2 CPU cores."""

from __future__ import annotations

import json
import time

import pytest

from tests.conftest import shared

pytestmark = pytest.mark.local_model
ROWS = 30


def test_local_model_label_and_validate_30_rows(tmp_path, run_cli):
    pytest.importorskip("torch")
    split = shared("ragbench", "hotpotqa", "test-00000-of-00001.parquet")
    labels, out = tmp_path / "labels.jsonl", tmp_path / "v.json"
    t0 = time.monotonic()
    code, stdout, err = run_cli(
        "trace", "run", split, "--limit", str(ROWS), "--tasks", "support",
        "--evidence-sentences", "4", "--out", labels, "--json", out,
        "--store", tmp_path / "s.sqlite")
    seconds = time.monotonic() - t0
    assert code == 0, err
    rows = [json.loads(x) for x in labels.read_text().splitlines()]
    assert len(rows) == ROWS and all(r["strategy"] == "choice" for r in rows)
    assert all(0.0 <= r["adherence_probability"] <= 1.0 for r in rows if r["status"] == "ok")
    data = json.loads(out.read_text())
    judge = next(k for k in data["judges"] if "(choice)" in k)
    auroc = data["judges"][judge]["hallucination_auroc"]
    base = data["judges"]["gpt-3.5 (released)"]["hallucination_auroc"]
    assert auroc["n"] == base["n"] == ROWS - data["judge_coverage"][judge]["unscored_predictions"]
    if auroc["value"] is not None:  # None only if the 30 rows hold one class
        assert 0.0 <= auroc["ci95"][0] <= auroc["value"] <= auroc["ci95"][1] <= 1.0
    print(f"\nlocal model: hallucination AUROC {auroc['value']} CI {auroc['ci95']} "
          f"(gpt-3.5 released {base['value']:.3f} {base['ci95']}); "
          f"{seconds / ROWS:.2f} s per row incl. model load")
