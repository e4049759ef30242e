"""Run records: the stored results of one ``score``/``run`` command, one plain JSON file each.

A run record holds what a report needs and nothing it would have to recompute: the family's
``to_json()`` document (``result``), the per-item results (``items``) and where they came from
(command line, input files with SHA-256, backends, models, prompt versions, signature).  Reports
(:mod:`ragmeter.reports.html`) read records only; they never call a model or a metric.

Layout::

    <runs dir>/<run_id>.json      runs dir: --runs-dir, else $RAGMETER_HOME/runs, else the
                                  per-user data folder (ragmeter.store.data_home) + /runs

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

import hashlib
import json
import secrets
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from ragmeter._version import __version__
from ragmeter.errors import InputError, UnknownNameError

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
]

RUN_SCHEMA_VERSION = 1
DEFAULT_MAX_ITEMS = 50_000
COMPONENT = "report"


def runs_dir(override: str | Path | None = None) -> Path:
    """The folder of run records: ``override``, else ``data_home()/runs``."""
    if override is not None:
        return Path(override).expanduser()
    from ragmeter.store import data_home

    return data_home() / "runs"


def new_run_id(family: str, now: datetime | None = None) -> str:
    """A run id that sorts by creation time: ``20250101T120000123Z-multilingual-a1b2c3``."""
    now = now or datetime.now(timezone.utc)
    stamp = now.strftime("%Y%m%dT%H%M%S") + f"{now.microsecond // 1000:03d}Z"
    safe = "".join(c if c.isalnum() or c in "_." else "_" for c in family) or "run"
    return f"{stamp}-{safe}-{secrets.token_hex(3)}"


class InputFile(BaseModel):
    """One data file a run read: its path as given, SHA-256 of its bytes, and row count."""

    model_config = ConfigDict(extra="allow")

    path: str
    sha256: str | None = None
    rows: int | None = None

    @classmethod
    def of(cls, path: str | Path, rows: int | None = None) -> InputFile:
        """Hash ``path`` (streamed); a missing file gets ``sha256=None``."""
        p = Path(path)
        digest: str | None = None
        if p.is_file():
            h = hashlib.sha256()
            with p.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
            digest = h.hexdigest()
        return cls(path=str(path), sha256=digest, rows=rows)


class RunRecord(BaseModel):
    """The stored results of one run (schema_version 1).  Unknown fields are kept."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = RUN_SCHEMA_VERSION
    run_id: str
    family: str
    created_at: str
    ragmeter_version: str = __version__
    command: list[str] = Field(default_factory=list)
    inputs: list[InputFile] = Field(default_factory=list)
    backends: list[Any] = Field(default_factory=list)
    models: list[str] = Field(default_factory=list)
    prompt_versions: dict[str, str] = Field(default_factory=dict)
    signature: str | None = None
    result: dict[str, Any] = Field(default_factory=dict)
    items: list[dict[str, Any]] = Field(default_factory=list)
    items_total: int = 0
    items_unscored: int = 0
    items_truncated: bool = False
    notes: list[str] = Field(default_factory=list)

    _path: Path | None = PrivateAttr(default=None)

    @property
    def path(self) -> Path | None:
        """The file this record was written to or read from."""
        return self._path

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def _cap_items(items: Iterable[Mapping[str, Any]], max_items: int
               ) -> tuple[list[dict[str, Any]], int, int, bool]:
    """Unscored first, then an evenly spaced sample of the scored ones (input order)."""
    unscored: list[dict[str, Any]] = []
    scored: list[dict[str, Any]] = []
    for it in items:
        (scored if it.get("status", "ok") == "ok" else unscored).append(dict(it))
    total = len(unscored) + len(scored)
    kept_unscored = unscored[:max_items]
    room = max_items - len(kept_unscored)
    if len(scored) <= room:
        kept_scored = scored
    elif room <= 0:
        kept_scored = []
    else:
        step = len(scored) / room
        kept_scored = [scored[int(i * step)] for i in range(room)]
    truncated = len(kept_unscored) + len(kept_scored) < total
    return kept_unscored + kept_scored, total, len(unscored), truncated


def build_record(
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
) -> RunRecord:
    """A run record in memory (not written): what :func:`record_run` writes."""
    from ragmeter.redact import redact_text

    now = datetime.now(timezone.utc)
    kept, total, n_unscored, truncated = _cap_items(items, max_items)
    notes = []
    if truncated:
        notes.append(f"items capped at {max_items} of {total}: all unscored first "
                     f"({n_unscored}), then an evenly spaced sample of the scored ones")
    return RunRecord(
        run_id=new_run_id(family, now), family=family,
        created_at=now.isoformat(timespec="seconds"),
        command=[redact_text(c) for c in (command if command is not None else
                                          ["ragmeter", *sys.argv[1:]])],
        inputs=[i if isinstance(i, InputFile) else InputFile.of(i) for i in inputs],
        backends=list(backends), models=list(models),
        prompt_versions=dict(prompt_versions or {}),
        signature=result.get("signature") if isinstance(result.get("signature"), str) else None,
        result=json.loads(json.dumps(result, allow_nan=False, default=str)),
        items=kept, items_total=total, items_unscored=n_unscored, items_truncated=truncated,
        notes=notes,
    )


def record_run(
    family: str,
    result: Mapping[str, Any],
    items: Iterable[Mapping[str, Any]],
    *,
    inputs: Sequence[InputFile | str | Path] = (),
    command: Sequence[str] | None = None,
    backends: Sequence[Any] = (),
    models: Sequence[str] = (),
    prompt_versions: Mapping[str, str] | None = None,
    runs_dir_override: str | Path | None = None,
    max_items: int = DEFAULT_MAX_ITEMS,
) -> RunRecord:
    """Write a run record atomically to the runs dir and return it (``record.path`` is set).

    ``result`` is the family's ``to_json()`` document; its ``signature`` becomes the record's.
    ``command`` defaults to ``["ragmeter", *sys.argv[1:]]``.
    """
    from ragmeter.io import write_json

    record = build_record(family, result, items, inputs=inputs, command=command,
                          backends=backends, models=models, prompt_versions=prompt_versions,
                          max_items=max_items)
    target = runs_dir(runs_dir_override) / f"{record.run_id}.json"
    write_json(target, record.to_json(), private=True)  # it holds prompts and replies
    record._path = target
    return record


def _read_record(path: Path) -> RunRecord:
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
    try:
        record = RunRecord.model_validate(doc)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(f"{first['msg']} (given {str(first.get('input'))[:60]!r}).",
                         component=COMPONENT, path=path, field=where, fix=fix) from None
    if record.schema_version > RUN_SCHEMA_VERSION:
        record.notes.append(f"written with run-record schema {record.schema_version}; this "
                            f"ragmeter reads {RUN_SCHEMA_VERSION}: unknown fields are ignored")
    record._path = path
    return record


def load_run(id_or_path: str | Path, *, runs_dir_override: str | Path | None = None
             ) -> RunRecord:
    """A run record by file path, run id, or unique run-id prefix (``latest`` = newest)."""
    as_path = Path(id_or_path)
    if as_path.suffix == ".json" and as_path.is_file():
        return _read_record(as_path)
    folder = runs_dir(runs_dir_override)
    ids = sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []
    key = str(id_or_path)
    if key == "latest" and ids:
        return _read_record(folder / f"{ids[-1]}.json")
    matches = [i for i in ids if i == key] or [i for i in ids if i.startswith(key)]
    if len(matches) == 1:
        return _read_record(folder / f"{matches[0]}.json")
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
            record = _read_record(path)
        except InputError as err:
            (on_skip or _warn_skipped)(path, err)
            continue
        if family is None or record.family == family:
            record.items = []
            out.append(record)
    return out
