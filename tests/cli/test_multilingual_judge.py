"""``ragmeter multilingual judge`` over real HTTP (scripted OpenAI-compatible server on
127.0.0.1): the semantic score feeds ``multilingual score``; a reply that cannot be parsed
becomes an empty semantic_score with a reason (LBRAG would count it 0.0), and the aggregate
reports how many rows it covers."""

from __future__ import annotations

import json
from pathlib import Path

from ragmeter.io._samples import sample_path
from tests.servers.scripted_openai import last_user_text


def _reply(body: dict) -> str:
    text = last_user_text(body)
    if "Sydney" in text:  # one judgement the parser cannot read
        return "I think it is fine."
    if "Canberra" in text:
        return 'Sure: {"score": 1.7, "explanation": "same city"}'  # clipped to 1.0
    return '{"score": 0.25, "explanation": "partly"}'


def test_judge_then_score(tmp_path: Path, scripted_server, run_cli) -> None:
    server = scripted_server(reply=_reply)
    out = tmp_path / "judged.jsonl"
    code, _, err = run_cli("multilingual", "judge", sample_path("multilingual_answers.jsonl"),
                           "--out", out, "--backend", "openai", "--base-url", server.url,
                           "--model", "judge-x", "--scoring", "generate",
                           "--store", tmp_path / "s.sqlite")
    assert code == 0, err
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 36
    by = {(r["system"], r["sample_id"]): r for r in rows}
    assert by[("retrieve", "demo_q01_en")]["semantic_score"] == 1.0  # "Canberra", clipped
    assert by[("direct", "demo_q01_en")]["semantic_score"] is None  # "Sydney": unparseable
    assert by[("direct", "demo_q01_en")].get("semantic_reason")
    assert by[("direct", "demo_q02_de")]["semantic_score"] == 0.25
    # the judge's own headline: the mean over the scored rows of its output, with its n
    scored = [r["semantic_score"] for r in rows if r["semantic_score"] is not None]
    code, stdout, err = run_cli("multilingual", "judge", sample_path("multilingual_answers.jsonl"),
                                "--out", tmp_path / "again.jsonl", "--backend", "openai",
                                "--base-url", server.url, "--model", "judge-x",
                                "--scoring", "generate", "--store", tmp_path / "s.sqlite")
    assert code == 0, err
    assert (f"mean semantic score {sum(scored) / len(scored):.3f} [" in stdout
            and f"n={len(scored)};" in stdout), stdout

    code, _, err = run_cli("multilingual", "score", out, "--json", tmp_path / "m.json",
                           "--no-record")
    assert code == 0, err
    metrics = json.loads((tmp_path / "m.json").read_text())["metrics"]
    assert metrics["direct"]["semantic_score_n"] == 11  # one of 12 unscored, not counted as 0
    assert "semantic_score_n" not in metrics["retrieve"]
