"""How a rubric result is shown: the console tables of ``rubric score/judge/run`` (RAGaliq's
results.md layout), ``rubric validate`` (agreement) and ``rubric build`` (critique ratings),
the HTML report's section (results table by group, judge stability, grade distribution) and
the per-item values a comparison of runs pairs on.  Reads stored results only; never computes
a metric: the columns are the family's ``METRICS``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.reports._html import Markup, figure, generic, kv_table, table
from ragmeter.reports.html_families import Units, collect_units, notes_html, with_ci
from ragmeter.rubric._metrics import AGREEMENT_COLUMNS, METRICS, RESULTS_COLUMNS

__all__ = ["print_table", "print_agreement", "print_build", "section", "paired_units"]

GRADE_ORDER = ("5", "4", "3", "2", "1", "0")  # RAGaliq's results.md order of the counts
# The console's compact headings of RAGaliq's columns (the HTML uses the metrics' labels).
_CONSOLE_HEADS = {"weighted_score": "weighted", "mean_grade": "mean", "median_grade": "median",
                  "percentage": "%", "percentage_with_zero": "%0"}


# ------------------------------------------------------------------ console


def _grouped_table(title: str, by: Sequence[str], width: int) -> tuple[Any, Any]:
    """The console (at least ``width`` wide) and a table with one column per ``by`` field."""
    from rich.table import Table

    from ragmeter.reports.console import console

    con = console()
    con.width = max(con.width, width)
    table_ = Table(title=title, title_justify="left")
    for col in by:
        table_.add_column(col)
    return con, table_


def print_table(result: Any, title: str) -> None:
    """RAGaliq's table of a :class:`~ragmeter.rubric._scorer.RubricResult`: one row per
    group, counts per grade, the extras when present, coverage, CIs and judge stability."""
    from ragmeter.reports.console import fmt

    con, table_ = _grouped_table(title, result.by, 120)
    for name in RESULTS_COLUMNS:
        table_.add_column(_CONSOLE_HEADS[name], justify="right")
    for g in GRADE_ORDER:
        table_.add_column(g, justify="right")
    extras = [METRICS.get(name) for name in ("expected_grade_mean", "language_consistency_mean")
              if any(name in r for r in result.groups)]
    for m in extras:
        table_.add_column(m.label, justify="right")
    table_.add_column("n", justify="right")
    for r in result.groups:
        cells = [str(r[c]) for c in result.by]
        cells += [fmt(r[name], METRICS.get(name).digits) for name in RESULTS_COLUMNS]
        cells += [str(r["counts"][g]) for g in GRADE_ORDER]
        cells += [fmt(r.get(m.name), m.digits) for m in extras]
        cells.append(f"{r['coverage']['scored']}/{r['coverage']['total']}")
        table_.add_row(*cells)
    con.print(table_)
    cov = result.coverage
    line = f"coverage: {cov['scored']}/{cov['total']} items graded"
    if cov["unscored"]:
        line += " (unscored: " + ", ".join(f"{k} {v}" for k, v in cov["reasons"].items()) + ")"
    con.print(line)
    for r in result.groups:
        ci = (r.get("ci95") or {}).get("weighted_score")
        if ci:
            label = " ".join(str(r[c]) for c in result.by) or "all"
            con.print(f"95% CI [{label}]: weighted_score [{ci[0]:.4f}, {ci[1]:.4f}]")
        st = r.get("stability")
        if st:
            label = " ".join(str(r[c]) for c in result.by) or "all"
            rng = st["weighted_score_range"]
            sci = st["weighted_score_all_repeats_ci95"]
            con.print(
                f"stability [{label}]: K={st['repeats']}, {st['items']} items; grade changed on "
                f"{fmt(st['changed_share'], 3)} of items; mean spread {fmt(st['mean_spread'], 3)}"
                f"; weighted_score per repeat {fmt(rng[0] if rng else None)}.."
                f"{fmt(rng[1] if rng else None)}; over all repeats "
                f"{fmt(st['weighted_score_all_repeats'])}"
                + (f" [{sci[0]:.4f}, {sci[1]:.4f}]" if sci else "")
                + f"; per-item agreement {fmt(st.get('mean_agreement'), 3)}, Fleiss' kappa "
                  f"{fmt(st.get('fleiss_kappa'), 3)} over {st.get('fleiss_items')} items")
    for note in result.notes:
        con.print(f"note: {note}")
    con.print(f"signature: {result.signature}", style="dim")


def print_agreement(result: Any, title: str) -> None:
    """Console table of ``rubric validate``: one row per group and one overall."""
    from ragmeter.reports.console import fmt

    con, table_ = _grouped_table(title, result.by, 140)
    for s in AGREEMENT_COLUMNS:
        table_.add_column(s, justify="right")
    table_.add_column("mean judge/ref", justify="right")
    table_.add_column("n", justify="right")

    def cells(row: dict[str, Any]) -> list[str]:
        out = []
        for s in AGREEMENT_COLUMNS:
            ci = (row.get("ci95") or {}).get(s)
            out.append(fmt(row[s], 3) + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""))
        out.append(f"{fmt(row['judge_mean'], 2)}/{fmt(row['reference_mean'], 2)}")
        out.append(str(row["n"]))
        return out

    if len(result.groups) > 1 or result.by:
        for r in result.groups:
            table_.add_row(*[str(r[c]) for c in result.by], *cells(r))
    table_.add_row(*(["all"] + [""] * (len(result.by) - 1) if result.by else []),
                   *cells(result.overall))
    con.print(table_)
    cov = result.coverage
    line = f"coverage: {cov['scored']}/{cov['total']} items paired with a grade on both sides"
    if cov["unscored"]:
        line += " (" + ", ".join(f"{k} {v}" for k, v in cov["reasons"].items()) + ")"
    con.print(line, markup=False)
    con.print(f"paired on {result.paired_on}; 95% bootstrap CIs in brackets; qwk: "
              "quadratic-weighted kappa over grades 0..5", markup=False)
    con.print(f"signature: {result.signature}", style="dim", markup=False)


def _ci(ci: Any) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""


def print_build(summary: Mapping[str, Any]) -> None:
    """Console output of ``rubric build``: the counts, the critique ratings per criterion,
    agreement with the original critic (``critique_only``), translation and notes."""
    from rich.markup import escape
    from rich.table import Table

    from ragmeter.reports.console import console, fmt

    con = console()
    con.width = max(con.width, 120)
    if summary.get("mode") == "critique_only":
        con.print(escape(f"re-rated {summary['questions']} questions with "
                         f"{summary['critic_model']}; {summary['kept']} pass the thresholds "
                         f"{summary['thresholds']}"))
    else:
        con.print(escape(
            f"{summary['chunks_sampled']} of {summary['chunks']} chunks -> "
            f"{summary['generated']} questions generated, {summary['duplicates']} duplicates, "
            f"{summary['critiqued']} critiqued, {summary['kept']} kept (thresholds "
            f"{summary['thresholds']})"))
    table_ = Table(title="Critique ratings", title_justify="left")
    for col in ("criterion", "1", "2", "3", "4", "5", "mean", "rated", "unscored"):
        table_.add_column(col, justify="left" if col == "criterion" else "right")
    mean_digits = METRICS.get("critique_mean").digits
    for name, c in summary["criteria"].items():
        cov = c["coverage"]
        reasons = ", ".join(f"{k} {v}" for k, v in cov["reasons"].items())
        table_.add_row(name, *(str(c["counts"][g]) for g in ("1", "2", "3", "4", "5")),
                       fmt(c["mean"], mean_digits), f"{cov['scored']}/{cov['total']}",
                       escape(reasons) or "0")
    con.print(table_)
    agree = summary.get("agreement") or {}
    if agree:
        t = Table(title="Agreement with the original critic (95% bootstrap CIs)",
                  title_justify="left")
        for col in ("criterion", "n", "QWK", "CI", "exact", "CI ", "MAE", "CI  ",
                    "mean ours", "mean original"):
            t.add_column(col, justify="left" if col == "criterion" else "right")
        for name, a in agree.items():
            t.add_row(name, f"{a['n']}/{a['with_reference']}", fmt(a["qwk"], 3),
                      _ci(a["qwk_ci"]), fmt(a["exact"], 3), _ci(a["exact_ci"]),
                      fmt(a["mae"], 3), _ci(a["mae_ci"]), fmt(a["mean_rater"], 2),
                      fmt(a["mean_reference"], 2))
        con.print(t)
    tr = summary.get("translation")
    if tr:
        for lang, s in tr["by_language"].items():
            texts = ", ".join(f"{k} {v}" for k, v in sorted(s["texts"].items()))
            line = f"{lang}: {s['questions']} questions; texts: {texts}"
            if "knowledge_base_lines" in s:
                line += "; knowledge base lines: " + ", ".join(
                    f"{k} {v}" for k, v in sorted(s["knowledge_base_lines"].items()))
            con.print(escape(line))
    for note in summary.get("notes", []):
        con.print(escape(f"note: {note}"))
    con.print(escape(f"signature: {summary['signature']}"), style="dim")


# ------------------------------------------------------------------ HTML


def _agreement_section(doc: Mapping[str, Any]) -> Markup:
    """``rubric validate``: the agreement statistics per group and overall, with CIs."""
    by: list[str] = list(doc.get("by") or [])
    columns = [METRICS.get(name) for name in AGREEMENT_COLUMNS]
    labelled = [(" / ".join(str(g.get(b)) for b in by), g) for g in doc.get("groups") or []] \
        if by else []
    labelled.append(("all", doc["overall"]))
    rows = [[label, *[with_ci(g.get(m.name), (g.get("ci95") or {}).get(m.name), m.digits)
                      for m in columns], g.get("judge_mean"), g.get("reference_mean"),
             g.get("n")] for label, g in labelled]
    cov = doc.get("coverage") or {}
    caption = (f"Agreement with reference grades, paired on {doc.get('paired_on')} "
               f"({cov.get('scored')}/{cov.get('total')} items with a grade on both sides; "
               "95% bootstrap CIs)")
    return Markup(str(table([" / ".join(by) or "group", *[m.label for m in columns],
                             "mean judge", "mean reference", "n"], rows, caption=caption))
                  + notes_html(doc))


def _build_section(doc: Mapping[str, Any]) -> Markup:
    """``rubric build``: what became of the candidates, and each criterion's ratings (with the
    agreement with the original critic after ``critique_only``)."""
    counts = [(k, doc.get(k)) for k in ("chunks", "chunks_sampled", "generated", "duplicates",
                                        "critiqued", "questions", "kept") if k in doc]
    criteria: Mapping[str, Any] = doc["criteria"]
    agreement: Mapping[str, Any] = doc.get("agreement") or {}
    columns = [METRICS.get(name) for name in ("qwk", "exact", "mae")] if agreement else []
    rows, klass = [], []
    for name, c in criteria.items():
        cov = c.get("coverage") or {}
        a = agreement.get(name) or {}
        rows.append([name, *[(c.get("counts") or {}).get(g) for g in ("1", "2", "3", "4", "5")],
                     c.get("mean"), f"{cov.get('scored')}/{cov.get('total')}",
                     *[with_ci(a.get(m.name), a.get(f"{m.name}_ci"), m.digits)
                       for m in columns]])
        klass.append("low" if c.get("degenerate") else "")
    crit = table(["criterion", "1", "2", "3", "4", "5", METRICS.get("critique_mean").label,
                  "rated", *[m.label for m in columns]], rows, row_classes=klass,
                 caption="Critique ratings" + (" and agreement with the original critic "
                                               "(95% bootstrap CIs)" if columns else ""))
    return Markup(str(kv_table(counts)) + str(crit) + notes_html(doc))


def section(doc: Mapping[str, Any]) -> Markup:
    """RAGaliq's results table, one row per group (e.g. language), and grade distributions;
    for ``validate`` the agreement table, for ``build`` the critique table."""
    from ragmeter.reports.plots import stacked_share_png

    if doc.get("command") == "validate":
        return _agreement_section(doc)
    if doc.get("verb") == "build":
        return _build_section(doc)

    by: list[str] = list(doc.get("by") or [])
    groups: list[Mapping[str, Any]] = doc["groups"]
    labels = [" / ".join(str(g.get(b)) for b in by) or "all" for g in groups]
    columns = [METRICS.get(name) for name in RESULTS_COLUMNS]
    rows = []
    for label, g in zip(labels, groups, strict=True):
        ci = g.get("ci95") or {}
        cov = g.get("coverage") or {}
        rows.append([label, g.get("n"),
                     *[with_ci(g.get(m.name), ci.get(m.name)) if m.ci != "none"
                       else g.get(m.name) for m in columns],
                     f"{cov.get('scored')}/{cov.get('total')}",
                     *[(g.get("counts") or {}).get(k) for k in GRADE_ORDER]])
    parts: list[str] = [table([" / ".join(by) or "group", "n", *[m.label for m in columns],
                               "scored", *[f"#{k}" for k in GRADE_ORDER]],
                              rows, caption="Rubric grades (RAGaliq results.md layout)")]
    stab = [(label, g["stability"]) for label, g in zip(labels, groups, strict=True)
            if g.get("stability")]
    if stab:
        parts.append("<h4>judge stability over repeats</h4>" + str(generic(dict(stab), 1)))
    counts = {label: {k: int((g.get("counts") or {}).get(k) or 0) for k in GRADE_ORDER}
              for label, g in zip(labels, groups, strict=True)}
    parts.append(figure(lambda: stacked_share_png("Grade distribution per group", labels,
                                                  list(GRADE_ORDER), counts),
                        "rubric grade distribution"))
    return Markup("".join(parts) + notes_html(doc))


_NOT_A_GROUP = ("id", "repeat", "status", "grade", "reason", "detail", "expected_grade")


def paired_units(items: Sequence[Mapping[str, Any]]) -> Units:
    """Per group (the item's other columns), the grade of each item on repeat 0 (the unit two
    runs pair on)."""
    return collect_units(
        items, lambda it: " / ".join(str(v) for k, v in it.items()
                                     if k not in _NOT_A_GROUP) or "all",
        lambda it: str(it.get("id")), ("grade",), keep=lambda it: not it.get("repeat"))
