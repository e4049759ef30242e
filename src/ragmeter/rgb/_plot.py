"""Accuracy against noise rate (the paper's Figure 3 shape), from a run's tables only."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from ragmeter.reports.plots import require_matplotlib

__all__ = ["accuracy_series", "accuracy_vs_noise_png"]


def accuracy_series(tables: Mapping[str, Any], prefix: str = ""
                    ) -> dict[str, list[tuple[float, float]]]:
    """Accuracy (%) by noise rate, one series per data file of the noise robustness and
    integration tables (``<prefix><data>`` and ``<prefix><data> (integration)``), in the
    tables' order."""
    series: dict[str, list[tuple[float, float]]] = {}
    for table, suffix in (("noise_robustness", ""), ("integration", " (integration)")):
        for ds, row in (tables.get(table) or {}).items():
            pts = [(float(r), 100.0 * v) for r, v in row.items() if v is not None]
            if pts:
                series[prefix + ds + suffix] = pts
    return series


def accuracy_vs_noise_png(tables: Mapping[str, Any], *, dpi: int = 120) -> bytes | None:
    """PNG bytes of accuracy (%) against noise rate, one line per data file (noise robustness
    and integration); None when there is nothing to draw.  Needs matplotlib (``plots``)."""
    series = {name: sorted(pts) for name, pts in accuracy_series(tables).items()}
    if not series:
        return None
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.6))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for name, pts in series.items():
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    ax.set_xlabel("noise rate")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(-2, 102)
    ax.set_title("RGB: accuracy vs noise rate")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()
