"""The Python API (issue 13): same numbers as the CLI from a path, a list of dicts, a DataFrame
and an Arrow table; one Result type; works inside a running event loop; bad rows name their
index and field."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import ragmeter
from ragmeter.errors import InputError
from tests.conftest import shared


def _lbrag_answers() -> Path:
    return shared("lbrag", "20251214_2145", "20251214_2145_answers.jsonl")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def test_multilingual_api_equals_cli_on_list_dataframe_and_table(run_cli, tmp_path) -> None:
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    answers = _lbrag_answers()
    out = tmp_path / "m.json"
    code, _, err = run_cli("multilingual", "score", answers, "--json", out, "--no-record")
    assert code == 0, err
    cli_summary = json.loads(out.read_text())
    rows = _rows(answers)
    from_path = ragmeter.multilingual.score(answers)
    from_list = ragmeter.multilingual.score(rows)
    from_frame = ragmeter.multilingual.score(pd.DataFrame(rows))
    from_table = ragmeter.multilingual.score(pa.Table.from_pylist(rows))
    assert from_path.summary == cli_summary
    # The released metrics.json keys, recomputed from memory, equal the file's to the last digit.
    for result in (from_list, from_frame, from_table):
        assert result.summary["metrics"] == cli_summary["metrics"]
        assert result.signature == cli_summary["signature"]
        assert result.coverage == cli_summary["coverage"] == {
            "rows": 400, "scored": 400, "unscored": 0, "reasons": {}}


def test_to_pandas_is_input_order_with_status(tmp_path) -> None:
    pytest.importorskip("pandas")
    rows = [
        {"sample_id": "a", "sample_lang": "en", "system": "direct", "gold_answer": "Paris",
         "pred_answer": "Paris", "translate_tokens": 0},
        {"sample_id": "a", "sample_lang": "en", "system": "lbrag", "gold_answer": "Paris",
         "pred_answer": None, "translate_tokens": 3},
        {"sample_id": "b", "sample_lang": "de", "system": "direct", "gold_answer": "Berlin",
         "pred_answer": "in Berlin", "translate_tokens": 0},
        {"sample_id": "b", "sample_lang": "de", "system": "lbrag", "gold_answer": "Berlin",
         "pred_answer": "Berlin", "translate_tokens": 5},
    ]
    result = ragmeter.multilingual.score(rows)
    frame = result.to_pandas()
    assert list(zip(frame["sample_id"], frame["system"], strict=True)) == [
        ("a", "direct"), ("a", "lbrag"), ("b", "direct"), ("b", "lbrag")]
    assert list(frame["status"]) == ["ok", "unscored", "ok", "ok"]
    assert frame["reason"].iloc[1] == "missing_prediction"
    assert frame["em"].iloc[2] == 0.0 and frame["em"].iloc[3] == 1.0
    assert result.coverage["unscored"] == 1
    html = result._repr_html_()
    assert "coverage 3/4 scored" in html and "lbrag" in html


def test_bad_row_names_index_and_field() -> None:
    pd = pytest.importorskip("pandas")
    rows = [{"sample_id": "a", "sample_lang": "en", "system": "s", "gold_answer": "x",
             "pred_answer": "x"},
            {"sample_id": "b", "sample_lang": "en", "system": "s", "gold_answer": "x"}]
    frame = pd.DataFrame([dict(rows[0]), dict(rows[0], sample_id="b", sample_lang="klingon")])
    with pytest.raises(InputError) as err:
        ragmeter.multilingual.score(frame)
    assert "index 1 of <DataFrame>" in str(err.value)
    assert 'field "sample_lang"' in str(err.value)
    with pytest.raises(InputError) as err2:
        ragmeter.multilingual.score(rows)
    assert "index 1 of <list of dicts>" in str(err2.value)
    assert 'field "pred_answer"' in str(err2.value)
    with pytest.raises(InputError, match="index 0 .*expected a dict"):
        ragmeter.multilingual.score(["not a row"])


def test_reliability_api_equals_cli_on_dataframe(run_cli, tmp_path) -> None:
    pd = pytest.importorskip("pandas")
    from ragmeter.io._samples import sample_path

    csv_path = sample_path("reliability_annotations.csv")
    out = tmp_path / "r.json"
    code, _, err = run_cli("reliability", "score", csv_path, "--qc", "qc_maria", "--json", out,
                           "--no-record")
    assert code == 0, err
    frame = pd.read_csv(csv_path, dtype=str, keep_default_na=False)
    result = ragmeter.reliability.score(frame, qc="qc_maria")
    assert result.summary == json.loads(out.read_text())
    assert ragmeter.reliability.score(frame.to_dict("records"), qc=["qc_maria"]).summary \
        == result.summary


def test_save_writes_a_record_report_shows(tmp_path, run_cli) -> None:
    result = ragmeter.multilingual.score(_rows(_lbrag_answers()))
    record = result.save(runs_dir=str(tmp_path / "runs"))
    assert record.path.is_file()
    code, _, err = run_cli("report", record.run_id, "--runs-dir", tmp_path / "runs",
                           "--out", tmp_path / "r.html")
    assert code == 0, err
    assert "lbrag" in (tmp_path / "r.html").read_text()


def _requests(n: int) -> list[dict]:
    return [{"id": f"q{i}", "prompt": f"question {i}"} for i in range(n)]


def test_generate_api_equals_cli_and_reuses_the_store(scripted_server, run_cli, tmp_path):
    server = scripted_server()
    backend = ragmeter.backends.openai("scripted", base_url=server.url, concurrency=4)
    store = tmp_path / "store.sqlite"
    first = ragmeter.generate(_requests(6), backend=backend, store=store, progress=False)
    assert [i["id"] for i in first.items] == [f"q{i}" for i in range(6)]
    assert all(i["status"] == "ok" for i in first.items) and server.calls == 6
    assert first.items[2]["text"] == "echo: question 2"
    again = ragmeter.generate(_requests(6), backend=backend, store=store, progress=False)
    assert server.calls == 6 and all(i["cached"] for i in again.items)
    req = tmp_path / "req.jsonl"
    req.write_text("".join(json.dumps(r) + "\n" for r in _requests(6)))
    code, _, err = run_cli("generate", req, "--out", tmp_path / "resp.jsonl", "--backend",
                           "openai", "--model", "scripted", "--base-url", server.url,
                           "--store", store)
    assert code == 0, err
    assert server.calls == 6  # the CLI and the API share the store
    cli_rows = [json.loads(x) for x in (tmp_path / "resp.jsonl").read_text().splitlines()]
    assert [r["text"] for r in cli_rows] == [i["text"] for i in first.items]


def test_sync_api_inside_a_running_event_loop(scripted_server, tmp_path) -> None:
    server = scripted_server()
    backend = ragmeter.backends.openai("scripted", base_url=server.url)

    async def notebook_cell() -> tuple[list[str], list[str]]:
        sync = ragmeter.generate(_requests(3), backend=backend, store=tmp_path / "s.sqlite",
                                 progress=False)  # as in Jupyter: a loop is running
        awaited = await ragmeter.agenerate(_requests(4), backend=backend,
                                           store=tmp_path / "s.sqlite", progress=False)
        return [i["text"] for i in sync.items], [i["status"] for i in awaited.items]

    texts, statuses = asyncio.run(notebook_cell())
    assert texts == ["echo: question 0", "echo: question 1", "echo: question 2"]
    assert statuses == ["ok"] * 4 and server.calls == 4


def test_multilingual_judge_api_flags_a_judge_that_always_says_the_same(scripted_server):
    server = scripted_server(reply=lambda body: '{"score": 1.0, "explanation": "same"}')
    rows = [{"sample_id": str(i), "sample_lang": "en", "system": "s", "question": f"q{i}",
             "gold_answer": f"answer {i}", "pred_answer": f"reply {i}"} for i in range(8)]
    result = ragmeter.multilingual.judge(
        rows, scoring="generate", backend=ragmeter.backends.openai("j", base_url=server.url),
        progress=False)
    assert [i["semantic_score"] for i in result.items] == [1.0] * 8
    assert result.alarms and result.alarms[0]["kind"] == "degenerate_judge"
    assert result.summary["alarms"] == result.alarms
    assert result.judges[0]["validated"] is False
    scored = ragmeter.multilingual.score(result.items)  # the judged rows feed score
    assert scored.summary["metrics"]["s"]["semantic_score"] == 1.0


def test_public_names_of_family_modules() -> None:
    """Every public package's door exports exactly its ``__all__``: no private module, helper or
    stray import leaks out of a façade (STYLE.md, after httpx)."""
    import importlib
    import inspect

    for name in ("multilingual", "reliability", "rgb", "trace", "rubric", "backends", "testing",
                 "judges", "stats", "runs", "runner", "io", "text", "prompts"):
        module = importlib.import_module(f"ragmeter.{name}")
        public = {n for n, v in vars(module).items() if not n.startswith("_")
                  and not inspect.ismodule(v) and n != "annotations"}
        # a name the package loads on first use (its module __getattr__, as ragmeter.text
        # does for normalize_text) is exported too, and must resolve
        lazy = {n for n in module.__all__ if n not in vars(module) and hasattr(module, n)}
        assert public | lazy == set(module.__all__), module.__name__


def test_multilingual_judge_repeats_report_stability(scripted_server) -> None:
    def reply(body: dict) -> str:  # the judge flips with the sample seed: unstable on purpose
        return '{"score": %s, "explanation": "x"}' % ("1.0" if body.get("seed") else "0.0")

    server = scripted_server(reply=reply)
    rows = [{"sample_id": str(i), "sample_lang": "en", "system": "s", "question": f"q{i}",
             "gold_answer": f"g{i}", "pred_answer": f"p{i}"} for i in range(4)]
    backend = ragmeter.backends.openai("j", base_url=server.url, concurrency=1)
    result = ragmeter.multilingual.judge(rows, scoring="generate", backend=backend,
                                         repeats=2, progress=False)
    assert server.calls == 8  # 4 answers x 2 repeats, distinct samples
    st = result.summary["stability"]
    assert st["repeats"] == 2 and st["items"] == 4
    assert st["flip_rate"] == 1.0 and st["mean_agreement"] == 0.5  # 0.0 then 1.0 each time
    assert all(i["semantic_score"] == 0.5 for i in result.items)
    again = ragmeter.multilingual.judge(rows, scoring="generate", backend=backend, repeats=2,
                                        progress=False)
    assert server.calls == 8 and again.summary["stability"] == st  # all from the store


def test_dry_run_money_at_given_prices(run_cli, tmp_path) -> None:
    requests = [{"id": f"q{i}", "prompt": f"word{i} " * 40, "params": {"max_tokens": 10}}
                for i in range(3)]
    backend = ragmeter.backends.openai("gpt-4o-mini", price_prompt=2.0, price_completion=8.0)
    est = ragmeter.generate(requests, backend=backend, dry_run=True).summary
    assert est["calls"] == 3 and est["completion_tokens_max"] == 30
    assert est["cost_usd_max"] == pytest.approx(
        (est["prompt_tokens"] * 2.0 + 30 * 8.0) / 1e6)
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in requests))
    code, out, err = run_cli("generate", path, "--out", tmp_path / "o.jsonl", "--backend",
                             "openai", "--model", "gpt-4o-mini", "--dry-run", "--price-in", "2",
                             "--price-out", "8")
    assert code == 0, err
    assert f"at most ${est['cost_usd_max']:.4f}" in out and not (tmp_path / "o.jsonl").exists()
