"""``ragmeter demo``, the README's main command: results, three run records and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def _records(home: Path) -> dict[str, dict]:
    return {json.loads(p.read_text())["family"]: json.loads(p.read_text())
            for p in (home / "runs").glob("*.json")}


def test_demo_without_model(tmp_path: Path, run_cli, _isolated_home) -> None:
    code, out, err = run_cli("demo", "--out", tmp_path / "out", "--no-model")
    assert code == 0, err
    report = tmp_path / "out" / "report.html"
    assert report.exists() and f"report: {report.resolve()}" in out.replace("\n", "")
    records = _records(_isolated_home)
    assert set(records) == {"multilingual", "reliability"}
    assert records["multilingual"]["result"]["coverage"]["scored"] == 36
    html = report.read_text(encoding="utf-8")
    assert "multilingual" in html and "reliability" in html


@pytest.mark.local_model
def test_demo_with_local_model(tmp_path: Path, run_cli, _isolated_home) -> None:
    code, out, err = run_cli("demo", "--out", tmp_path / "out")
    assert code == 0, err
    records = _records(_isolated_home)
    assert set(records) == {"rgb", "multilingual", "reliability"}
    rgb = records["rgb"]
    assert rgb["result"]["coverage"]["scored"] == 49 and rgb["result"]["coverage"]["unscored"] == 0
    assert "Noise robustness" in out and "Counterfactual robustness" in out
    assert (tmp_path / "out" / "rgb" / "rgb_accuracy_vs_noise.png").exists()
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "rgb" in html and "<img" in html
    _replayed_one_at_a_time(_isolated_home / "store.sqlite")
    # ragmeter.demo() gives the CLI's numbers: the same requests (every call from the store
    # the CLI filled) and the same summaries.
    import ragmeter
    from ragmeter.runner._store import Store

    def stored_calls() -> int:
        store = Store()
        try:
            return store.stats().calls
        finally:
            store.close()

    calls = stored_calls()
    api = ragmeter.demo(tmp_path / "api", runs_dir=tmp_path / "api-runs", progress=False)
    assert stored_calls() == calls
    assert {r.family for r in api.results} == set(records)
    for result in api.results:
        cli_summary = dict(records[result.family]["result"])
        api_summary = json.loads(json.dumps(result.summary))
        cli_spend, api_spend = cli_summary.pop("spend", None), api_summary.pop("spend", None)
        assert cli_summary == api_summary, result.family
        if cli_spend is not None:  # the API's re-run paid nothing: the CLI's calls are cached
            assert api_spend["calls"] == 0
            for key in ("calls", "prompt_tokens", "completion_tokens"):
                assert (api_spend["cached"][key]
                        == cli_spend[key] + cli_spend["cached"][key]), key


def _replayed_one_at_a_time(store: Path) -> None:
    """The demo batches the local model's calls (``DEMO_BATCH_SIZE``); every stored answer must
    be what the same model gives one request at a time: the same greedy text and token counts,
    choice probabilities within 1e-4."""
    import sqlite3

    from ragmeter.backends._local._backend import LocalBackend
    from ragmeter.backends._types import Request, Response

    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT request_json, response_json FROM calls").fetchall()
    # the demo's model calls; RGB's Rej* and ED* are judged by the offline detectors, which
    # call no model (ED*'s yes/no calls went with issue 27.3: 49 -> 46)
    assert len(rows) >= 46
    alone = LocalBackend(batch_size=1)
    for request_json, response_json in rows:
        material = json.loads(request_json)
        request = Request.chat("replay", material["messages"], params=material["params"],
                               choices=material["choices"], repeat=material["repeat"])
        stored, again = Response.from_dict(json.loads(response_json)), alone.complete_sync(request)
        assert again.text == stored.text, material["messages"][-1]["content"][:200]
        if request.choices:
            assert again.choice_probs == pytest.approx(stored.choice_probs, abs=1e-4)
        else:
            assert again.usage == stored.usage
