"""The console and the small helpers every family's console tables share (a family's own tables
live in its ``_report.py``; the multilingual table is plain text, :mod:`ragmeter.reports.plain`,
so that ``multilingual score`` never imports rich)."""

from __future__ import annotations

from typing import Any

from ragmeter._util._console import console

__all__ = ["console", "coverage_line", "fmt"]


def fmt(value: Any, digits: int = 4) -> str:
    """A number for a table cell; '—' for a missing value (the HTML report's formatting)."""
    from ragmeter.reports.plain import number

    return number(value, digits)


def coverage_line(cov: dict[str, Any], unit: str = "rows") -> str:
    """``coverage: 398/400 rows scored (unscored: missing_prediction 2)``."""
    line = f"coverage: {cov['scored']}/{cov['rows']} {unit} scored"
    if cov["unscored"]:
        line += " (unscored: " + ", ".join(f"{k} {v}" for k, v in cov["reasons"].items()) + ")"
    return line
