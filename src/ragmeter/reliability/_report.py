"""How a reliability result is shown: the console table (rich), the HTML report's section (the
annotator matrix) and the per-item values a comparison of runs pairs on.  Reads stored results
only; never computes a metric."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.table import Table

from ragmeter.reports._html import Markup, figure, kv_table, table
from ragmeter.reports.console import console, fmt
from ragmeter.reports.html_families import Units, collect_units, fixed, notes_html, with_ci

__all__ = ["print_reliability", "section", "paired_units", "LOW_SAMPLE_MARK"]

LOW_SAMPLE_MARK = "▲"  # beside a reliability computed on too few applicable items


def _as_json(result: Any) -> Mapping[str, Any]:
    return result if isinstance(result, Mapping) else result.to_json()


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}%"


def print_reliability(result: Any) -> None:
    """One row per evaluator, sorted by reliability (best first), total items beside it."""
    doc = _as_json(result)
    con = console()
    qc = ", ".join(doc["qc"])
    table = Table(title=f"Annotator reliability against QC ({qc})", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 0, 0, 1))
    table.add_column("evaluator", no_wrap=True)
    for head in ("reliability", "95% CI", "total", "matches", "flag≠", "κ", "excluded"):
        table.add_column(head, justify="right", no_wrap=True)
    for name, n in doc["evaluators"].items():
        r = n["reliability"]
        ci = n.get("reliability_ci95")
        mark = f" {LOW_SAMPLE_MARK}" if n["low_sample"] else ""
        table.add_row(name, ("—" if r is None else f"{r:.3f}") + mark,
                      "—" if not ci else f"{ci[0]:.2f}–{ci[1]:.2f}",
                      fmt(n["total_items"]), f"{n['matches']}/{n['applicable_items']}",
                      _pct(n["flag_mismatch_pct"]), fmt(n["cohen_kappa"], 3),
                      f"{n['skipped_items']} / {n['not_in_qc_items']} / "
                      f"{n['qc_no_consensus_items']}",
                      style="yellow" if n["low_sample"] else None)
    con.print(table)
    con.print("total: items both annotated (skipped and no-majority items excluded); matches: "
              "matches/applicable (both not flagged); flag≠: flag mismatch %; κ: Cohen's "
              "kappa on applicable items; 95% CI: Wilson; excluded: skipped / not in QC / "
              "no QC majority.", style="dim")
    if any(n["low_sample"] for n in doc["evaluators"].values()):
        con.print(f"{LOW_SAMPLE_MARK} fewer than {doc['min_applicable']} applicable items: "
                  "the reliability means little.")
    con.print(f"overall reliability (pooled Σ matches / Σ applicable): "
              f"{fmt(doc['overall_reliability'], 3)}")
    con.print(f"mean of per-evaluator reliabilities (unweighted, "
              f"{doc['mean_evaluator_reliability_n']} evaluators): "
              f"{fmt(doc['mean_evaluator_reliability'], 3)}")
    con.print(f"QC flagged: {_pct(doc['qc_flagged_pct'])} of {doc['qc_items']} QC items"
              + (f"; QC skipped {doc['qc_skipped_items']}" if doc["qc_skipped_items"] else "")
              + (f"; no QC majority {doc['qc_no_consensus_items']}"
                 if doc["qc_no_consensus_items"] else ""))
    cov = doc["coverage"]
    line = (f"coverage: {cov['scored']}/{cov['total']} evaluator annotations compared with QC "
            f"({cov['rows']} rows read)")
    if cov["unscored"]:
        line += " (not compared: " + ", ".join(f"{k} {v}" for k, v in cov["reasons"].items())
        line += ")"
    con.print(line)
    for note in doc["notes"]:
        con.print(f"note: {note}")
    con.print(f"signature: {doc['signature']}", style="dim")


# ------------------------------------------------------------------ HTML


def section(doc: Mapping[str, Any]) -> Markup:
    """The annotator matrix: one row per evaluator, plus the embedded matrix plot."""
    from ragmeter.reports.plots import reliability_matrix_png

    ev: Mapping[str, Mapping[str, Any]] = doc["evaluators"]
    rows, klass = [], []
    for name, e in ev.items():
        rows.append([name + (" ▲" if e.get("low_sample") else ""),
                     with_ci(e.get("reliability"), e.get("reliability_ci95"), 3),
                     e.get("cohen_kappa"), fixed(e.get("flag_mismatch_pct"), 1),
                     e.get("matches"),
                     e.get("applicable_items"), e.get("total_items"), e.get("skipped_items")])
        klass.append("low" if e.get("low_sample") else "")
    parts = [table(["evaluator", "reliability [Wilson 95%]", "Cohen's κ", "flag mismatch %",
                    "matches", "applicable", "total items", "skipped"], rows,
                   row_classes=klass, cls="matrix",
                   caption=f"Annotators against QC ({', '.join(doc.get('qc') or [])}); ▲ fewer "
                           f"than {doc.get('min_applicable')} applicable items"),
             kv_table([("pooled reliability", doc.get("overall_reliability")),
                       ("mean evaluator reliability", doc.get("mean_evaluator_reliability")),
                       ("overall flag mismatch %",
                        fixed(doc.get("overall_flag_mismatch_pct"), 2)),
                       ("QC items", doc.get("qc_items")),
                       ("QC flagged items", doc.get("qc_flagged_items"))]),
             figure(lambda: reliability_matrix_png(doc), "annotator reliability matrix")]
    return Markup("".join(parts) + notes_html(doc))


def paired_units(items: Sequence[Mapping[str, Any]]) -> Units:
    """Per evaluator, the match of each applicable item (the unit two runs pair on)."""
    return collect_units(items, lambda it: str(it.get("evaluator")),
                         lambda it: str(it.get("item_id")), ("match",),
                         keep=lambda it: bool(it.get("applicable")))
