"""``ragmeter gate RESULT.json --require 'f1>=0.5'``: a quality gate for shell CI."""

from __future__ import annotations

import sys

import click

from ragmeter.cli.options import input_file


@click.command(name="gate")
@click.argument("result_path", metavar="RESULT.json", type=input_file())
@click.option("--require", "requirements", multiple=True, required=True,
              metavar="'METRIC>=N'",
              help="A requirement such as 'f1>=0.5' or 'cost<=120' (repeatable; all must hold).")
@click.option("--group", default=None, metavar="NAME",
              help="The system, language or evaluator the metrics belong to (needed when the "
                   "result has several groups with that metric).")
@click.option("--ci", is_flag=True,
              help="Compare the 95% CI bound (lower for >=, upper for <=) instead of the value, "
                   "so the gate does not flap on noise (the result must carry CIs, e.g. "
                   "multilingual score --ci).")
def gate(result_path: str, requirements: tuple[str, ...], group: str | None, ci: bool) -> None:
    """Check a result file against requirements: exit 0 when all hold, 1 when any fails
    (with a readable list), 2 on bad input.

    RESULT.json is what a score command wrote with --json, or a run record.

    \b
    Examples:
      ragmeter multilingual score answers.jsonl --ci --json metrics.json
      ragmeter gate metrics.json --require 'f1>=0.5' --require 'rlc_ok>=0.9' --group lbrag --ci
    """
    import json
    from pathlib import Path

    from ragmeter.errors import InputError
    from ragmeter.testing import check_requirement, parse_requirement

    parsed = [parse_requirement(r) for r in requirements]
    path = Path(result_path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("does not exist.", component="gate", path=path,
                         fix="pass the file a score command wrote with --json.") from None
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot be read ({err}).", component="gate", path=path) from None
    except json.JSONDecodeError as err:
        raise InputError(f"is not JSON ({err.msg}).", component="gate", path=path,
                         line=err.lineno, fix="pass the --json output of a score command.") \
            from None
    if isinstance(doc, dict) and "run_id" in doc and isinstance(doc.get("result"), dict):
        doc = doc["result"]  # a run record: its result is the --json document
    if not isinstance(doc, dict):
        raise InputError(f"holds a {type(doc).__name__}, expected a JSON object.",
                         component="gate", path=path,
                         fix="pass the --json output of a score command.")
    checks = [check_requirement(doc, r, group=group, ci=ci) for r in parsed]
    failed = [c for c in checks if not c.ok]
    for c in checks:
        click.echo(("ok   " if c.ok else "FAIL ") + c.message())
    if failed:
        click.echo(f"gate: {len(failed)} of {len(checks)} requirement(s) failed", err=True)
        sys.exit(1)
    click.echo(f"gate: all {len(checks)} requirement(s) hold", err=True)
