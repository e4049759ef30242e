"""Run records: the stored results of one ``score``/``run`` command, one plain JSON file each.

A run record holds what a report needs and nothing it would have to recompute: the family's
``to_json()`` document (``result``), the per-item results (``items``) and where they came from
(command line, input files with SHA-256, backends, models, prompt versions, signature).  Reports
(:mod:`ragmeter.reports.html`) read records only; they never call a model or a metric.

Layout::

    <runs dir>/<run_id>.json      runs dir: --runs-dir, else $RAGMETER_HOME/runs, else the
                                  per-user data folder (ragmeter.runner._store.data_home) + /runs

``run_id`` is ``YYYYmmddTHHMMSSfffZ-<family>-<6 hex>`` (UTC), so sorting ids sorts runs by time.

Big inputs: a record keeps at most ``max_items`` items (default 50,000): every unscored item
first (they are what people drill into), then an evenly spaced sample of the scored ones in
input order.  ``items_total``/``items_unscored`` keep the true counts and ``items_truncated``
says a sample was taken; aggregates in ``result`` always cover every item.

Reading is forward compatible: unknown fields are kept (``extra="allow"``), a newer
``schema_version`` is read with a note instead of an error; a file that is not a run record
raises :class:`~ragmeter.errors.InputError` naming the file and the field.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter._version import __version__
from ragmeter.errors import InputError, UnknownNameError
from ragmeter.runs._types import RUN_SCHEMA_VERSION, InputFile

if TYPE_CHECKING:
    from ragmeter.runs._model import RunRecord

__all__ = [
    "RUN_SCHEMA_VERSION",
    "DEFAULT_MAX_ITEMS",
    "InputFile",
    "RunRecord",
    "record_run",
    "build_record",
    "load_run",
    "list_runs",
    "runs_dir",
    "new_run_id",
    "prune_runs",
    "retention",
    "DEFAULT_KEEP_RUNS",
]

DEFAULT_MAX_ITEMS = 50_000
DEFAULT_KEEP_RUNS = 500
ITEMS_SUFFIX = ".items.jsonl.gz"
COMPONENT = "report"


def runs_dir(override: str | Path | None = None) -> Path:
    """The folder of run records: ``override``, else ``data_home()/runs``."""
    if override is not None:
        return Path(override).expanduser()
    from ragmeter._util._home import data_home

    return data_home() / "runs"


_last: list[datetime] = []  # the newest time (milliseconds) this process stamped
_stamp_lock = threading.Lock()


def _stamp_time() -> datetime:
    """Now, in whole milliseconds, and never the same as or before the last time this
    process took (a second call in the same millisecond takes the next one): run ids made in
    quick succession (tests, a loop of small runs) then sort, and are pruned, in creation
    order rather than by their random suffix."""
    with _stamp_lock:
        now = datetime.now(timezone.utc)
        now = now.replace(microsecond=now.microsecond // 1000 * 1000)
        if _last and now <= _last[0]:
            now = _last[0] + timedelta(milliseconds=1)
        _last[:] = [now]
        return now


def new_run_id(family: str, now: datetime | None = None) -> str:
    """A run id that sorts by creation time: ``20250101T120000123Z-multilingual-a1b2c3``
    (``now``: the time to stamp; by default :func:`_stamp_time`, so that ids made in this
    process never share a stamp)."""
    stamp = _stamp(now or _stamp_time())
    safe = "".join(c if c.isalnum() or c in "_." else "_" for c in family) or "run"
    return f"{stamp}-{safe}-{os.urandom(3).hex()}"


def _stamp(now: datetime) -> str:
    return now.strftime("%Y%m%dT%H%M%S") + f"{now.microsecond // 1000:03d}Z"


def _cap_items(items: Iterable[Mapping[str, Any]], max_items: int
               ) -> tuple[list[dict[str, Any]], int, int, bool]:
    """Unscored first, then an evenly spaced sample of the scored ones (input order).

    One pass in bounded memory: scored items are kept at a stride that doubles whenever more
    than ``2 * max_items`` are held (a systematic sample), and the final ``room`` are picked
    evenly from those.  With at most ``2 * max_items`` scored items this is exactly every
    ``len / room``-th item.
    """
    unscored: list[dict[str, Any]] = []
    n_unscored = 0
    sample: list[dict[str, Any]] = []
    limit = 2 * max(max_items, 1)
    stride = 1
    n_scored = 0
    for it in items:
        if it.get("status", "ok") != "ok":
            n_unscored += 1
            if len(unscored) < max_items:
                unscored.append(it)  # type: ignore[arg-type]  # fresh dicts from the producer
            continue
        if n_scored % stride == 0:
            sample.append(it)  # type: ignore[arg-type]
            if len(sample) > limit:
                sample = sample[::2]
                stride *= 2
        n_scored += 1
    total = n_unscored + n_scored
    room = max_items - len(unscored)
    if n_scored <= room:
        kept_scored = sample
    elif room <= 0:
        kept_scored = []
    else:
        step = len(sample) / room
        kept_scored = [sample[int(i * step)] for i in range(room)]
    truncated = len(unscored) + len(kept_scored) < total
    return unscored + kept_scored, total, n_unscored, truncated


def build_record(family: str, result: Mapping[str, Any], items: Iterable[Mapping[str, Any]],
                 **options: Any) -> RunRecord:
    """A run record in memory (not written): what :func:`record_run` writes.  ``options``:
    those of :func:`_record_fields` (inputs, command, backends, models, prompt_versions,
    max_items)."""
    from ragmeter.runs._model import RunRecord

    fields = _record_fields(family, result, items, **options)
    fields["items"] = list(fields["items"])
    return RunRecord.model_construct(**fields)


def _record_fields(
    family: str,
    result: Mapping[str, Any],
    items: Iterable[Mapping[str, Any]],
    *,
    inputs: Sequence[InputFile | str | Path] = (),
    command: Sequence[str] | None = None,
    backends: Sequence[Any] = (),
    models: Sequence[str] = (),
    prompt_versions: Mapping[str, str] | None = None,
    max_items: int = DEFAULT_MAX_ITEMS,
) -> dict[str, Any]:
    """Every field of a run record, made without pydantic (the CLI's write path)."""
    from ragmeter._util._redact import redact_text

    now = _stamp_time()  # the run id's stamp: unique in this process
    from ragmeter.runs._columns import ItemColumns, keep_items

    kept: Any
    if isinstance(items, ItemColumns):  # only the kept items are built (issue 14)
        kept, total, n_unscored, truncated = keep_items(items, max_items)
    else:
        kept, total, n_unscored, truncated = _cap_items(items, max_items)
    notes = []
    if truncated:
        notes.append(f"items capped at {max_items} of {total}: all unscored first "
                     f"({n_unscored}), then an evenly spaced sample of the scored ones")
    # Built from values made here, so pydantic's per-item validation is skipped
    # (model_construct): it cost more than the scoring of a large file.
    return dict(
        run_id=new_run_id(family, now), family=family,
        created_at=now.isoformat(timespec="seconds"),
        command=[redact_text(c) for c in (command if command is not None else
                                          ["ragmeter", *sys.argv[1:]])],
        inputs=[_input_file(i) for i in inputs],
        backends=list(backends), models=list(models),
        prompt_versions=dict(prompt_versions or {}),
        signature=result.get("signature") if isinstance(result.get("signature"), str) else None,
        result=json.loads(json.dumps(result, allow_nan=False, default=str)),
        items=kept, items_total=total, items_unscored=n_unscored, items_truncated=truncated,
        notes=notes, schema_version=RUN_SCHEMA_VERSION, ragmeter_version=__version__,
    )


def record_run(family: str, result: Mapping[str, Any], items: Iterable[Mapping[str, Any]], *,
               runs_dir_override: str | Path | None = None, **options: Any) -> RunRecord:
    """Write a run record atomically to the runs dir and return it (``record.path`` is set).

    ``result`` is the family's ``to_json()`` document; its ``signature`` becomes the record's.
    ``options``: those of :func:`_record_fields` (inputs, command — default
    ``["ragmeter", *sys.argv[1:]]`` —, backends, models, prompt_versions, max_items).
    """
    from ragmeter.runs._model import RunRecord

    fields, target = write_run(family, result, items, runs_dir_override=runs_dir_override,
                               **options)
    record = RunRecord.model_construct(**{**fields, "items": list(fields["items"])})
    record._path = target
    return record


def write_run(family: str, result: Mapping[str, Any], items: Iterable[Mapping[str, Any]], *,
              runs_dir_override: str | Path | None = None, **options: Any
              ) -> tuple[dict[str, Any], Path]:
    """:func:`record_run` without building a :class:`RunRecord` (no pydantic): writes
    ``<run_id>.items.jsonl.gz`` then the ``<run_id>.json`` summary; returns the record's
    fields and the summary's path.  Then prunes beyond :func:`retention`.  ``options``:
    those of :func:`record_run` (inputs, command, backends, models, prompt_versions,
    max_items)."""
    from ragmeter.io import write_json

    fields = _record_fields(family, result, items, **options)
    folder = runs_dir(runs_dir_override)
    target = folder / f"{fields['run_id']}.json"
    items_name = f"{fields['run_id']}{ITEMS_SUFFIX}"
    write_items(folder / items_name, fields["items"])
    summary = {k: v for k, v in fields.items() if k != "items"}
    summary["inputs"] = [i.to_dict() for i in fields["inputs"]]
    summary["items_file"] = items_name
    # written last (a record exists once its summary does); 0600: records hold prompts and
    # replies
    write_json(target, summary, private=True)
    prune_runs(keep=retention(), runs_dir_override=folder)
    return fields, target


def _input_file(value: Any) -> InputFile:
    if isinstance(value, InputFile):
        return value
    if isinstance(value, Mapping):  # a record read back, or a caller's dict
        return InputFile(path=str(value.get("path")), sha256=value.get("sha256"),
                         rows=value.get("rows"))
    return InputFile.of(value)


def write_items(path: Path, items: Iterable[Mapping[str, Any]]) -> None:
    """Items as gzip-compressed JSON Lines of blocks (level 1: fast and small).

    Consecutive items with the same keys (in the same order) form one block,
    ``{"keys": [...], "rows": [[values], ...]}``: the keys are written once per block instead
    of once per item, which halves the encoding time, and :func:`read_items` rebuilds the
    very same dicts, in order.
    """
    import gzip

    from ragmeter.io import utf8, write_bytes_stream

    encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=str,
                              separators=(",", ":")).encode

    from ragmeter.runs._columns import KeptItems

    def runs() -> Iterable[tuple[tuple[str, ...], Sequence[Sequence[Any]]]]:
        """(keys, rows) runs in item order; one item each for dicts."""
        if isinstance(items, KeptItems):
            for kept in items.unscored:
                yield tuple(kept), [list(kept.values())]
            yield from items.scored
            return
        for it in items:
            yield tuple(it), [list(it.values())]

    def blocks() -> Iterable[dict[str, Any]]:
        keys: tuple[str, ...] | None = None
        rows: list[Sequence[Any]] = []
        for these, more in runs():
            if these != keys:
                if rows:
                    yield {"keys": list(keys or ()), "rows": rows}
                keys, rows = these, []
            while more:
                take = 4096 - len(rows)
                rows.extend(more[:take])
                more = more[take:]
                if len(rows) >= 4096:
                    yield {"keys": list(keys or ()), "rows": rows}
                    rows = []
        if rows:
            yield {"keys": list(keys or ()), "rows": rows}

    def write(fh: Any) -> None:
        with gzip.GzipFile(fileobj=fh, mode="wb", compresslevel=1, mtime=0) as gz:
            for block in blocks():
                gz.write(utf8(encode(block)) + b"\n")

    write_bytes_stream(path, write, private=True)  # items hold prompts and replies


def read_items(path: Path) -> list[dict[str, Any]]:
    """The items of :func:`write_items`, as the dicts that were written."""
    import gzip

    out: list[dict[str, Any]] = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            block = json.loads(line)
            keys = block["keys"]
            out.extend(dict(zip(keys, row, strict=True)) for row in block["rows"])
    return out


def retention() -> int:
    """How many run records to keep: ``$RAGMETER_KEEP_RUNS`` (0: all), default
    :data:`DEFAULT_KEEP_RUNS`.  The oldest beyond it are removed after each new record."""
    import os

    raw = os.environ.get("RAGMETER_KEEP_RUNS", "").strip()
    if not raw:
        return DEFAULT_KEEP_RUNS
    try:
        value = int(raw)
    except ValueError:
        from ragmeter.errors import ConfigError

        raise ConfigError(f"RAGMETER_KEEP_RUNS must be a whole number (0 keeps every run), "
                          f"got {raw!r}.") from None
    return max(0, value)


# An items file is written just before its summary (write_run): one without a summary that is
# younger than this may belong to a record being written right now, and is left alone.
ORPHAN_GRACE_S = 3600.0


def _orphans(folder: Path, ids: set[str]) -> list[str]:
    """Run ids of items files whose summary is gone (a process killed between the two
    writes, a summary deleted by hand), older than :data:`ORPHAN_GRACE_S`."""
    import time

    cutoff = time.time() - ORPHAN_GRACE_S
    out = []
    for path in folder.glob(f"*{ITEMS_SUFFIX}"):
        run_id = path.name[:-len(ITEMS_SUFFIX)]
        if run_id in ids or path.name.startswith("."):
            continue
        try:
            if path.stat().st_mtime < cutoff:
                out.append(run_id)
        except OSError:
            continue
    return out


def prune_runs(*, keep: int | None = None, older_than_days: float | None = None,
               runs_dir_override: str | Path | None = None, dry_run: bool = False
               ) -> list[str]:
    """Remove run records (summary and items file): all but the newest ``keep`` (0 or None:
    no count limit) and those older than ``older_than_days``; and, always, items files left
    without their summary for an hour or more (issue 29.12).  Returns the removed run ids,
    oldest first."""
    folder = runs_dir(runs_dir_override)
    if not folder.is_dir():
        return []
    ids = sorted(p.stem for p in folder.glob("*.json") if not p.name.startswith("."))
    doomed: set[str] = set()
    if keep:
        doomed.update(ids[:max(0, len(ids) - keep)])
    if older_than_days is not None:
        cutoff = datetime.now(timezone.utc).timestamp() - older_than_days * 86400.0
        for run_id in ids:
            try:
                if (folder / f"{run_id}.json").stat().st_mtime < cutoff:
                    doomed.add(run_id)
            except OSError:
                continue
    removed = sorted([run_id for run_id in ids if run_id in doomed]
                     + _orphans(folder, set(ids)))
    if not dry_run:
        for run_id in removed:
            for path in (folder / f"{run_id}.json", folder / f"{run_id}{ITEMS_SUFFIX}"):
                path.unlink(missing_ok=True)
    return removed


def _read_record(path: Path, load_items: bool = True) -> RunRecord:
    fix = "pass a run id from `ragmeter report --list` or a file written by a score command"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot be read ({err}).", component=COMPONENT, path=path,
                         fix=fix) from None
    except json.JSONDecodeError as err:
        raise InputError(f"is not JSON ({err.msg} at line {err.lineno}).", component=COMPONENT,
                         path=path, line=err.lineno, fix=fix) from None
    if not isinstance(doc, dict) or "run_id" not in doc or "family" not in doc:
        found = ", ".join(sorted(doc)[:12]) if isinstance(doc, dict) else type(doc).__name__
        raise InputError(f"is not a run record (needs run_id and family; found: {found}).",
                         component=COMPONENT, path=path, fix=fix)
    from pydantic import ValidationError

    from ragmeter.runs._model import RunRecord

    try:
        record = RunRecord.model_validate(doc)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(f"{first['msg']} (given {str(first.get('input'))[:60]!r}).",
                         component=COMPONENT, path=path, field=where, fix=fix) from None
    items_file = doc.get("items_file")
    if isinstance(items_file, str) and not doc.get("items") and load_items:
        items_path = path.parent / Path(items_file).name
        try:
            record.items = read_items(items_path)
        except (OSError, EOFError, ValueError) as err:
            raise InputError(f"cannot read its items file {items_path.name} ({err}).",
                             component=COMPONENT, path=path, field="items_file",
                             fix="the record is incomplete; run the command again") from None
    if record.schema_version > RUN_SCHEMA_VERSION:
        record.notes.append(f"written with run-record schema {record.schema_version}; this "
                            f"ragmeter reads {RUN_SCHEMA_VERSION}: unknown fields are ignored")
    record._path = path
    return record


def load_run(id_or_path: str | Path, *, runs_dir_override: str | Path | None = None,
             load_items: bool = True) -> RunRecord:
    """A run record by file path, run id, or unique run-id prefix (``latest`` = newest);
    ``load_items=False`` leaves its items file unread (``ragmeter gate`` reads the summary
    only)."""
    as_path = Path(id_or_path)
    if as_path.suffix == ".json" and as_path.is_file():
        return _read_record(as_path, load_items)
    folder = runs_dir(runs_dir_override)
    ids = sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []
    key = str(id_or_path)
    if key == "latest" and ids:
        return _read_record(folder / f"{ids[-1]}.json", load_items)
    matches = [i for i in ids if i == key] or [i for i in ids if i.startswith(key)]
    if len(matches) == 1:
        return _read_record(folder / f"{matches[0]}.json", load_items)
    if len(matches) > 1:
        raise InputError(f"run id prefix {key!r} matches {len(matches)} runs "
                         f"({', '.join(matches[:3])}, ...).", component=COMPONENT,
                         path=folder, fix="give more characters of the run id")
    raise UnknownNameError("run", key, ids[-20:], component=COMPONENT)


def _warn_skipped(path: Path, err: InputError) -> None:
    import warnings

    warnings.warn(f"skipped {path}: {err}", UserWarning, stacklevel=3)


def list_runs(*, runs_dir_override: str | Path | None = None,
              family: str | None = None,
              on_skip: Callable[[Path, InputError], None] | None = None) -> list[RunRecord]:
    """Every run record in the runs dir (oldest first), optionally of one family.

    Items are dropped from the returned records to keep listing cheap in memory.  A file that
    is not a readable run record (empty, truncated, edited by hand) is skipped and reported to
    ``on_skip`` (default: a warning naming it), so one bad file never hides the other runs.
    """
    folder = runs_dir(runs_dir_override)
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob("*.json")):
        try:
            record = _read_record(path, load_items=False)
        except InputError as err:
            (on_skip or _warn_skipped)(path, err)
            continue
        if family is None or record.family == family:
            record.items = []
            out.append(record)
    return out


def __getattr__(name: str) -> Any:
    """``RunRecord`` is imported on first use (pydantic is not needed to write a record)."""
    if name == "RunRecord":
        from ragmeter.runs._model import RunRecord

        return RunRecord
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
