"""``rubric build`` with the real offline model (SmolLM2-135M) on two chunks of RAGaliq's
knowledge base (short lines, so it stays quick; ratings by choice scoring, one forward pass
each): the whole pipeline runs, every candidate ends kept, dropped or unscored with a reason,
and every rating is 1..5 or absent with a reason (never a default).  When the model writes no
usable question the build fails with exit 1 and a hint (ragmeter.rubric.BuildFailedError)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import shared


@pytest.mark.local_model
@pytest.mark.slow
@pytest.mark.timeout(1800)  # about a minute on two idle cores; far longer on a loaded machine
def test_build_with_the_local_model(tmp_path, run_cli):
    kb = shared("ragaliq", "data", "orientation_en.md")
    out, items = tmp_path / "questions_en.json", tmp_path / "items.jsonl"
    code, stdout, err = run_cli(
        "rubric", "build", kb, "--out", out, "--items", items, "--chunking", "lines",
        "--min-chunk-chars", "200", "--sample", "2", "--seed", "3", "--concurrency", "1",
        "--critique-scoring", "choices",
        "--timeout", "900", "--max-retries", "0", "--store", tmp_path / "s.sqlite",
        "--no-record")
    rows = [json.loads(x) for x in items.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 2
    for row in rows:
        assert row["status"] in ("kept", "dropped", "unscored")
        assert row["status"] == "kept" or row["reason"]
        if row.get("question"):
            for name in ("groundedness", "relevance", "standalone"):
                score = row.get(f"{name}_score")
                assert score in (1, 2, 3, 4, 5) or row.get(f"{name}_reason")
    assert "2 of" in stdout and "chunks" in stdout
    if not any(r.get("question") for r in rows):
        # The 135M model writes no usable question (seen on every run so far): the build
        # fails in one line with the cause and a hint, exit 1, and writes no empty set
        # (before: `[]` and exit 0).  The items above still say what happened to each chunk.
        assert code == 1, err
        assert "wrote no usable question" in err and "--backend openai" in err
        assert "Traceback" not in err and not out.exists()
        return
    assert code == 0, err
    kept = json.loads(out.read_text(encoding="utf-8"))
    assert len(kept) == sum(r["status"] == "kept" for r in rows)
