"""Reading the file of a fitted judge (its coefficients and provenance, JSON): the one a
package ships, or a user's from a ``fit`` command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ragmeter._util._package import package_file
from ragmeter.errors import InputError

__all__ = ["read_fitted_file"]


def read_fitted_file(path: str | Path | None, *, package: str, shipped: str, file_format: str,
                     component: str, what: str, fix: str, missing_fix: str
                     ) -> tuple[dict[str, Any], Path | str]:
    """``(content, where)`` of a fitted judge's JSON file: a user's ``path``, or (None) the
    file ``data/<shipped>`` of ``package``.  An :class:`InputError` naming the file when it is
    missing (``missing_fix``), not JSON or its ``format`` is not ``file_format`` ("is not
    ``what``", ``fix``)."""
    if path is None:
        text = package_file(package, "data", shipped).read_text(encoding="utf-8")
        where: Path | str = f"{package.replace('.', '/')}/data/{shipped}"
    else:
        p = Path(path)
        if not p.is_file():
            raise InputError("does not exist.", component=component, path=p,
                             fix=missing_fix)
        text = p.read_text(encoding="utf-8")
        where = p

    def bad(problem: str) -> InputError:
        return InputError(f"is not {what} ({problem}).", component=component, path=where,
                          fix=fix)

    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise bad(f"not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(raw, dict) or raw.get("format") != file_format:
        raise bad(f"\"format\" is not {file_format!r}")
    return raw, where
