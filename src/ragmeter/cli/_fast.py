"""``ragmeter generate`` without click, for the command lines it fully understands (issue 26.5).

Importing click and building the command's 23 options costs a judged command ~10 ms before
its first call.  :func:`generate_args` reads ``generate REQUESTS --out RESPONSES [options]``
when every token is one it knows: a long option of ``generate`` given once (``--flag VALUE``
or ``--flag=VALUE``), ``--replay``/``--dry-run``, one positional; numbers in plain decimal
within their flag's range; files that click would accept.  It returns the keyword arguments
click would pass to the command, or None, and then click parses the line as before: help,
``--version``, the group's options, errors, anything unusual (so every message stays click's
own).  ``tests/cli/test_fast_generate.py`` checks it against click's parse of the same lines.
"""

from __future__ import annotations

import os
import re
import stat
from typing import Any

__all__ = ["generate_args"]

_PLAIN_INT = re.compile(r"[0-9]{1,9}")
_PLAIN_FLOAT = re.compile(r"[0-9]{1,15}(\.[0-9]{1,15})?")

# flag -> (keyword, kind, bounds) as in ragmeter.cli.backend_options / cli.generate.
# kind: "str", "int" (lo, hi or None), "float" (lo, lo_open), "choice" (values), "in" or
# "out" (a file read or written), "flag".
_OPTIONS: dict[str, tuple[str, str, Any]] = {
    "--out": ("out_path", "out", None),
    "--backend": ("backend", "str", None),
    "--endpoint": ("endpoint", "str", None),
    "--model": ("model", "str", None),
    "--base-url": ("base_url", "str", None),
    "--concurrency": ("concurrency", "int", (1, 4096)),
    "--batch-size": ("batch_size", "int", (1, 256)),
    "--rpm": ("rpm", "float", (0, True)),
    "--tpm": ("tpm", "float", (0, True)),
    "--timeout": ("timeout", "float", (0, True)),
    "--max-retries": ("max_retries", "int", (0, 100)),
    "--store": ("store", "in", None),
    "--replay": ("replay", "flag", None),
    "--price-in": ("price_prompt", "float", (0, False)),
    "--price-prompt": ("price_prompt", "float", (0, False)),
    "--price-out": ("price_completion", "float", (0, False)),
    "--price-completion": ("price_completion", "float", (0, False)),
    "--dry-run": ("dry_run", "flag", None),
    "--engine": ("engine", "choice", ("local", "ray")),
    "--ray-address": ("ray_address", "str", None),
    "--ray-workers": ("ray_workers", "int", (1, None)),
    "--ray-cpus-per-worker": ("ray_cpus_per_worker", "int", (1, None)),
    "--ray-num-gpus": ("ray_num_gpus", "float", (0, False)),
    "--ray-batch-size": ("ray_batch_size", "int", (1, None)),
}
# what click passes for an option not given (the options' defaults)
_DEFAULTS: dict[str, Any] = {
    "backend": "local", "endpoint": None, "model": None, "base_url": None, "concurrency": 8,
    "batch_size": 1, "rpm": None, "tpm": None, "timeout": 120.0, "max_retries": 5,
    "store": None, "replay": False, "price_prompt": None, "price_completion": None,
    "dry_run": False, "engine": "local", "ray_address": None, "ray_workers": 2,
    "ray_cpus_per_worker": 1, "ray_num_gpus": 0.0, "ray_batch_size": 16,
}


def _value(kind: str, bounds: Any, text: str) -> tuple[bool, Any]:
    """``(understood, value)`` of one option's text, as click would convert it."""
    if kind in ("str", "in", "out"):
        return True, text
    if kind == "choice":
        return text in bounds, text
    if kind == "int":
        if not _PLAIN_INT.fullmatch(text):
            return False, None
        number = int(text)
        lo, hi = bounds
        return number >= lo and (hi is None or number <= hi), number
    if not _PLAIN_FLOAT.fullmatch(text):  # float
        return False, None
    value = float(text)
    lo, lo_open = bounds
    return (value > lo if lo_open else value >= lo), value


def _file_ok(path: str) -> bool:
    """What click.Path(dir_okay=False) accepts without a message: a path that does not exist,
    or a readable file that is not a folder."""
    if not path or path == "-":
        return False
    try:
        st = os.stat(path)
    except OSError:
        return True
    return not stat.S_ISDIR(st.st_mode) and os.access(path, os.R_OK)


def generate_args(argv: list[str]) -> tuple[str, str, dict[str, Any]] | None:
    """``(requests_path, out_path, options)`` for a ``generate`` command line this module
    fully understands; None for any other (click parses it)."""
    if not argv or argv[0] != "generate":
        return None
    given: dict[str, Any] = {}
    positional: list[str] = []
    inputs: list[tuple[str, str]] = []
    tokens = argv[1:]
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("-"):
            positional.append(token)
            continue
        flag, eq, text = token.partition("=")
        spec = _OPTIONS.get(flag)
        if spec is None:
            return None  # help, short flags, "--", "-", anything unknown: click's
        name, kind, bounds = spec
        if name in given:
            return None  # given twice (or under two names): click's rule, click's message
        if kind == "flag":
            if eq:
                return None
            given[name] = True
            continue
        if not eq:
            if i >= len(tokens):
                return None
            text = tokens[i]
            i += 1
        if text.startswith("-"):
            return None
        understood, value = _value(kind, bounds, text)
        if not understood or (kind in ("in", "out") and not _file_ok(text)):
            return None
        given[name] = value
        if kind == "in":
            inputs.append((flag, text))
    if len(positional) != 1 or "out_path" not in given or not _file_ok(positional[0]):
        return None
    out_path = given.pop("out_path")
    from ragmeter.io import check_output

    try:  # an output that is one of the inputs: click's parse says so, with its label
        check_output(out_path, [("REQUESTS", positional[0], None),
                                *[(label, path, None) for label, path in inputs]],
                     label="--out")
    except Exception:  # noqa: BLE001 (click's parse gives the message)
        return None
    return positional[0], out_path, {**_DEFAULTS, **given}
