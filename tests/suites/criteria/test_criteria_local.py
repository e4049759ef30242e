"""One real run of the criteria judge on the offline SmolLM2 model (marked local_model):
choice scoring over each scale's points from the model's logits, on three rows of the
built-in sample, through the CLI."""

from __future__ import annotations

import json

import pytest

from ragmeter.io._samples import sample_path


@pytest.mark.local_model
def test_local_model_scores_the_points_of_each_scale(tmp_path, run_cli) -> None:
    rows = [json.loads(x) for x in
            open(sample_path("criteria_answers.jsonl"), encoding="utf-8").read().splitlines()]
    data = tmp_path / "three.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows[:3]), encoding="utf-8")
    out, summary = tmp_path / "judged.jsonl", tmp_path / "summary.json"
    code, stdout, err = run_cli("criteria", "judge", data, "--criteria", "relevance",
                                "--criteria", "completeness", "--reference-field", "human",
                                "--out", out, "--json", summary, "--no-record")
    assert code == 0, err
    judged = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(judged) == 6
    for r in judged:
        points = ["1", "2", "3", "4", "5"] if r["criterion"] == "relevance" else ["0", "1", "2"]
        assert r["status"] == "ok" and r["method"] == "choices:logits"
        assert sorted(r["score_probs"]) == points
        assert sum(r["score_probs"].values()) == pytest.approx(1.0)
        assert int(points[0]) <= r["expected_score"] <= int(points[-1])
        assert r["score"] == int(max(points, key=lambda p: (r["score_probs"][p], -int(p))))
    doc = json.loads(summary.read_text())
    assert "judge:local:SmolLM2-135M-Instruct" in doc["signature"]
    assert {h["group"] for h in doc["headline"]} >= {"relevance", "completeness", "all"}
    assert "judge: local:SmolLM2" in stdout
