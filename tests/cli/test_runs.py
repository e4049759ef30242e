"""``ragmeter runs prune`` and the run record written by ``multilingual score``."""

from __future__ import annotations

import json
from pathlib import Path

from ragmeter.runs._records import load_run


def _score(run_cli, path: Path, *extra: str) -> str:
    code, _, err = run_cli("multilingual", "score", path, *extra)
    assert code == 0, err
    return err.split("run ", 1)[1].split()[0]


def _answers(tmp_path: Path) -> Path:
    rows = [{"sample_id": f"q{i}", "sample_lang": "en", "system": s, "gold_answer": "Paris",
             "pred_answer": "Paris" if i % 2 else "Lyon", "translate_tokens": 0}
            for i in range(3) for s in ("direct", "lbrag")]
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_record_is_a_summary_and_a_gzip_items_file(tmp_path, run_cli, _isolated_home) -> None:
    run_id = _score(run_cli, _answers(tmp_path))
    runs = _isolated_home / "runs"
    assert sorted(p.name for p in runs.iterdir()) == [f"{run_id}.items.jsonl.gz",
                                                      f"{run_id}.json"]
    record = load_run(run_id)
    assert record.items_total == 6 and len(record.items) == 6
    assert "pred_answer" not in record.items[0]  # no --items: the text is not kept
    assert {"sample_id", "system", "status", "f1", "em"} <= set(record.items[0])
    items_out = tmp_path / "items.jsonl"
    run_id = _score(run_cli, _answers(tmp_path), "--items", items_out)
    assert load_run(run_id).items[0]["pred_answer"] in ("Paris", "Lyon")


def test_runs_prune_keeps_the_newest(tmp_path, run_cli, _isolated_home) -> None:
    ids = [_score(run_cli, _answers(tmp_path)) for _ in range(3)]
    code, out, _ = run_cli("runs", "prune", "--keep", "1", "--dry-run")
    assert code == 0 and out.split() == ["would", "remove", ids[0], "would", "remove", ids[1]]
    assert len(list((_isolated_home / "runs").glob("*.json"))) == 3
    code, out, _ = run_cli("runs", "prune", "--keep", "1")
    assert code == 0 and f"removed {ids[0]}" in out
    assert [p.name for p in (_isolated_home / "runs").glob("*.json")] == [f"{ids[2]}.json"]
