"""Small HTML building blocks for the report: escaping, cells, tables, figures, and a generic
renderer that turns any result document (nested dicts and lists) into tables.

Every string that comes from data, a model or a file goes through :func:`esc`
(``html.escape(..., quote=True)``); building blocks take plain values and escape them, and only
return markup they built themselves.  Nothing here executes or links anything.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ragmeter.reports.plain import number

__all__ = ["esc", "number", "cell", "table", "kv_table", "figure", "png_figure", "generic", "note",
           "is_scalar", "Markup"]


class Markup(str):
    """A string of markup this module built (already escaped); never wraps data."""


def esc(value: Any) -> str:
    """Text made safe for HTML content and attribute values."""
    return html.escape("" if value is None else str(value), quote=True)


def is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _is_interval(value: Any) -> bool:
    return (isinstance(value, (list, tuple)) and len(value) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value))


def cell(value: Any, digits: int = 4) -> Markup:
    """One table cell's content (escaped): numbers formatted, intervals as [lo, hi]."""
    if isinstance(value, Markup):
        return value
    if _is_interval(value):
        d = digits if digits > 4 else min(digits, 3)
        return Markup(f'<span class="ci">[{esc(number(float(value[0]), d))}, '
                      f'{esc(number(float(value[1]), d))}]</span>')
    if is_scalar(value):
        return Markup(esc(number(value, digits)))
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > 160:
        text = text[:157] + "..."
    return Markup(f'<code>{esc(text)}</code>')


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, caption: str | None = None,
          cls: str = "", numeric_from: int = 1,
          row_classes: Sequence[str] | None = None) -> Markup:
    """A table; ``headers`` are escaped text, cells go through :func:`cell`."""
    out = [f'<table class="{esc(cls)}">' if cls else "<table>"]
    if caption:
        out.append(f"<caption>{esc(caption)}</caption>")
    out.append("<thead><tr>" + "".join(
        f'<th{" class=num" if i >= numeric_from else ""}>{esc(h)}</th>'
        for i, h in enumerate(headers)) + "</tr></thead><tbody>")
    for r, row in enumerate(rows):
        rc = row_classes[r] if row_classes and r < len(row_classes) else ""
        out.append(f'<tr class="{esc(rc)}">' if rc else "<tr>")
        for i, value in enumerate(row):
            klass = ' class="num"' if i >= numeric_from else ""
            out.append(f"<td{klass}>{cell(value)}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return Markup("".join(out))


def kv_table(pairs: Sequence[tuple[str, Any]], *, cls: str = "kv") -> Markup:
    """A two-column table of (name, value)."""
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{cell(v)}</td></tr>" for k, v in pairs)
    return Markup(f'<table class="{esc(cls)}"><tbody>{rows}</tbody></table>')


def note(text: str, cls: str = "note") -> Markup:
    return Markup(f'<p class="{esc(cls)}">{esc(text)}</p>')


def png_figure(png: bytes | None, alt: str, caption: str | None = None) -> Markup:
    """An inline PNG (data: URI) in a figure; empty markup for None."""
    if not png:
        return Markup("")
    data = base64.b64encode(png).decode("ascii")
    cap = f"<figcaption>{esc(caption)}</figcaption>" if caption else ""
    return Markup(f'<figure><img class="plot" alt="{esc(alt)}" '
                  f'src="data:image/png;base64,{data}">{cap}</figure>')


def figure(draw: Callable[[], bytes | None], alt: str, caption: str | None = None) -> Markup:
    """Draw a plot; without matplotlib, a one-line note saying how to get plots."""
    from ragmeter.errors import MissingDependencyError

    try:
        png = draw()
    except MissingDependencyError as err:
        return note(f"plot '{alt}' not drawn: {err}")
    return png_figure(png, alt, caption)


# ------------------------------------------------------------------ generic rendering

_SKIP = {"schema_version", "family", "signature", "coverage", "notes"}


def _columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    cols: list[str] = []
    for r in rows:
        for k, v in r.items():
            if k not in cols and (is_scalar(v) or _is_interval(v) or isinstance(v, Mapping)
                                  or isinstance(v, list)):
                cols.append(k)
    return cols


def _dict_of_dicts(name: str, value: Mapping[str, Mapping[str, Any]], depth: int) -> Markup:
    rows = list(value.values())
    cols = [c for c in _columns(rows)
            if all(is_scalar(r.get(c)) or _is_interval(r.get(c)) for r in rows)]
    nested = [c for c in _columns(rows) if c not in cols]
    parts: list[str] = [table([name, *cols],
                              [[k, *[r.get(c) for c in cols]] for k, r in value.items()])]
    for c in nested:
        sub = {k: r[c] for k, r in value.items() if c in r}
        parts.append(f"<details><summary>{esc(name)} · {esc(c)}</summary>"
                     f"{generic(sub, depth + 1)}</details>")
    return Markup("".join(parts))


def generic(doc: Any, depth: int = 0) -> Markup:
    """Any JSON-like result as tables: scalars in a name/value table; a dict of dicts as one
    table (keys as rows); a list of dicts as one table; deeper structures recursively, and
    beyond four levels as escaped JSON."""
    if depth > 4:
        text = json.dumps(doc, ensure_ascii=False, indent=1, default=str)
        return Markup(f"<pre>{esc(text[:4000])}</pre>")
    if isinstance(doc, Mapping):
        top = [(k, v) for k, v in doc.items()
               if (depth or k not in _SKIP) and (is_scalar(v) or _is_interval(v))]
        parts: list[str] = [kv_table(top)] if top else []
        for k, v in doc.items():
            if (not depth and k in _SKIP) or is_scalar(v) or _is_interval(v):
                continue
            tag = "h4" if depth == 0 else "h5"
            parts.append(f"<{tag}>{esc(k)}</{tag}>")
            if isinstance(v, Mapping) and v and all(isinstance(x, Mapping) for x in v.values()):
                parts.append(_dict_of_dicts(str(k), v, depth))
            else:
                parts.append(generic(v, depth + 1))
        return Markup("".join(parts))
    if isinstance(doc, list):
        if doc and all(isinstance(x, Mapping) for x in doc):
            cols = _columns(doc)
            return table(cols, [[r.get(c) for c in cols] for r in doc], numeric_from=1)
        if all(is_scalar(x) for x in doc):
            return Markup(f"<p>{esc(', '.join(number(x) for x in doc))}</p>")
        return Markup("".join(generic(x, depth + 1) for x in doc))
    return Markup(f"<p>{cell(doc)}</p>")
