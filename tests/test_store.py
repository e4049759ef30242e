"""The SQLite store: migrations, WAL, round trips, runs, stats, clear, default location."""

from __future__ import annotations

import os
import sqlite3

import pytest

from ragmeter.backends._types import Request, Response, Usage
from ragmeter.errors import UserError
from ragmeter.runner._store import MIGRATIONS, Store, default_store_path

IDENTITY = {"backend": "fake", "model": "m1"}


def put_one(store: Store, text: str = "hello", content: str = "q") -> str:
    req = Request.chat("id1", [{"role": "user", "content": content}], params={"temperature": 0})
    key = req.cache_key(IDENTITY)
    store.put(key, req, IDENTITY, Response(text=text, usage=Usage(4, 1), latency_ms=12.5,
                                           choice_probs={"yes": 0.75, "no": 0.25},
                                           choice_method="logprobs"))
    return key


def test_migrations_are_recorded_and_wal_is_on(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    rows = store._db.execute("SELECT version, name FROM schema_migrations ORDER BY 1").fetchall()
    assert rows == [(v, n) for v, n, _ in MIGRATIONS]
    assert store._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()
    again = Store(tmp_path / "s.sqlite")  # reopening applies nothing twice
    assert again.schema_version() == MIGRATIONS[-1][0]


def test_newer_schema_is_refused(tmp_path):
    Store(tmp_path / "s.sqlite").close()
    db = sqlite3.connect(tmp_path / "s.sqlite")
    db.execute("INSERT INTO schema_migrations VALUES (999, 'future', 'now')")
    db.commit()
    db.close()
    with pytest.raises(UserError, match="newer ragmeter"):
        Store(tmp_path / "s.sqlite")


def test_put_get_round_trip(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    key = put_one(store)
    got = store.get(key)
    assert got is not None
    assert (got.text, got.usage, got.latency_ms) == ("hello", Usage(4, 1), 12.5)
    assert got.choice_probs == {"yes": 0.75, "no": 0.25} and got.choice_method == "logprobs"
    assert store.get("v1:missing") is None
    assert set(store.get_many([key, "v1:missing"])) == {key}


def test_put_many_stores_what_put_stores_in_one_transaction(tmp_path):
    one, many = Store(tmp_path / "one.sqlite"), Store(tmp_path / "many.sqlite")
    calls = []
    for i in range(3):
        req = Request.chat(f"id{i}", [{"role": "user", "content": f"q{i}"}])
        calls.append((req.cache_key(IDENTITY), req, Response(text=f"a{i}", usage=Usage(i, 1))))
        one.put(calls[-1][0], req, IDENTITY, calls[-1][2])
    many.put_many(calls, IDENTITY)
    select = "SELECT key, backend, model, request_json, response_json FROM calls ORDER BY key"
    assert many._db.execute(select).fetchall() == one._db.execute(select).fetchall()
    assert len(many.get_many(k for k, _, _ in calls)) == 3
    bad = [(calls[0][0], calls[0][1], Response(text="x")), ("v1:y", calls[1][1], None)]
    with pytest.raises(AttributeError):  # a row that cannot be written: none of them is
        many.put_many(bad, IDENTITY)  # type: ignore[arg-type]
    assert many.get(calls[0][0]).text == "a0"  # type: ignore[union-attr]


def test_a_second_process_sees_committed_rows(tmp_path):
    """A real second process (not a second connection in this one) reads what put() stored:
    the row is committed before put() returns, while this process keeps its store open."""
    import subprocess
    import sys

    store = Store(tmp_path / "s.sqlite")
    key = put_one(store)
    code = ("import sys; from ragmeter.runner._store import Store; "
            "r = Store(sys.argv[1]).get(sys.argv[2]); print(r.text if r else 'MISSING')")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "s.sqlite"), key],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == "hello"
    store.close()


def test_runs_items_stats_and_clear(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    put_one(store, content="a")
    put_one(store, content="b")
    run = store.start_run("unit", {"x": 1})
    store.record_items(run, [{"item_id": "a", "status": "ok", "values": {"f1": 0.5}},
                             {"item_id": "b", "status": "unscored", "reason": "timeout"}])
    store.finish_run(run)
    items = list(store.iter_items(run))
    assert items[0]["values"] == {"f1": 0.5} and items[1]["reason"] == "timeout"
    st = store.stats()
    assert (st.calls, st.runs, st.item_results, st.prompt_tokens) == (2, 1, 2, 8)
    assert st.by_model == {"fake:m1": 2}
    assert store.clear(model="other") == 0
    assert store.clear() == 2
    assert store.stats().calls == 0 and store.stats().runs == 0


def test_default_path_follows_ragmeter_home(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGMETER_HOME", str(tmp_path / "home"))
    assert default_store_path() == tmp_path / "home" / "store.sqlite"
    store = Store()
    assert store.path == tmp_path / "home" / "store.sqlite" and store.path.exists()


def test_unopenable_path_is_a_user_error(tmp_path):
    bad = tmp_path / "not-a-db.sqlite"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(UserError, match="cannot open"):
        Store(bad)


def test_many_processes_create_one_new_store_at_once(tmp_path):
    """Eight real processes open the same not-yet-existing store at the same instant: each one
    reads the applied migrations, then takes the write lock; one that finds a migration already
    applied by another must skip it (before, it failed with "table calls already exists")."""
    import subprocess
    import sys
    import time

    path = tmp_path / "new.sqlite"
    start = time.time() + 1.5
    code = ("import sys, time; from ragmeter.runner._store import Store\n"
            "time.sleep(max(0.0, float(sys.argv[2]) - time.time()))\n"
            "print(Store(sys.argv[1]).schema_version())")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path), repr(start)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(8)]
    results = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, [err[-300:] for _, err in results]
    assert {out.strip() for out, _ in results} == {str(max(v for v, _, _ in MIGRATIONS))}


def test_a_new_store_is_built_aside_and_linked_into_place(tmp_path, monkeypatch):
    import os

    from ragmeter.runner import _schema, _store

    syncs: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(_store.os, "fsync", lambda fd: (syncs.append(fd), real_fsync(fd)))
    path = tmp_path / "home" / "store.sqlite"
    store = Store(path)
    assert store.schema_version() == max(v for v, _, _ in MIGRATIONS)
    assert store._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    key = put_one(store)
    store.close()
    assert len(syncs) == 1  # built with SQLite's syncs off, synced once before the link
    assert sorted(os.listdir(path.parent)) == ["store.sqlite"]  # nothing left aside
    assert path.stat().st_mode & 0o777 == 0o600
    # a store that exists (another process made it first) is never replaced
    before = path.read_bytes()
    _schema.build_new(path)
    assert path.read_bytes() == before and sorted(os.listdir(path.parent)) == ["store.sqlite"]
    again = Store(path)
    assert again.get(key) is not None
    again.close()


def _wal_bytes(path):
    wal = f"{path}-wal"
    return os.stat(wal).st_size if os.path.exists(wal) else 0


def test_a_new_stores_log_starts_at_open_without_a_header_sync(tmp_path):
    # issue 26.5: a store made by this process starts its write-ahead log when it is opened
    # (one frame, user_version set to its own value, with synchronous=OFF for that commit
    # only), so the first real write does not sync the log's header; on main the log stayed
    # empty until the first write
    path = tmp_path / "store.sqlite"
    store = Store(path)
    page = store._db.execute("PRAGMA page_size").fetchone()[0]
    assert _wal_bytes(path) == 32 + 24 + page  # the log's header and one frame
    assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL again
    assert store._db.execute("PRAGMA user_version").fetchone()[0] == 0
    key = put_one(store)
    store.close()
    assert sorted(os.listdir(tmp_path)) == ["store.sqlite"]  # checkpointed, log removed
    # a store that exists already: opening it writes nothing (its first write syncs as before)
    again = Store(path)
    assert _wal_bytes(path) == 0
    assert again.get(key) is not None
    again.close()


def test_a_log_with_frames_is_left_to_sqlite(tmp_path):
    from ragmeter.runner import _schema

    path = tmp_path / "store.sqlite"
    first = Store(path)
    put_one(first)  # another connection's frames sit in the log
    before = _wal_bytes(path)
    second = sqlite3.connect(str(path), isolation_level=None)
    second.execute("PRAGMA synchronous=NORMAL")
    _schema.start_new_wal(second, path)
    assert _wal_bytes(path) == before  # nothing written: the log was not empty
    assert second.execute("PRAGMA synchronous").fetchone()[0] == 1
    assert not second.in_transaction
    second.close()
    first.close()
