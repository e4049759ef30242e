"""``ragmeter generate`` and ``ragmeter cache`` end to end (in-process CLI, scripted server)."""

from __future__ import annotations

import json

import pytest

from tests.servers.scripted_openai import Faults


def write_rows(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def openai_args(server, store):
    return ["--backend", "openai", "--model", "scripted", "--base-url", server.url,
            "--store", store]


ROWS = [
    {"id": "a", "prompt": "first"},
    {"id": "b", "system": "be brief", "prompt": "second", "params": {"max_tokens": 8}},
    {"id": "c", "messages": [{"role": "user", "content": "third"}], "choices": ["yes", "no"]},
    {"id": 4, "prompt": "fourth", "repeat": 1},
]


def test_generate_writes_rows_in_order_and_reruns_call_nothing(scripted_server, tmp_path,
                                                               run_cli):
    server = scripted_server()
    req = write_rows(tmp_path / "req.jsonl", ROWS)
    out = tmp_path / "out.jsonl"
    store = tmp_path / "s.sqlite"
    code, _, err = run_cli("generate", req, "--out", out, *openai_args(server, store))
    assert code == 0, err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["a", "b", "c", "4"]
    assert rows[0]["text"] == "echo: first" and rows[0]["status"] == "ok"
    assert rows[0]["reason"] is None and rows[0]["cached"] is False
    assert set(rows[0]) == {"id", "text", "status", "reason", "usage", "latency_ms", "cached"}
    assert rows[2]["choice_probs"] == pytest.approx({"yes": 0.7 / 0.9, "no": 0.2 / 0.9})
    assert rows[2]["choice_method"] == "logprobs"
    # Requests go out concurrently, so find row "b"'s request by content, not by position.
    assert any(b["messages"][0] == {"role": "system", "content": "be brief"}
               for b in server.bodies)
    assert "4 ok" in err

    server.reset_counts()
    code, _, err = run_cli("generate", req, "--out", out, *openai_args(server, store))
    assert code == 0 and server.stats()["calls"] == 0
    assert all(json.loads(line)["cached"] for line in out.read_text().splitlines())

    code, stdout, _ = run_cli("cache", "stats", "--store", store, "--json")
    stats = json.loads(stdout)
    assert stats["calls"] == 4 and stats["runs"] == 2
    code, _, err = run_cli("cache", "clear", "--store", store, "--yes")
    assert code == 0 and "deleted 4 calls" in err


def test_failures_become_unscored_rows(scripted_server, tmp_path, run_cli):
    server = scripted_server(faults=Faults(rate_500=1.0))
    req = write_rows(tmp_path / "req.jsonl", ROWS[:2])
    out = tmp_path / "out.jsonl"
    code, _, err = run_cli("generate", req, "--out", out, "--max-retries", "1",
                           *openai_args(server, tmp_path / "s.sqlite"))
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["status"], r["reason"], r["text"]) for r in rows] == [
        ("unscored", "http_500", None)] * 2
    assert "2 unscored (http_500: 2)" in err
    # every call failed: the rows are written, then one line and exit 1 (issue 25)
    assert code == 1 and err.strip().splitlines()[-1].startswith(
        "error: generate: all 2 of its model calls failed (most often http_500: 2")


def test_dry_run_calls_nothing(scripted_server, tmp_path, run_cli):
    server = scripted_server()
    req = write_rows(tmp_path / "req.jsonl", ROWS)
    code, stdout, _ = run_cli("generate", req, "--out", tmp_path / "o.jsonl", "--dry-run",
                              *openai_args(server, tmp_path / "s.sqlite"))
    assert code == 0
    assert "4 requests, 0 already in the store, 4 calls to make" in stdout
    assert server.stats()["calls"] == 0 and not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("row, message", [
    ({"prompt": "x"}, 'line 2 of REQ: field "id": is missing (required)'),
    ({"id": "z", "promt": "x"}, 'field "messages": has neither "messages" nor "prompt"'),
    ({"id": "z", "messages": []}, 'field "messages": is not a non-empty list'),
    ({"id": "z", "messages": [{"role": "robot", "content": "x"}]}, "role 'robot'"),
    ({"id": "z", "prompt": 5}, 'field "prompt": is int, expected text'),
    ({"id": "z", "prompt": "x", "params": [1]}, 'field "params": is list'),
    ({"id": "z", "prompt": "x", "choices": ["yes", "yes"]}, 'field "choices"'),
    ({"id": "z", "prompt": "x", "repeat": -1}, 'field "repeat"'),
    ({"id": "a", "prompt": "dup"}, "repeats id 'a' (first on line 1)"),
])
def test_bad_request_rows_name_the_line(tmp_path, run_cli, row, message):
    req = write_rows(tmp_path / "req.jsonl", [ROWS[0], row])
    code, _, err = run_cli("generate", req, "--out", tmp_path / "o.jsonl", "--backend",
                           "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1")
    assert code == 2
    assert message.replace("REQ", str(req)) in err
    assert "Traceback" not in err


def test_unknown_backend_suggests(tmp_path, run_cli):
    req = write_rows(tmp_path / "req.jsonl", ROWS[:1])
    code, _, err = run_cli("generate", req, "--out", tmp_path / "o.jsonl", "--backend", "opnai")
    assert code == 2 and "Did you mean: openai?" in err


def test_cost_counter_from_prices(tmp_path, scripted_server, run_cli) -> None:
    """--price-prompt/--price-completion give a running cost of the calls made (cached: 0)."""
    import json

    server = scripted_server()
    req = tmp_path / "req.jsonl"
    req.write_text("".join(json.dumps({"id": f"r{i}", "prompt": f"q{i}"}) + "\n"
                           for i in range(3)), encoding="utf-8")
    args = ["generate", req, "--out", tmp_path / "out.jsonl", "--backend", "openai",
            "--base-url", server.url, "--model", "m", "--store", tmp_path / "s.sqlite",
            "--price-prompt", "1000000", "--price-completion", "2000000"]
    code, _, err = run_cli(*args)
    assert code == 0, err
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    expected = sum(r["usage"]["prompt_tokens"] * 1 + r["usage"]["completion_tokens"] * 2
                   for r in rows)
    assert f"cost ${expected:.4f}" in err
    code, _, err = run_cli(*args)  # all cached: nothing paid
    assert code == 0 and "cost $" not in err and "0 prompt + 0 completion" in err
