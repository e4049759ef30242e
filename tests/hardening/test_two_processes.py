"""Two processes on one store (issue 16): real subprocesses against the scripted server.
Started together on 100 overlapping items they pay for each call once (the server counts); a
process killed with SIGKILL leaves claims that lapse, and the other takes its calls over."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ, RAGMETER_HOME=str(home), PYTHONPATH=str(REPO / "src"))
    env.pop("COLUMNS", None)
    return env


def test_two_generate_runs_pay_once(scripted_server, tmp_path):
    server = scripted_server(latency=0.03)
    req = tmp_path / "req.jsonl"
    req.write_text("".join(json.dumps({"id": f"r{i}", "prompt": f"question {i}"}) + "\n"
                           for i in range(100)))
    store = tmp_path / "s.sqlite"
    procs = [subprocess.Popen(
        [sys.executable, "-m", "ragmeter", "generate", str(req), "--out",
         str(tmp_path / f"out{n}.jsonl"), "--backend", "openai", "--model", "scripted",
         "--base-url", server.url, "--store", str(store), "--concurrency", "8"],
        env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for n in (1, 2)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    assert server.stats()["calls"] == 100                  # not 200: each call paid once
    for n in (1, 2):
        rows = [json.loads(x) for x in (tmp_path / f"out{n}.jsonl").read_text().splitlines()]
        assert len(rows) == 100 and all(r["status"] == "ok" for r in rows)
        assert [r["text"] for r in rows] == [f"echo: question {i}" for i in range(100)]


_WORKER = """
import sys
from ragmeter.backends._registry import create_backend
from ragmeter.backends._types import Request
from ragmeter.runner._run import RunnerConfig, run_requests
from ragmeter.runner._store import Store
url, store, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
reqs = [Request.chat(f"q{i}", [{"role": "user", "content": f"question {i}"}]) for i in range(n)]
out = run_requests(reqs, create_backend("openai", model="scripted", base_url=url), Store(store),
                   RunnerConfig(concurrency=4, progress=False, lease_s=1.0, claim_poll_s=0.05))
print(sum(o.ok for o in out), flush=True)
"""


def test_killed_process_claims_lapse(scripted_server, tmp_path):
    server = scripted_server(latency=0.2)
    store = tmp_path / "s.sqlite"
    args = [sys.executable, "-c", _WORKER, server.url, str(store), "24"]
    first = subprocess.Popen(args, env=_env(tmp_path), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while server.stats()["calls"] < 6 and time.monotonic() < deadline:
        time.sleep(0.02)
    second = subprocess.Popen(args, env=_env(tmp_path), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    first.send_signal(signal.SIGKILL)  # its claims stay in the store, unrenewed
    first.wait(10)
    start = time.monotonic()
    out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    assert out.strip() == "24"                             # every item answered
    assert time.monotonic() - start < 30                   # the dead claims lapsed (1 s lease)
    # Only calls in flight in the killed process can have been paid twice.
    assert server.stats()["calls"] <= 24 + 4
