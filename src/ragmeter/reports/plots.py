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

__all__ = ["reliability_matrix_png", "require_matplotlib"]

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
