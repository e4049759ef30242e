"""Box tables in plain text, drawn like rich's default table (heavy head), without importing
rich: ``ragmeter multilingual score`` prints its table through this, so that a small file
is scored in well under 0.3 s (issue 14: importing rich alone took 40 ms of it).

No markup is ever parsed (user data prints as written); wide characters (CJK) count two
columns.  Tables wider than the terminal are not squeezed: lines run on, as ``cat`` would.
"""

from __future__ import annotations

import math
import sys
import unicodedata
from collections.abc import Sequence
from typing import Any, TextIO

__all__ = ["box_table", "number", "text_width", "write_lines"]


def number(value: Any, digits: int = 4) -> str:
    """A number as table text: floats to ``digits`` decimals, '—' for None or non-finite."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return "—"
        if value != 0 and abs(value) < 10 ** -digits:
            return f"{value:.2e}"
        return f"{value:.{digits}f}"
    return str(value)


def text_width(text: str) -> int:
    """Columns ``text`` takes in a terminal: East Asian wide and full-width characters count
    two, combining marks none."""
    width = 0
    for ch in text:
        if ch.isascii():
            width += 1
        elif unicodedata.combining(ch):
            continue
        else:
            width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def _pad(text: str, width: int, justify: str) -> str:
    gap = width - text_width(text)
    return (" " * gap + text) if justify == "right" else (text + " " * gap)


def box_table(title: str | None, columns: Sequence[tuple[str, str]],
              rows: Sequence[Sequence[str]]) -> str:
    """The table as text.  ``columns``: ``(header, justify)`` with justify ``left`` or
    ``right``; a cell may hold several lines (``\\n``)."""
    cells = [[str(c).split("\n") for c in row] for row in rows]
    widths = [text_width(h) for h, _ in columns]
    for row in cells:
        for k, lines in enumerate(row):
            widths[k] = max(widths[k], *(text_width(line) for line in lines))
    justify = [j for _, j in columns]

    def rule(left: str, mid: str, right: str, fill: str) -> str:
        return left + mid.join(fill * (w + 2) for w in widths) + right

    def line(values: Sequence[str], sep: str) -> str:
        parts = [f" {_pad(v, w, j)} " for v, w, j in zip(values, widths, justify, strict=True)]
        return sep + sep.join(parts) + sep

    out = [title] if title else []
    out.append(rule("┏", "┳", "┓", "━"))
    out.append(line([h for h, _ in columns], "┃"))
    out.append(rule("┡", "╇", "┩", "━"))
    for row in cells:
        height = max((len(lines) for lines in row), default=1)
        for i in range(height):
            out.append(line([lines[i] if i < len(lines) else "" for lines in row], "│"))
    out.append(rule("└", "┴", "┘", "─"))
    return "\n".join(out)


def write_lines(*lines: str, stream: TextIO | None = None) -> None:
    """Print ``lines`` to stdout (or ``stream``); characters the stream's encoding cannot
    show are replaced rather than raising."""
    stream = stream or sys.stdout
    text = "\n".join(lines) + "\n"
    try:
        stream.write(text)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "ascii"
        stream.write(text.encode(encoding, "replace").decode(encoding))
    stream.flush()
