"""Console output shared by every family for ``--repeats`` (judge stability), ``--by``
(groups) and the spend of a run (tokens and money from the endpoint's usage)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from ragmeter._verb._groups import flat_metrics
from ragmeter.reports.console import console, fmt

__all__ = ["stability_lines", "print_group_table", "print_extras"]


def _pct(value: Any) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _stability_line(label: str, st: Mapping[str, Any]) -> str:
    head = f"stability{f' [{label}]' if label else ''} over {st['repeats']} repeats"
    if st.get("deterministic"):
        return f"{head}: {st.get('note', 'deterministic judge: repeats identical')}"
    kappa = st.get("fleiss_kappa")
    line = (f"{head} ({st.get('items')} items): flip rate {_pct(st.get('flip_rate'))}, mean "
            f"agreement {_pct(st.get('mean_agreement'))}, Fleiss' kappa "
            f"{'—' if kappa is None else f'{kappa:.3f}'} ({st.get('fleiss_items')} items "
            "with every repeat scored)")
    per = st.get("rate_per_repeat")
    if per:
        line += "; rate per repeat " + ", ".join(_pct(v) for v in per)
    return line


def stability_lines(stability: Any) -> list[str]:
    """One line per stability block: a single ``{"repeats", ...}`` or ``{name: block}``."""
    if not isinstance(stability, Mapping):
        return []
    if "repeats" in stability:
        return [_stability_line("", stability)]
    return [_stability_line(str(k), v) for k, v in stability.items()
            if isinstance(v, Mapping) and "repeats" in v]


def _usd(value: Any) -> str:
    return "—" if value is None else f"${value:.6f}"


def print_group_table(groups: Mapping[str, Any], con: Console | None = None) -> None:
    """``--by``: one row per group with its metrics [95% CI], coverage and spend."""
    con = con or console()
    values: Mapping[str, Any] = groups.get("values") or {}
    flats = {k: flat_metrics(v) for k, v in values.items()}
    keys: list[str] = []
    for metrics, _ in flats.values():
        keys += [k for k in metrics if k not in keys]
    has_spend = any("spend" in v for v in values.values())
    table = Table(title=f"By {groups.get('by')}", title_justify="left")
    cols = ["group", *keys, "coverage"] + (["calls", "tokens (in+out)", "cost"]
                                           if has_spend else [])
    for c in cols:
        table.add_column(c, justify="left" if c == "group" else "right")
    for name, part in values.items():
        metrics, cis = flats[name]
        cells = []
        for k in keys:
            cell = fmt(metrics.get(k))
            ci = cis.get(k)
            if isinstance(ci, (list, tuple)) and len(ci) == 2 and None not in ci:
                cell += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
            cells.append(cell)
        cov = part.get("coverage") or {}
        rows = cov.get("rows", cov.get("total", "?"))
        cells.append(f"{cov.get('scored', '?')}/{rows}")
        if has_spend:
            sp = part.get("spend") or {}
            cached = (sp.get("cached") or {}).get("calls") or 0
            cells += [f"{sp.get('calls', 0)}" + (f" (+{cached} cached)" if cached else ""),
                      f"{sp.get('prompt_tokens', 0)}+{sp.get('completion_tokens', 0)}",
                      _usd(sp.get("cost_usd"))]
        table.add_row(name or "(empty)", *cells)
    con.print(table)


def print_extras(summary: Mapping[str, Any], con: Console | None = None) -> None:
    """Stability, groups and spend of a summary, when it has them."""
    from ragmeter.judges._spend import spend_line

    con = con or console()
    for line in stability_lines(summary.get("stability")):
        con.print(line)
    groups = summary.get("groups")
    if isinstance(groups, Mapping) and "values" in groups:
        print_group_table(groups, con)
    elif isinstance(groups, list):  # rubric: a list of rows keyed by the --by columns
        by = list(summary.get("by") or [])
        for g in groups:
            if isinstance(g, Mapping) and isinstance(g.get("spend"), Mapping) and by:
                label = " ".join(str(g.get(c)) for c in by)
                con.print(f"[{label}] " + spend_line(g["spend"]))
    if isinstance(summary.get("spend"), Mapping):
        con.print(spend_line(summary["spend"]))
