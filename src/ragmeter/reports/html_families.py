"""Per-family sections of the HTML report, in the layouts of the original projects.

Each section reads a family's ``to_json()`` document (a run record's ``result``) and shows the
tables and plots of the original; it never computes a metric, it formats stored values.  Every
family now keeps its section in ``<family>/_report.py`` (LBRAG's systems table, reliability's
annotator matrix, RGB's tables by noise rate, TRACe's metrics and validation statistics,
rubric's RAGaliq results table), found through :mod:`ragmeter._families`; :data:`SECTIONS`,
:data:`PAIRED_UNITS` (the per-item values a comparison of several runs pairs on) and
:data:`COMPARISON_PLOTS` are the fallbacks for a family not yet moved (none today).  The
helpers here (CI cells, fixed decimals, notes, :func:`collect_units`) are what those sections
share.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ragmeter.reports._html import Markup, cell, esc, note

__all__ = ["SECTIONS", "PAIRED_UNITS", "COMPARISON_PLOTS", "section_of", "paired_units_of",
           "comparison_plot_of", "collect_units"]


def with_ci(value: Any, interval: Any, digits: int = 4) -> Markup:
    out = str(cell(value, digits))
    if interval:
        out += "<br>" + str(cell(interval, digits))
    return Markup(out)


def fixed(value: Any, digits: int) -> Any:
    """A float shown with ``digits`` decimals (None stays None: '—')."""
    if isinstance(value, float):
        return Markup(esc(f"{value:.{digits}f}"))
    return value


def notes_html(doc: Mapping[str, Any]) -> str:
    return "".join(note(f"note: {n}") for n in doc.get("notes") or [])


SECTIONS: dict[str, Callable[[Mapping[str, Any]], Markup]] = {}

COMPARISON_PLOTS: dict[str, Callable[[Sequence[Any]], Markup]] = {}


# ------------------------------------------------------------------ paired units

Units = dict[tuple[str, str], dict[str, float]]


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return float(v)
    return float(v) if isinstance(v, (int, float)) and v == v else None


def collect_units(items: Sequence[Mapping[str, Any]], group: Callable[[Mapping[str, Any]], str],
             key: Callable[[Mapping[str, Any]], str], metrics: Sequence[str],
             keep: Callable[[Mapping[str, Any]], bool] = lambda it: True) -> Units:
    out: Units = {}
    for it in items:
        if it.get("status", "ok") != "ok" or not keep(it):
            continue
        for m in metrics:
            v = _num(it.get(m))
            if v is not None:
                out.setdefault((group(it), m), {})[key(it)] = v
    return out


PAIRED_UNITS: dict[str, Callable[[Sequence[Mapping[str, Any]]], Units]] = {}


def section_of(family: str) -> Callable[[Mapping[str, Any]], Markup] | None:
    """A family's HTML section: its ``_report.section`` (ragmeter._families), else the one
    written here for a family not yet moved into its package."""
    from ragmeter._families import family_part

    found = family_part(family, "_report", "section")
    return found if found is not None else SECTIONS.get(family)


def paired_units_of(family: str) -> Callable[[Sequence[Mapping[str, Any]]], Units] | None:
    """The per-item values a comparison of several runs of ``family`` pairs on."""
    from ragmeter._families import family_part

    found = family_part(family, "_report", "paired_units")
    return found if found is not None else PAIRED_UNITS.get(family)


def comparison_plot_of(family: str) -> Callable[[Sequence[Any]], Markup] | None:
    """A family's plot over several runs (RGB's accuracy against noise rate), or None."""
    from ragmeter._families import family_part

    found = family_part(family, "_report", "comparison_plot")
    return found if found is not None else COMPARISON_PLOTS.get(family)
