"""docs/app.md's loop, as written: the example application's server started as a process, the
test set sent to it, the output judged by retrieval and rubric, and the gates; the numbers the
page shows are the numbers the commands give."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ragmeter.io._samples import sample_path
from tests.conftest import REPO

DOC = (REPO / "docs" / "app.md").read_text(encoding="utf-8")
WORDS = " ".join(DOC.split())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def example_server():
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(REPO / "examples" / "rag_app" / "server.py"),
                             "--port", str(port)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == f"serving on http://127.0.0.1:{port}/ask"
    yield f"http://127.0.0.1:{port}/ask"
    proc.terminate()
    proc.wait(10)


def test_the_documented_loop_runs_and_gives_the_documented_numbers(example_server, tmp_path,
                                                                    run_cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = sample_path("retrieval_contexts.jsonl")
    code, _, err = run_cli("app", "run", s, "--out", "answers.jsonl", "--url", example_server,
                           "--template", '{"query": "{question}"}', "--contexts-path",
                           "sources[*].text", "--ids-path", "sources[*].id", "--name",
                           "bike-rag", "--version", "v1", "--json", "app.json")
    assert code == 0, err
    assert "wrote 12 rows to answers.jsonl" in err and "wrote 12 rows to answers.jsonl" in DOC
    code, out, err = run_cli("retrieval", "score", "answers.jsonl", "--ci", "--json",
                             "retrieval.json")
    assert code == 0, err
    ndcg = next(line for line in out.splitlines() if line.strip().startswith("nDCG"))
    assert " ".join(ndcg.split()[:7]) in WORDS              # nDCG@1 and @3 with their CIs
    code, _, err = run_cli("rubric", "judge", "answers.jsonl", "--out", "judged.jsonl",
                           "--strategy", "overlap")
    assert code == 0, err
    code, _, err = run_cli("rubric", "score", "judged.jsonl", "--json", "rubric.json")
    assert code == 0, err
    for args in (("app.json", "--require", "answered>=0.95", "--require",
                  "latency_p95_ms<=2000"),
                 ("retrieval.json", "--require", "ndcg@3>=0.8", "--require",
                  "answer_in_context@3>=0.9", "--ci"),
                 ("rubric.json", "--require", "weighted_score>=0.5")):
        documented = " ".join(f"'{a}'" if "=" in a else a for a in args)
        assert f"ragmeter gate {documented}" in WORDS
        code, out, err = run_cli("gate", *args)
        assert code == 0, out + err
    # the same application as a Python function gives the same rows (latency aside)
    monkeypatch.chdir(REPO)
    code, _, err = run_cli("app", "run", s, "--out", tmp_path / "f.jsonl", "--function",
                           "examples.rag_app.app:answer", "--no-record")
    assert code == 0, err

    def rows(path: Path) -> list[tuple[str, str, list[str]]]:
        return [(r["id"], r["response"], r["retrieved_contexts"]) for r in
                map(json.loads, path.read_text().splitlines())]

    assert rows(tmp_path / "f.jsonl") == rows(tmp_path / "answers.jsonl")


def test_the_failure_shown_in_the_docs_is_the_cli_s(run_cli, tmp_path):
    s = sample_path("retrieval_contexts.jsonl")
    code, _, err = run_cli("app", "run", s, "--out", tmp_path / "a.jsonl", "--url",
                           "http://127.0.0.1:9/ask", "--max-retries", "0", "--no-record")
    assert code == 1
    shown = next(line for line in DOC.splitlines() if line.startswith("error: app run:"))
    assert err.strip().splitlines()[-1] == shown
