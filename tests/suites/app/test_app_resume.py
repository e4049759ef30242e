"""Issue 28's proof for ``app run``: a run killed with SIGKILL and started again calls the
application only for the rows it had not answered; counted at the application itself (a real
HTTP server on 127.0.0.1, and a Python function that logs its calls outside the process)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from tests.conftest import REPO

N = 120


def _test_set(tmp_path: Path) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i:03d}", "question": f"brake question {i}"})
                            + "\n" for i in range(N)))
    return path


def _stored_questions(store: Path) -> set[str]:
    """The questions whose replies are in the store (the payload of each stored call)."""
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT request_json FROM calls").fetchall()
    out = set()
    for (request_json,) in rows:
        payload = json.loads(json.loads(request_json)["messages"][0]["content"])
        out.add(payload["body"]["query"] if "body" in payload else payload["question"])
    return out


def _kill_when(proc: subprocess.Popen[bytes], ready: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 90
    while not ready() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    assert proc.poll() is None, f"the run ended before {what}"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO / "src"), **extra}


def test_http_app_killed_then_resumed_calls_each_unanswered_row_once(rag_app, tmp_path):
    app = rag_app(latency=0.03)
    data, store, out = _test_set(tmp_path), tmp_path / "store.sqlite", tmp_path / "out.jsonl"
    cmd = [sys.executable, "-m", "ragmeter", "app", "run", str(data), "--out", str(out),
           "--url", app.url("/ask"), "--template", '{"query": "{question}"}',
           "--store", str(store), "--concurrency", "4", "--no-record"]
    proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _kill_when(proc, lambda: len(app.answered) >= 40, "40 answers")
    assert not out.exists()                                  # written atomically at the end

    done = _stored_questions(store)
    assert 0 < len(done) < N
    first_calls = Counter(app.calls)
    time.sleep(0.2)  # the application finishes the calls the killed run left in flight
    app.reset()
    result = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    assert not set(app.calls) & done                         # no stored row asked again
    assert sum(app.calls.values()) == N - len(done)          # every other row asked once
    assert set(app.calls.values()) == {1}
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == [f"q{i:03d}" for i in range(N)]
    assert all(r["status"] == "ok" for r in rows)
    assert sum(r["cached"] for r in rows) == len(done)
    # over both runs the application answered each row once, but for the calls in flight at
    # the kill (at most --concurrency of them), whose replies were never stored
    both = first_calls + app.calls
    assert sum(both.values()) - N <= 4


SLOW_APP = '''
import json, os, time

def answer(question):
    time.sleep(0.02)
    with open(os.environ["APP_CALL_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps(question) + "\\n")   # every call, kept outside the process
    return {"answer": question.upper(), "contexts": [question]}
'''


def test_python_function_killed_then_resumed_calls_each_unanswered_row_once(tmp_path):
    (tmp_path / "slowapp.py").write_text(SLOW_APP)
    log = tmp_path / "calls.log"
    data, store, out = _test_set(tmp_path), tmp_path / "store.sqlite", tmp_path / "out.jsonl"
    cmd = [sys.executable, "-m", "ragmeter", "app", "run", str(data), "--out", str(out),
           "--function", "slowapp:answer", "--store", str(store), "--concurrency", "4",
           "--no-record"]
    env = _env(APP_CALL_LOG=str(log))

    def calls() -> list[str]:
        return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []

    proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    _kill_when(proc, lambda: len(calls()) >= 40, "40 calls")
    done = _stored_questions(store)
    assert 0 < len(done) < N
    before = len(calls())
    result = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True,
                            timeout=180)
    assert result.returncode == 0, result.stderr
    second = calls()[before:]
    assert not set(second) & done
    assert len(second) == N - len(done) and len(set(second)) == len(second)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(r["status"] == "ok" and r["response"] == r["question"].upper() for r in rows)
    assert sum(r["cached"] for r in rows) == len(done)
