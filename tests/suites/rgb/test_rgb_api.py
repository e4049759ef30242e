"""``ragmeter.rgb`` (issue 13): the API on lists of dicts (and a DataFrame) gives the same
summary as the CLI on the same files; the CLI is a thin door onto it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ragmeter
from tests.conftest import shared


def _preds(data: Path) -> list[dict]:
    """Hand-made predictions: even ids flag factual errors and give the answer, ids divisible
    by 3 decline, the rest answer wrongly; the last id is missing."""
    rows = [json.loads(x) for x in data.read_text(encoding="utf-8").splitlines() if x.strip()]
    out = []
    for r in rows[:-1]:
        ans = r["answer"] if isinstance(r["answer"], str) else json.dumps(r["answer"])
        if r["id"] % 3 == 0:
            text = "I can not answer the question because of the insufficient information."
        elif r["id"] % 2 == 0:
            text = f"There are factual errors in the provided documents. {ans}"
        else:
            text = "However, it is somewhere else."
        out.append({"id": r["id"], "prediction": text})
    return out


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def _strip(doc: dict) -> dict:
    return json.loads(json.dumps(doc))  # tuples -> lists, as the JSON file holds them


@pytest.mark.parametrize("mode", ["strict", "refactor"])
def test_score_api_on_dicts_equals_cli(run_cli, tmp_path: Path, mode: str) -> None:
    data = shared("rgb", "en_fact.json")
    preds = _preds(data)
    rows = [json.loads(x) for x in data.read_text(encoding="utf-8").splitlines() if x.strip()]
    out = tmp_path / "r.json"
    code, _, err = run_cli("rgb", "score", _write(tmp_path / "p.jsonl", preds), "--data", data,
                           "--noise-rate", "0", "--mode", mode, "--json", out, "--no-record")
    assert code == 0, err
    api = ragmeter.rgb.score(preds, data=rows, name="en_fact", noise_rate=0.0, mode=mode)
    assert _strip(api.summary) == json.loads(out.read_text(encoding="utf-8"))
    assert api.coverage["unscored"] == 1 and api.coverage["reasons"] == {
        "missing_prediction": 1}
    if mode == "refactor":
        assert api.summary["refactor"]["comparable_with_paper"] is False


def test_judge_api_on_dicts_equals_cli(run_cli, tmp_path: Path) -> None:
    data = shared("rgb", "zh_refine.json")
    preds = [{"id": i, "prediction": "信息不足，无法回答。" if i % 4 == 0 else "答案是北京。"}
             for i in range(40)]
    out = tmp_path / "j.json"
    code, _, err = run_cli("rgb", "judge", _write(tmp_path / "p.jsonl", preds), "--data", data,
                           "--judge-method", "detector", "--json", out, "--no-record",
                           "--store", tmp_path / "s.sqlite")
    assert code == 0, err
    rows = [json.loads(x) for x in data.read_text(encoding="utf-8").splitlines() if x.strip()]
    api = ragmeter.rgb.judge(preds, data=rows, name="zh_refine", judge_method="detector",
                             store=tmp_path / "s2.sqlite")
    cli_doc = json.loads(out.read_text(encoding="utf-8"))
    assert _strip(api.summary) == cli_doc
    assert cli_doc["metrics"]["reject_rate_judged"] == 0.25 and cli_doc["metrics"]["n"] == 40
    assert cli_doc["coverage"]["unscored"] == 260  # 300 questions, 40 predictions
    assert api.judges and api.judges[0]["judge"].startswith("ragmeter:refusal-patterns")


def test_score_api_on_dataframe(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    data = shared("rgb", "en_fact.json")
    preds = _preds(data)
    a = ragmeter.rgb.score(preds, data=data, noise_rate=0.0)
    b = ragmeter.rgb.score(pd.DataFrame(preds), data=data, noise_rate=0.0)
    assert a.summary == b.summary
    frame = b.to_pandas()
    assert len(frame) == 100 and "status" in frame.columns


def test_build_api_equals_cli(run_cli, tmp_path: Path) -> None:
    data = shared("rgb", "en_fact.json")
    out = tmp_path / "b.jsonl"
    code, _, err = run_cli("rgb", "build", "--data", data, "--noise-rate", "0.2", "--out", out)
    assert code == 0, err
    cli_rows = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines() if x]
    api = ragmeter.rgb.build(data, noise_rate=0.2)
    assert _strip(api.items) == cli_rows
