"""A store file with damaged pages (issue 29.7): every command that reads the store
(``cache stats``, ``generate``, ``rubric judge``) stops with exit 2 and one line that names the
file and says to move it aside, never a ``sqlite3.DatabaseError`` traceback, and pays for no
call.  The damage is real: pages of a store written by ``generate`` are overwritten with random
bytes, as a disk or a copy gone wrong would leave them."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

from ragmeter.errors import UserError
from ragmeter.runner._store import Store

PAGE = 4096  # SQLite's default page size (checked below)


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _damage(store: Path, seed: int = 0) -> None:
    """Overwrite the middle of every other page from the third on with random bytes (the
    header page and the schema stay intact: the file still opens as SQLite)."""
    db = sqlite3.connect(store)
    assert db.execute("PRAGMA page_size").fetchone()[0] == PAGE
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every page in the main file
    db.close()
    wal = Path(f"{store}-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    rng = random.Random(seed)
    size = store.stat().st_size
    assert size >= 8 * PAGE, size  # enough pages for the damage to hit the calls table
    with store.open("r+b") as fh:
        for offset in range(2 * PAGE, size, 2 * PAGE):
            fh.seek(offset + 64)
            fh.write(rng.randbytes(PAGE - 128))


@pytest.fixture
def damaged_store(tmp_path, scripted_server, run_cli):
    """A store holding 60 answered calls of ``requests`` (and the run), then damaged."""
    server = scripted_server(reply=lambda body: "an answer " * 40)
    requests = _jsonl(tmp_path / "req.jsonl", [{"id": f"r{i}", "prompt": f"question {i} " * 20}
                                               for i in range(60)])
    store = tmp_path / "store.sqlite"
    code, _, err = run_cli("generate", requests, "--out", tmp_path / "first.jsonl",
                           "--backend", "openai", "--model", "scripted", "--base-url",
                           server.url, "--store", store)
    assert code == 0, err
    _damage(store)
    server.reset_counts()
    return store, requests, server


def _one_line_damaged(code: int, err: str, store: Path) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert "Traceback" not in err and "DatabaseError" not in err
    assert len(lines) == 1 and lines[0].startswith("error: store:"), err
    assert f"the store at {store} is damaged" in lines[0]
    assert "move it aside" in lines[0] and "run the command again" in lines[0]


def test_cache_stats_on_a_damaged_store(damaged_store, run_cli):
    store, _, _ = damaged_store
    code, _, err = run_cli("cache", "stats", "--store", store)
    _one_line_damaged(code, err, store)


def test_generate_on_a_damaged_store_pays_nothing(damaged_store, run_cli, tmp_path):
    store, requests, server = damaged_store
    out = tmp_path / "again.jsonl"
    code, _, err = run_cli("generate", requests, "--out", out, "--backend", "openai",
                           "--model", "scripted", "--base-url", server.url, "--store", store)
    _one_line_damaged(code, err, store)
    assert server.stats()["calls"] == 0 and not out.exists()


def test_rubric_judge_on_a_damaged_store_pays_nothing(damaged_store, run_cli, tmp_path):
    store, _, server = damaged_store
    answers = _jsonl(tmp_path / "answers.jsonl", [
        {"id": str(i), "question": f"What is {i}+{i}?", "reference": str(2 * i),
         "response": str(2 * i)}
        for i in range(5)])
    out = tmp_path / "graded.jsonl"
    code, _, err = run_cli("rubric", "judge", answers, "--out", out, "--scoring", "generate",
                           "--backend", "openai", "--model", "scripted", "--base-url",
                           server.url, "--store", store)
    _one_line_damaged(code, err, store)
    assert server.stats()["calls"] == 0 and not out.exists()


def test_every_read_of_the_python_api_is_wrapped(damaged_store):
    """The same one line from the library: the door of every read is one lock
    (``ragmeter.runner._store._Access``), so a read added later is covered too."""
    store, _, _ = damaged_store
    with pytest.raises(UserError, match="is damaged"):
        db = Store(store)
        db.stats()
        db.keys()


def test_a_file_that_is_no_sqlite_still_says_cannot_open(tmp_path):
    bad = tmp_path / "answers.sqlite"
    bad.write_bytes(b'{"id": 1}\n' * 500)
    with pytest.raises(UserError, match="cannot open .* as a SQLite database"):
        Store(bad)
