"""The SQLite store: every model call and response, once; runs and their item results.

The database runs in WAL mode, so a process killed at any moment (``kill -9``) loses at most the
call in flight: every response is committed before the runner hands it to anyone.  Failed calls
are never stored, so a later run retries them.

Schema (forward-only migrations, numbered functions recorded in ``schema_migrations``; the
pattern of simonw/llm's ``llm/migrations.py``)::

    schema_migrations(version INTEGER PK, name TEXT, applied_at TEXT)
    calls(key TEXT PK,                 -- Request.cache_key(backend.identity()), "v1:<sha256>"
          backend TEXT, model TEXT,    -- from the backend identity
          request_json TEXT,           -- the key material: identity, messages, params, choices
          response_json TEXT,          -- Response.to_dict()
          prompt_tokens INT, completion_tokens INT, latency_ms REAL, created_at TEXT)
    runs(id INTEGER PK, command TEXT, started_at TEXT, finished_at TEXT,
         status TEXT,                  -- "running" | "finished"
         config_json TEXT, ragmeter_version TEXT)
    item_results(run_id INT -> runs.id, item_id TEXT, status TEXT, reason TEXT, detail TEXT,
                 call_key TEXT, cached INT, values_json TEXT, PK (run_id, item_id))
    claims(key TEXT PK, owner TEXT, expires_at REAL)   -- a call being made right now (003)
    runs.owner TEXT                                     -- "host:pid" of the running process (004)
    vectors(key TEXT PK, model TEXT, dim INT, vector BLOB,   -- embeddings (005): key is
            created_at TEXT)                                 -- sha256(model, text)

**Claims** keep two processes on one store from paying for the same call: a process claims a
key (a lease of ``lease_s`` seconds, renewed while it runs) before sending the request, and
deletes the claim once the response is stored or the call failed.  Another process that finds a
live claim waits for the answer instead of calling; a claim whose process died (``kill -9``)
lapses when its lease expires, and the waiter takes it over.

**Interrupted runs**: a run still "running" whose process is gone (same host, pid not alive) is
shown as "interrupted" by :meth:`Store.runs` and ``cache stats``.

**A full disk** (``database or disk is full``) or a read-only store is a
:class:`~ragmeter.errors.UserError` that says what was kept: every response committed before
the failure stays, and running the command again resumes from there.

The store never holds API keys: a backend's identity names the backend, model and endpoint only.
The default location is ``$RAGMETER_HOME/store.sqlite``, else the per-user data folder
(``$XDG_DATA_HOME/ragmeter`` or ``~/.local/share/ragmeter`` on Linux, ``~/Library/Application
Support/ragmeter`` on macOS, ``%LOCALAPPDATA%\\ragmeter`` on Windows).
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from ragmeter._util._home import data_home
from ragmeter._util._record import record, set_field
from ragmeter._version import __version__
from ragmeter.backends._types import Request, Response, canonical_json
from ragmeter.errors import UserError
from ragmeter.runner._schema import (
    MIGRATIONS,
    apply_migrations,
    build_new,
    set_wal,
    start_new_wal,
)
from ragmeter.runner._schema import now as _now

__all__ = ["Store", "StoreStats", "default_store_path", "data_home", "MIGRATIONS",
           "LOOKUP_CHUNK"]

# Keys per ``WHERE key IN (...)`` query of a bulk lookup: under SQLite's smallest default
# limit of bound parameters (999 before SQLite 3.32).
LOOKUP_CHUNK = 500


def default_store_path() -> Path:
    """Where the store lives unless ``--store`` says otherwise."""
    return data_home() / "store.sqlite"




def process_owner() -> str:
    """``host:pid`` of this process (who holds a claim or runs a run)."""
    import socket

    return f"{socket.gethostname()}:{os.getpid()}"


def _owner_alive(owner: str | None) -> bool:
    """False only when ``owner`` is a process of this host that no longer exists."""
    import socket

    if not owner:
        return True
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True  # another machine: cannot tell
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


@record()  # a plain class, no dataclass (issue 26.5)
class StoreStats:
    """What ``ragmeter cache stats`` shows."""

    __slots__ = ("path", "calls", "runs", "item_results", "prompt_tokens", "completion_tokens",
                 "size_bytes", "by_model", "schema_version", "runs_by_status")
    path: str
    calls: int
    runs: int
    item_results: int
    prompt_tokens: int
    completion_tokens: int
    size_bytes: int
    by_model: dict[str, int]
    schema_version: int
    runs_by_status: dict[str, int]  # running/finished/interrupted (default: a new empty dict)

    def __init__(self, path: str, calls: int, runs: int, item_results: int, prompt_tokens: int,
                 completion_tokens: int, size_bytes: int, by_model: dict[str, int],
                 schema_version: int, runs_by_status: dict[str, int] | None = None) -> None:
        set_field(self, "path", path)
        set_field(self, "calls", calls)
        set_field(self, "runs", runs)
        set_field(self, "item_results", item_results)
        set_field(self, "prompt_tokens", prompt_tokens)
        set_field(self, "completion_tokens", completion_tokens)
        set_field(self, "size_bytes", size_bytes)
        set_field(self, "by_model", by_model)
        set_field(self, "schema_version", schema_version)
        set_field(self, "runs_by_status", {} if runs_by_status is None else runs_by_status)


_F = TypeVar("_F", bound=Callable[..., Any])


def _writes(method: _F) -> _F:
    """A store method that writes: a full disk or a read-only store becomes the one-line
    :class:`UserError` of :meth:`Store._full` (what was kept, how to resume)."""
    @functools.wraps(method)
    def wrapper(self: Store, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.OperationalError as exc:
            if "lock" in str(exc):
                raise
            raise self._full(exc) from None
    return wrapper  # type: ignore[return-value]


def _damaged(exc: BaseException) -> bool:
    """True for SQLite's "the file is damaged" errors (SQLITE_CORRUPT, SQLITE_NOTADB: "database
    disk image is malformed", "file is not a database"), which SQLite raises as the plain
    ``sqlite3.DatabaseError`` on any read of a damaged page."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    name = getattr(exc, "sqlite_errorname", None)  # Python 3.11+
    if name is not None:
        return str(name).startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))
    return type(exc) is sqlite3.DatabaseError


class _Access:
    """The one door to the connection: every read and write of the store holds it
    (``with self._lock:``).  It serializes the threads that share the connection and turns a
    damaged file's error, wherever it surfaces (a read, a write, a migration), into one
    :class:`UserError` that names the file and the fix, instead of a ``sqlite3.DatabaseError``
    traceback (issue 29.7).  A full disk or a read-only file is left to :func:`_writes`, which
    says what was kept."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        self._lock.release()
        if exc is not None and _damaged(exc):
            raise _damaged_error(self.path, exc) from None


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def _damaged_error(path: Path, exc: BaseException) -> UserError:
    return UserError(
        f"store: the store at {path} is damaged ({exc}); nothing more was read from or "
        f"written to it. Fix: move it aside (mv {path} {path}.damaged, with its -wal and -shm "
        f"files) and run the command again: calls it held are made again into a new store "
        f"(or rescue them with `sqlite3 {path}.damaged .recover | sqlite3 NEW` and --store "
        f"NEW).")


class Store:
    """A SQLite store of model calls (the cache), runs and item results.

    One connection, guarded by a lock, in autocommit mode: each :meth:`put` is its own
    committed transaction.  Usable from a single asyncio loop and from worker threads.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        try:
            # Prompts and replies sit in the store: its folder 0700, its files 0600 (SQLite
            # gives the -wal and -shm files the database file's permissions).
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            built = not self.path.exists() and build_new(self.path)
            if not self.path.exists():
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
            self._db = sqlite3.connect(str(self.path), isolation_level=None,
                                       check_same_thread=False, timeout=30.0)
            set_wal(self._db)
            # NORMAL in WAL mode is durable against a killed process (not an OS crash).
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA foreign_keys=ON")
        except (sqlite3.Error, OSError) as exc:
            if _damaged(exc) and _is_sqlite(self.path):  # else: not a store at all
                raise _damaged_error(self.path, exc) from None
            raise UserError(f"store: cannot open {self.path} as a SQLite database ({exc}). "
                            f"Fix: choose another file with --store PATH.") from None
        self._lock = _Access(self.path)
        self._migrate()
        if built:
            with self._lock:
                start_new_wal(self._db, self.path)

    # -------------------------------------------------------------- schema

    def _migrate(self) -> None:
        with self._lock:
            apply_migrations(self._db, self.path)

    def schema_version(self) -> int:
        with self._lock:
            row = self._db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    # -------------------------------------------------------------- calls

    def get(self, key: str) -> Response | None:
        """The stored response for a cache key, or None."""
        with self._lock:
            row = self._db.execute("SELECT response_json FROM calls WHERE key = ?",
                                   (key,)).fetchone()
        return Response.from_dict(json.loads(row[0])) if row else None

    def get_many(self, keys: Iterable[str]) -> dict[str, Response]:
        """Stored responses for many keys at once (missing keys are absent)."""
        return {key: Response.from_dict(json.loads(raw)) for key, raw in
                self._select_in("SELECT key, response_json FROM calls", keys)}

    def _select_in(self, select: str, keys: Iterable[str]) -> list[tuple[str, Any]]:
        """``(key, value)`` rows of ``select ... WHERE key IN (keys)``, ``LOOKUP_CHUNK`` keys
        a query (tests/test_store_lookup.py straddles the boundary)."""
        wanted = list(dict.fromkeys(keys))
        rows: list[tuple[str, Any]] = []
        with self._lock:
            for start in range(0, len(wanted), LOOKUP_CHUNK):
                chunk = wanted[start:start + LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows.extend(self._db.execute(f"{select} WHERE key IN ({marks})", chunk))
        return rows

    # -------------------------------------------------------------- vectors

    def get_vectors(self, keys: Iterable[str]) -> dict[str, bytes]:
        """Stored embedding vectors (raw float32 bytes) for many keys (missing keys absent)."""
        return {key: bytes(blob) for key, blob in
                self._select_in("SELECT key, vector FROM vectors", keys)}

    def has_vectors(self, model: str) -> bool:
        """Whether any vector of ``model`` is stored (one index seek)."""
        with self._lock:
            return self._db.execute("SELECT 1 FROM vectors WHERE model = ? LIMIT 1",
                                    (model,)).fetchone() is not None

    def put_vectors(self, rows: Iterable[tuple[str, str, int, bytes]]) -> None:
        """Store ``(key, model, dim, float32 bytes)`` embeddings in one transaction."""
        now = _now()
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany(
                    "INSERT OR IGNORE INTO vectors VALUES (?, ?, ?, ?, ?)",
                    [(k, m, d, v, now) for k, m, d, v in rows])
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise UserError(f"store: cannot write embeddings to {self.path} ({exc}). "
                                "Fix: free disk space or choose another --store PATH.") from None

    def _full(self, exc: sqlite3.Error) -> UserError:
        """The one-line error for a store that cannot be written (full disk, read-only)."""
        with self._lock:
            try:
                kept = self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
            except sqlite3.Error:
                kept = "all"
        return UserError(
            f"store: cannot write to {self.path} ({exc}). Kept: every response stored before "
            f"this point ({kept} calls); nothing stored was lost. Fix: free disk space (or "
            f"make the store writable) and run the same command again: it resumes from the "
            f"store without paying again.")

    @_writes
    def put(self, key: str, request: Request, identity: Mapping[str, Any],
            response: Response) -> None:
        """Persist one successful response (committed before this returns)."""
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             _call_row(key, request, identity, response, _now()))

    @_writes
    def put_many(self, calls: Iterable[tuple[str, Request, Response]],
                 identity: Mapping[str, Any]) -> None:
        """Persist many ``(key, request, response)`` of one backend ``identity`` in one
        transaction (committed, all or none, before this returns)."""
        now = _now()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    "INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [_call_row(k, q, identity, r, now) for k, q, r in calls])
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    # -------------------------------------------------------------- claims

    @_writes
    def claim(self, key: str, owner: str, lease_s: float) -> Response | bool:
        """Claim ``key`` for ``owner`` before calling the model.

        Returns the stored response when the call was already made (by anyone), True when the
        key is now ``owner``'s for ``lease_s`` seconds, False while another live claim holds it.
        """
        import time

        now = time.time()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute("SELECT response_json FROM calls WHERE key = ?",
                                       (key,)).fetchone()
                if row is not None:
                    self._db.execute("COMMIT")
                    return Response.from_dict(json.loads(row[0]))
                held = self._db.execute("SELECT owner, expires_at FROM claims WHERE key = ?",
                                        (key,)).fetchone()
                mine = (held is None or held[0] == owner or held[1] < now
                        or not _owner_alive(held[0].rsplit(":", 1)[0]))  # host:pid:run
                if mine:
                    self._db.execute("INSERT OR REPLACE INTO claims VALUES (?, ?, ?)",
                                     (key, owner, now + lease_s))
                self._db.execute("COMMIT")
                return mine
            except sqlite3.OperationalError as exc:
                self._db.execute("ROLLBACK")
                if "lock" in str(exc):
                    return False  # busy beyond the timeout: treat as held, ask again later
                raise
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    @_writes
    def renew_claims(self, owner: str, lease_s: float) -> None:
        """Extend every claim of ``owner`` (the runner does this while it runs)."""
        import time

        with self._lock:
            self._db.execute("UPDATE claims SET expires_at = ? WHERE owner = ?",
                             (time.time() + lease_s, owner))

    @_writes
    def release(self, key: str, owner: str) -> None:
        """Drop ``owner``'s claim on ``key`` (after its response was stored, or it failed)."""
        with self._lock:
            self._db.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, owner))

    @_writes
    def release_all(self, owner: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM claims WHERE owner = ?", (owner,))

    def keys(self) -> set[str]:
        with self._lock:
            return {r[0] for r in self._db.execute("SELECT key FROM calls")}

    # -------------------------------------------------------------- runs

    @_writes
    def start_run(self, command: str, config: Mapping[str, Any] | None = None) -> int:
        """Record the start of a run; returns its id."""
        with self._lock:
            cur = self._db.execute(
                "INSERT INTO runs (command, started_at, status, config_json, ragmeter_version, "
                "owner) VALUES (?, ?, 'running', ?, ?, ?)",
                (command, _now(), canonical_json(dict(config or {})), __version__,
                 process_owner()))
            return int(cur.lastrowid or 0)

    @_writes
    def finish_run(self, run_id: int) -> None:
        with self._lock:
            self._db.execute("UPDATE runs SET finished_at = ?, status = 'finished' WHERE id = ?",
                             (_now(), run_id))

    @_writes
    def record_items(self, run_id: int, items: Iterable[Mapping[str, Any]]) -> int:
        """Store per-item results of a run: mappings with ``item_id``, ``status`` and optional
        ``reason``, ``detail``, ``call_key``, ``cached``, ``values`` (JSON-able)."""
        rows = [(run_id, str(it["item_id"]), it["status"], it.get("reason"), it.get("detail"),
                 it.get("call_key"), int(bool(it.get("cached"))),
                 canonical_json(it["values"]) if it.get("values") is not None else None)
                for it in items]
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    "INSERT OR REPLACE INTO item_results VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return len(rows)

    def runs(self) -> list[dict[str, Any]]:
        """All runs; one still "running" whose process is gone is marked "interrupted"."""
        self.mark_interrupted()
        with self._lock:
            cur = self._db.execute("SELECT * FROM runs ORDER BY id")
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    def mark_interrupted(self) -> int:
        """Mark runs whose process died (same host, pid gone) as "interrupted"."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id, owner FROM runs WHERE status = 'running'").fetchall()
            dead = [(rid,) for rid, owner in rows if not _owner_alive(owner)]
            if dead:
                try:
                    self._db.executemany(
                        "UPDATE runs SET status = 'interrupted' WHERE id = ?", dead)
                except sqlite3.OperationalError:
                    return 0  # a read-only store: shown as running, changed next time
        return len(dead)

    def iter_items(self, run_id: int) -> Iterator[dict[str, Any]]:
        with self._lock:
            cur = self._db.execute("SELECT * FROM item_results WHERE run_id = ? ORDER BY rowid",
                                   (run_id,))
            names = [d[0] for d in cur.description]
            rows = cur.fetchall()
        for r in rows:
            rec = dict(zip(names, r, strict=True))
            rec["values"] = json.loads(rec.pop("values_json")) if rec["values_json"] else None
            yield rec

    # -------------------------------------------------------------- maintenance

    def stats(self) -> StoreStats:
        self.mark_interrupted()
        with self._lock:
            by_status = {st: n for st, n in self._db.execute(
                "SELECT status, COUNT(*) FROM runs GROUP BY status ORDER BY status")}
            calls, pt, ct = self._db.execute(
                "SELECT COUNT(*), COALESCE(SUM(prompt_tokens), 0), "
                "COALESCE(SUM(completion_tokens), 0) FROM calls").fetchone()
            runs = self._db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
            items = self._db.execute("SELECT COUNT(*) FROM item_results").fetchone()[0]
            by_model = {f"{b}:{m}" if m else b: n for b, m, n in self._db.execute(
                "SELECT backend, model, COUNT(*) FROM calls GROUP BY backend, model "
                "ORDER BY 3 DESC")}
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*")
                   if p.is_file())
        return StoreStats(path=str(self.path), calls=int(calls), runs=int(runs),
                          item_results=int(items), prompt_tokens=int(pt),
                          completion_tokens=int(ct), size_bytes=size, by_model=by_model,
                          schema_version=self.schema_version(), runs_by_status=by_status)

    def clear(self, *, model: str | None = None) -> int:
        """Delete stored calls (all, or one model's); runs and item results go with ``all``.
        Returns the number of calls deleted."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                if model is None:
                    n = self._db.execute("DELETE FROM calls").rowcount
                    self._db.execute("DELETE FROM item_results")
                    self._db.execute("DELETE FROM runs")
                else:
                    n = self._db.execute("DELETE FROM calls WHERE model = ?", (model,)).rowcount
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("VACUUM")
        return int(n)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _call_row(key: str, request: Request, identity: Mapping[str, Any], response: Response,
              now: str) -> tuple[Any, ...]:
    """The ``calls`` row of one response."""
    return (key, str(identity.get("backend", "")), identity.get("model"),
            canonical_json(request.key_material(identity)), canonical_json(response.to_dict()),
            response.usage.prompt_tokens, response.usage.completion_tokens,
            response.latency_ms, now)

