"""Plots as PNG bytes (matplotlib, the ``plots`` extra), ready to write or embed in HTML.

matplotlib is imported inside each function and drawn with the Agg canvas directly (no pyplot,
no global backend switch), so ``import ragmeter.reports.plots`` stays light and works headless.
Plots read results (their JSON documents) only; they never compute a metric.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from ragmeter.errors import MissingDependencyError

__all__ = ["reliability_matrix_png", "require_matplotlib", "bars_png", "lines_png",
           "stacked_share_png"]

_INSTALL = "pip install 'ragmeter[plots]'"
_LOW_MARK = "▲"
_MISSING_COLOUR = (0.88, 0.88, 0.88, 1.0)


def require_matplotlib() -> Any:
    """The matplotlib module; MissingDependencyError with the pip line when it is absent."""
    try:
        import matplotlib
    except ImportError:
        raise MissingDependencyError("matplotlib", _INSTALL, "needed for PNG plots") from None
    return matplotlib


def _text_colour(rgba: tuple[float, ...]) -> str:
    r, g, b = rgba[:3]
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def reliability_matrix_png(result: Any, *, dpi: int = 120) -> bytes:
    """The reliability matrix of a reliability result (or its ``to_json()`` document).

    One row per evaluator in the result's order (best reliability first); columns reliability
    (with its Wilson 95% interval), flag mismatch % and total items.  Each column has its own
    colour scale: reliability red→green over [0, 1]; flag mismatch green→red over [0, max];
    total items white→blue over [0, max].  Missing values are grey with "—"; evaluators with
    fewer applicable items than ``min_applicable`` are marked ▲ and their reliability cell is
    hatched.
    """
    require_matplotlib()
    from matplotlib import colormaps
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    doc: Mapping[str, Any] = result if isinstance(result, Mapping) else result.to_json()
    evaluators: Mapping[str, Mapping[str, Any]] = doc["evaluators"]
    names = list(evaluators)
    columns = ("reliability", "flag mismatch %", "total items")
    max_mismatch = max([10.0] + [e["flag_mismatch_pct"] or 0.0 for e in evaluators.values()])
    max_total = max([1] + [e["total_items"] for e in evaluators.values()])
    scales = (
        (colormaps["RdYlGn"], 0.0, 1.0),
        (colormaps["RdYlGn_r"], 0.0, max_mismatch),
        (colormaps["Blues"], 0.0, max_total * 1.15),
    )

    n_rows = max(1, len(names))
    fig = Figure(figsize=(7.2, 1.5 + 0.42 * n_rows), dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0.26, 0.14, 0.72, 0.70))
    ax.set_xlim(0, len(columns))
    ax.set_ylim(n_rows, 0)
    for row, name in enumerate(names):
        e = evaluators[name]
        values = (e["reliability"], e["flag_mismatch_pct"], e["total_items"])
        for col, value in enumerate(values):
            cmap, lo, hi = scales[col]
            colour = _MISSING_COLOUR if value is None else cmap((value - lo) / (hi - lo or 1.0))
            hatch = "//" if col == 0 and e["low_sample"] else None
            ax.add_patch(Rectangle((col, row), 1, 1, facecolor=colour, edgecolor="white",
                                   linewidth=2, hatch=hatch))
            if value is None:
                label = "—"
            elif col == 0:
                ci = e.get("reliability_ci95")
                label = f"{value:.2f}" + (f"  [{ci[0]:.2f}–{ci[1]:.2f}]" if ci else "")
                if e["low_sample"]:
                    label += f" {_LOW_MARK}"
            elif col == 1:
                label = f"{value:.1f}%"
            else:
                label = f"{value}"
            # On a hatched cell the label sits on a plain patch of the cell's colour.
            box = (dict(boxstyle="round,pad=0.25", facecolor=colour, edgecolor="none")
                   if hatch else None)
            ax.text(col + 0.5, row + 0.5, label, ha="center", va="center", fontsize=9,
                    color=_text_colour(tuple(colour)), bbox=box)
    ax.set_xticks([c + 0.5 for c in range(len(columns))], columns)
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    ylabels = [f"{n} {_LOW_MARK}" if evaluators[n]["low_sample"] else n for n in names]
    ax.set_yticks([r + 0.5 for r in range(len(names))], ylabels)
    for spine in ax.spines.values():
        spine.set_visible(False)
    overall = doc.get("overall_reliability")
    title = f"Annotator reliability against QC ({', '.join(doc.get('qc', []))})"
    if overall is not None:
        title += f" — pooled {overall:.3f}"
    fig.suptitle(title, fontsize=10, x=0.02, ha="left")
    if any(e["low_sample"] for e in evaluators.values()):
        fig.text(0.02, 0.03, f"{_LOW_MARK} hatched: fewer than {doc.get('min_applicable')} "
                 "applicable items; the reliability means little.", fontsize=8)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


# ------------------------------------------------------------------ generic report plots
# Used by reports/html.py.  Each takes values already stored in a run record (no metric is
# computed here) and returns PNG bytes, or None when there is nothing to draw.

_PALETTE = ("#3b6ea8", "#e08a2c", "#4a9a5b", "#c0504d", "#8064a2", "#4bacc6", "#9c7a3c",
            "#7f7f7f")


def _figure(width: float, height: float) -> tuple[Any, Any]:
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot(1, 1, 1)


def _png(fig: Any, dpi: int) -> bytes:
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def bars_png(title: str, labels: list[str], series: Mapping[str, list[float | None]], *,
             ci: Mapping[str, list[Any]] | None = None, ylabel: str = "",
             ylim: tuple[float, float] | None = None, dpi: int = 100) -> bytes | None:
    """Grouped bars: one group per label, one bar per series; optional 95% CI whiskers.

    ``ci[name][i]`` is ``[low, high]`` or None.  Missing values (None) leave a gap marked "—".
    """
    if not labels or not series or all(v is None for vs in series.values() for v in vs):
        return None
    fig, ax = _figure(max(4.2, 0.9 + 0.75 * len(labels) * max(1, len(series)) ** 0.6), 3.2)
    width = 0.8 / len(series)
    for k, (name, values) in enumerate(series.items()):
        xs = [i - 0.4 + width * (k + 0.5) for i in range(len(labels))]
        heights = [0.0 if v is None else v for v in values]
        colour = _PALETTE[k % len(_PALETTE)]
        ax.bar(xs, heights, width=width * 0.92, color=colour, label=name)
        intervals = (ci or {}).get(name) or []
        for x, v, iv in zip(xs, values, intervals, strict=False):
            if v is not None and iv:
                ax.errorbar([x], [v], yerr=[[max(0.0, v - iv[0])], [max(0.0, iv[1] - v)]],
                            color="black", capsize=3, linewidth=1)
        for x, v in zip(xs, values, strict=False):
            if v is None:
                ax.text(x, 0, "—", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(labels)), labels, rotation=20 if len(labels) > 5 else 0,
                  ha="right" if len(labels) > 5 else "center", fontsize=8)
    ax.set_ylabel(ylabel)
    if ylim:
        ax.set_ylim(*ylim)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.axhline(0, color="black", linewidth=0.6)
    if len(series) > 1:
        ax.legend(fontsize=7)
    return _png(fig, dpi)


def lines_png(title: str, series: Mapping[str, list[tuple[float, float]]], *, xlabel: str,
              ylabel: str, ylim: tuple[float, float] | None = None,
              dpi: int = 100) -> bytes | None:
    """One line with markers per series of (x, y) points (e.g. RGB accuracy vs noise rate)."""
    series = {k: sorted(v) for k, v in series.items() if v}
    if not series:
        return None
    fig, ax = _figure(5.6, 3.5)
    for k, (name, pts) in enumerate(series.items()):
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name,
                color=_PALETTE[k % len(_PALETTE)])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if ylim:
        ax.set_ylim(*ylim)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return _png(fig, dpi)


def stacked_share_png(title: str, labels: list[str], categories: list[str],
                      counts: Mapping[str, Mapping[str, int]], *, dpi: int = 100
                      ) -> bytes | None:
    """Horizontal 100% stacked bars: for each label, the share of each category (e.g. the
    rubric grade distribution, grades 5..0 per group).  ``counts[label][category]``."""
    totals = {lab: sum(counts.get(lab, {}).get(c, 0) for c in categories) for lab in labels}
    if not labels or not any(totals.values()):
        return None
    from matplotlib import colormaps

    fig, ax = _figure(6.4, 1.2 + 0.38 * len(labels))
    cmap = colormaps["RdYlGn"]
    left = [0.0] * len(labels)
    for j, cat in enumerate(categories):
        shares = [100.0 * counts.get(lab, {}).get(cat, 0) / (totals[lab] or 1) for lab in labels]
        colour = cmap(1.0 - j / max(1, len(categories) - 1))
        ax.barh(range(len(labels)), shares, left=left, color=colour, label=cat,
                edgecolor="white", linewidth=0.5)
        for i, s in enumerate(shares):
            if s >= 7:
                ax.text(left[i] + s / 2, i, f"{s:.0f}%", ha="center", va="center", fontsize=7,
                        color=_text_colour(tuple(colour)))
        left = [a + b for a, b in zip(left, shares, strict=True)]
    ax.set_yticks(range(len(labels)), [f"{lab} (n={totals[lab]})" for lab in labels],
                  fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of graded items (%)")
    ax.set_title(title, fontsize=10)
    # beside the bars: below them it ran into the axis label when there were few groups
    ax.legend(title="grade", fontsize=7, title_fontsize=7, loc="center left",
              bbox_to_anchor=(1.01, 0.5), frameon=False)
    return _png(fig, dpi)
