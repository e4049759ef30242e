"""``ragmeter gate RESULT --require 'f1>=0.5'``: a quality gate for shell CI."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ragmeter.cli.options import GuardedPath

# A result document is a few kB to a few MB; anything far larger is not one.
MAX_RESULT_BYTES = 256 * 1024 * 1024


@click.command(name="gate")
@click.argument("result_ref", metavar="RESULT")
@click.option("--require", "requirements", multiple=True, required=True,
              metavar="'METRIC>=N'",
              help="A requirement such as 'f1>=0.5' or 'cost<=120' (repeatable; all must hold).")
@click.option("--group", default=None, metavar="NAME",
              help="The system, language, evaluator or setting the metrics belong to (needed "
                   "when the result has several groups with that metric).")
@click.option("--ci", is_flag=True,
              help="Compare the 95% CI bound (lower for >=, upper for <=) instead of the value, "
                   "so the gate does not flap on noise (the result must carry CIs, e.g. "
                   "multilingual score --ci).")
@click.option("--runs-dir", "runs_dir", default=None,
              type=GuardedPath("input", pattern="*.json", file_okay=False),
              help="Folder of run records, for a run id or 'latest' [default: "
                   "$RAGMETER_HOME/runs].")
def gate(result_ref: str, requirements: tuple[str, ...], group: str | None, ci: bool,
         runs_dir: str | None) -> None:
    """Check a result against requirements: exit 0 when all hold, 1 when any fails (with a
    readable list), 2 on bad input (an unreadable or malformed result, an unknown metric or
    group, a threshold that is not a finite number).

    RESULT is what a command wrote with --json, a run record file, a run id (or a unique
    prefix) printed by a command, or 'latest' (as for `ragmeter report`).  A number that is
    absent (unscored) or flagged (e.g. a degenerate judge) never passes.

    \b
    Examples:
      ragmeter multilingual score answers.jsonl --ci --json metrics.json
      ragmeter gate metrics.json --require 'f1>=0.5' --require 'rlc_ok>=0.9' --group lbrag --ci
      ragmeter gate latest --require 'adherence>=0.8'
    """
    from ragmeter.errors import InputError
    from ragmeter.testing._gate import evaluate, parse_requirement, validate_summary

    parsed = [parse_requirement(r) for r in requirements]
    path = _resolve(result_ref, runs_dir)
    doc = _read_json(path)
    if isinstance(doc, dict) and "run_id" in doc and isinstance(doc.get("result"), dict):
        doc = doc["result"]  # a run record: its result is the --json document
    problem = validate_summary(doc)
    if problem:
        raise InputError(f"{problem}.", component="gate", path=path,
                         fix="pass the --json output of a ragmeter command or a run record, "
                             "as written.")
    checks = [evaluate(doc, r.metric, group, [(r.op, r.threshold)], ci, "cli")[0]
              for r in parsed]
    failed = [c for c in checks if not c.ok]
    for c in checks:
        click.echo(("ok   " if c.ok else "FAIL ") + c.message())
    if failed:
        click.echo(f"gate: {len(failed)} of {len(checks)} requirement(s) failed", err=True)
        sys.exit(1)
    click.echo(f"gate: all {len(checks)} requirement(s) hold", err=True)


def _resolve(ref: str, runs_dir: str | None) -> Path:
    """The file RESULT names: a path when one exists, else a stored run (id, prefix,
    ``latest``)."""
    from ragmeter.errors import InputError, UnknownNameError
    from ragmeter.runs._records import load_run

    path = Path(ref)
    if path.exists() or path.suffix == ".json" or "/" in ref or "\\" in ref:
        if path.is_dir():
            raise InputError("is a folder, not a result file.", component="gate", path=path,
                             fix="pass the --json file a command wrote, or a run id.")
        if not path.exists():
            raise InputError("does not exist.", component="gate", path=path,
                             fix="pass the file a command wrote with --json, a run id, or "
                                 "latest.")
        return path
    try:
        record = load_run(ref, runs_dir_override=runs_dir, load_items=False)
    except UnknownNameError:
        raise InputError(f"RESULT {ref!r} is neither a file nor a stored run id.",
                         component="gate",
                         fix="pass the file a command wrote with --json, a run id from "
                             "`ragmeter report --list`, or latest (--runs-dir for another "
                             "folder).") from None
    if record.path is None:  # pragma: no cover - load_run always sets it
        raise InputError(f"run {ref!r} has no file.", component="gate")
    return record.path


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _read_json(path: Path) -> Any:
    """The JSON document at ``path``: a regular file, at most MAX_RESULT_BYTES, strict JSON
    (no NaN or Infinity)."""
    import json

    from ragmeter.errors import InputError

    fix = "pass the --json output of a ragmeter command or a run record."
    try:
        if not path.is_file():
            raise InputError("is not a regular file.", component="gate", path=path, fix=fix)
        with path.open("rb") as f:
            raw = f.read(MAX_RESULT_BYTES + 1)
        if len(raw) > MAX_RESULT_BYTES:
            raise InputError(f"is larger than {MAX_RESULT_BYTES // 2**20} MiB: not a result.",
                             component="gate", path=path, fix=fix)
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot be read ({err}).", component="gate", path=path) from None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise InputError(f"is not JSON ({err.msg}).", component="gate", path=path,
                         line=err.lineno, fix=fix) from None
    except ValueError as err:
        raise InputError(f"is not strict JSON ({err}).", component="gate", path=path,
                         fix=fix) from None
    except RecursionError:
        raise InputError("is nested too deeply to be a result.", component="gate", path=path,
                         fix=fix) from None
