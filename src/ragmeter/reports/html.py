"""One self-contained HTML report from stored run records (issue 8).

The page needs no network and no JavaScript: CSS is inline, plots are PNGs inlined as
``data:`` URIs, the drill-down uses ``<details>`` and a CSS-only status filter (radio buttons
and sibling selectors).  Everything from data, models or files is escaped
(:func:`ragmeter.reports._html.esc`), so a response containing ``<script>`` or ``onerror=``
renders as text.  The report reads records only: it never calls a model and never recomputes
a metric; the one statistic it computes is the paired permutation test of the comparison of
several runs (stats.paired_permutation on the per-item values stored in the records).

Layout, results first (issue 25): a table of every run's main number · per family: the
comparison of its runs when there are several, then per run its headline table (value, CI, n;
flagged numbers marked; a legend of the metrics, reports/html_headline.py), its section in the
original's layout with its plots (``<family>/_report.py``, or a generic rendering of any result
document for a family without one), judge cards and alarms, coverage, provenance and
signature, and the item drill-down (folded; unscored first) · at the end, every run's id,
command and signature.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ragmeter._version import __version__
from ragmeter.reports._html import Markup, cell, esc, generic, kv_table, note, number, table
from ragmeter.reports.html_headline import (
    FLAG_MARK,
    data_label,
    digits_of,
    headline_cell,
    headline_inline,
    headline_table,
    label_of,
    legend,
    main_rows,
    metrics_of,
    rows_of,
)
from ragmeter.runs._records import RunRecord

__all__ = ["render_report", "write_report", "render_run", "render_comparison", "REPORT_CSS",
           "MAX_ITEMS_SHOWN", "MAX_TEXT_CHARS", "run_label"]

MAX_ITEMS_SHOWN = 400  # per run; unscored first, the rest stay in the record file
MAX_TEXT_CHARS = 3000  # per field of an item
SIGNIFICANCE = 0.05
PERMUTATIONS = 2000
GLANCE_GROUPS = 3  # groups of a run's main metric in the first table (the rest in its section)  # resamples of the comparison's paired permutation test (seeded)

_CSS = """
:root{--fg:#1d232b;--muted:#5b6672;--line:#d9dee4;--bg:#fff;--soft:#f4f6f8;--accent:#2f5f98;
--bad:#a8322d;--badbg:#fbeceb;--good:#2e7d4f;--sig:#fff3c4}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg);margin:0}
main{max-width:1180px;margin:0 auto;padding:20px 28px 60px}
header.top{background:#1f3550;color:#fff;padding:18px 28px}
header.top h1{margin:0 0 4px;font-size:22px}
header.top p{margin:0;color:#cfd9e4}
nav.toc{font-size:13px;margin:10px 0 0}
nav.toc a{color:#fff;margin-right:14px}
h2{font-size:20px;border-bottom:2px solid var(--accent);padding-bottom:4px;margin-top:36px}
h3{font-size:16px;margin:26px 0 8px;color:var(--accent)}
h4{font-size:14px;margin:18px 0 6px}
h5{font-size:13px;margin:12px 0 4px;color:var(--muted)}
section.family>article{border:1px solid var(--line);border-radius:6px;padding:6px 18px 14px;
margin:16px 0;background:#fff}
table{border-collapse:collapse;margin:8px 0 14px;font-size:13px;max-width:100%}
caption{text-align:left;font-weight:600;padding:4px 0;color:var(--fg);white-space:nowrap}
th,td{border-bottom:1px solid var(--line);padding:4px 10px;vertical-align:top;text-align:left}
thead th{background:var(--soft);border-bottom:2px solid var(--line);white-space:nowrap}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
table.kv th{background:none;color:var(--muted);font-weight:500;white-space:nowrap}
table.kv td{word-break:break-all}
.ci{color:var(--muted);font-size:11px;white-space:nowrap}
tr.sig td,td.sig{background:var(--sig);font-weight:600}
tr.low td{color:var(--muted)}
.note{color:var(--muted);font-size:12.5px;margin:4px 0}
.warn{color:var(--bad);font-size:13px;margin:4px 0}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{white-space:pre-wrap;word-break:break-word;background:var(--soft);padding:6px 8px;
margin:2px 0;border-radius:4px;max-height:22em;overflow:auto}
.sigline{font:11.5px ui-monospace,monospace;color:var(--muted);word-break:break-all}
.plots{display:flex;flex-wrap:wrap;gap:10px}
.plots img.plot{width:350px}
details.drill-wrap>summary{cursor:pointer;color:var(--accent);margin:4px 0 8px}
figure{margin:8px 0}
img.plot{max-width:min(100%,760px);height:auto;border:1px solid var(--line);border-radius:4px}
figcaption{font-size:12px;color:var(--muted)}
.bar{display:flex;height:12px;width:320px;border-radius:3px;overflow:hidden;
background:var(--line);margin:4px 0}
.bar .ok{background:var(--good)}.bar .un{background:var(--bad)}
.drill>input{position:absolute;opacity:0}
.drill>label{display:inline-block;border:1px solid var(--line);border-radius:14px;
padding:2px 12px;margin:0 6px 8px 0;cursor:pointer;font-size:12.5px;background:var(--soft)}
.drill>input:checked+label{background:var(--accent);color:#fff;border-color:var(--accent)}
.drill>input:focus-visible+label{outline:2px solid var(--accent)}
.drill>input.f-unscored:checked~ol>li.st-ok{display:none}
.drill>input.f-ok:checked~ol>li.st-unscored{display:none}
ol.items{list-style:none;padding:0;margin:0}
ol.items>li{border:1px solid var(--line);border-radius:4px;margin:4px 0}
ol.items>li.st-unscored{border-left:4px solid var(--bad)}
ol.items>li.st-ok{border-left:4px solid var(--good)}
ol.items summary{padding:4px 10px;cursor:pointer}
ol.items details>div{padding:0 10px 8px}
.badge{display:inline-block;font-size:11px;border-radius:3px;padding:0 6px;margin-right:6px}
.badge.ok{background:#e3f2e8;color:var(--good)}.badge.unscored{background:var(--badbg);
color:var(--bad)}
.muted{color:var(--muted)}
footer{color:var(--muted);font-size:12px;margin-top:40px}
table.headline th[scope=row],table.headline tbody th{background:none;font-weight:600}
table.headline .v{font-weight:600}
.metric[title]{text-decoration:underline dotted var(--muted);cursor:help}
.dir{color:var(--muted);font-size:11px}
.flagged{color:var(--bad)}.flagged .v{text-decoration:line-through;font-weight:400}
.flag-mark{display:inline-block;font-size:11px;font-weight:600;background:var(--badbg);
color:var(--bad);border-radius:3px;padding:0 5px}
tr.flagged-row td{background:var(--badbg)}
div.flags{font-size:12.5px;color:var(--bad);margin:-6px 0 10px}
div.flags ul{margin:2px 0;padding-left:20px}
ul.legend{font-size:12px;color:var(--muted);margin:0 0 12px;padding-left:18px}
ul.legend b{color:var(--fg);font-weight:600}
p.runline{color:var(--muted);margin:-4px 0 8px;font-size:13px}
table.glance td div{white-space:nowrap}
details.legend>summary{cursor:pointer;color:var(--accent);font-size:12.5px;margin:0 0 10px}
.diagnosis{border-left:4px solid var(--accent);background:var(--soft);padding:6px 10px;
margin:8px 0 12px;font-size:13px}
.diagnosis b{color:var(--accent)}
"""


def _short_id(record: RunRecord) -> str:
    return record.run_id


def _when(record: RunRecord) -> str:
    return record.created_at.replace("T", " ").replace("+00:00", " UTC")


# ------------------------------------------------------------------ header


def _provenance(record: RunRecord) -> Markup:
    inputs = "".join(
        f"<div><code>{esc(i.path)}</code> <span class=muted>sha256 "
        f"{esc(i.sha256 or '—')}{esc(f' · {i.rows} rows' if i.rows is not None else '')}"
        f"</span></div>" for i in record.inputs) or "—"
    backends = ", ".join(_backend_text(b) for b in record.backends) or "none (no model called)"
    prompts = ", ".join(f"{k} {v}" for k, v in record.prompt_versions.items()) or "—"
    pairs: list[tuple[str, Any]] = [
        ("command", " ".join(record.command) or "—"), ("when", _when(record)),
        ("ragmeter", record.ragmeter_version), ("inputs", Markup(inputs)),
        ("backends", backends), ("models", ", ".join(record.models) or "—"),
        ("prompt versions", prompts),
        ("signature", Markup(f'<span class="sigline">{esc(record.signature or "—")}</span>')),
    ]
    if record.path is not None:
        pairs.append(("record", Markup(f"<code>{esc(record.path)}</code>")))
    return kv_table(pairs)


def _backend_text(backend: Any) -> str:
    """``local: SmolLM2-135M-Instruct.Q4_1 (runtime numpy, 93.8 MiB)`` from a recorded backend
    identity: backend and model first, then what else was recorded (its runtime, its URL), as
    recorded."""
    if not isinstance(backend, Mapping):
        return str(backend)
    name = backend.get("backend")
    model = backend.get("model")
    head = ": ".join(str(v) for v in (name, model) if v is not None) or "?"
    rest = []
    for k, v in backend.items():
        if k in ("backend", "model") or v is None:
            continue
        if k == "size" and isinstance(v, int) and not isinstance(v, bool):
            rest.append(f"{v / 2 ** 20:.1f} MiB")
        else:
            rest.append(f"{k} {v}")
    return head + (f" ({', '.join(rest)})" if rest else "")


def _signatures(records: Sequence[RunRecord]) -> Markup:
    rows = [[f"{r.family} · {_short_id(r)}",
             Markup(f'<span class="sigline">{esc(r.signature or "—")}</span>')]
            for r in records]
    return table(["run", "signature"], rows, caption="Signatures of every number",
                 numeric_from=99)


# ------------------------------------------------------------------ coverage and items


def _coverage(record: RunRecord) -> Markup:
    cov = record.result.get("coverage") if isinstance(record.result, Mapping) else None
    parts = ["<h4>Coverage</h4>"]
    if isinstance(cov, Mapping) and "scored" in cov:
        total = cov.get("total", cov.get("rows")) or 0
        scored = cov.get("scored") or 0
        unscored = cov.get("unscored", total - scored) or 0
        pct = 100.0 * scored / total if total else 0.0
        parts.append(f'<p>scored <b>{esc(scored)}</b> of {esc(total)} ({pct:.1f}%), '
                     f'unscored <b>{esc(unscored)}</b></p>')
        if total:
            parts.append(f'<div class="bar" title="scored {pct:.1f}%"><div class="ok" '
                         f'style="width:{pct:.2f}%"></div><div class="un" '
                         f'style="width:{100 - pct:.2f}%"></div></div>')
        reasons = cov.get("reasons") or {}
        if isinstance(reasons, Mapping) and reasons and all(
                isinstance(v, (int, float)) for v in reasons.values()):
            parts.append(table(["why unscored", "items"], sorted(reasons.items(),
                                                                 key=lambda kv: -kv[1])))
        elif reasons:
            parts.append(str(generic({"reasons": reasons}, 1)))
    elif isinstance(cov, Mapping):
        parts.append(str(generic({"coverage": cov}, 1)))
    else:
        parts.append(note(f"{record.items_total - record.items_unscored} of "
                          f"{record.items_total} items scored (from the items)"))
    return Markup("".join(parts))


_ID_KEYS = ("id", "sample_id", "item_id", "query_id")
_GROUP_KEYS = ("system", "evaluator", "setting", "dataset", "sample_lang", "language", "model")
_TEXT_FIRST = ("question", "query", "documents", "docs", "passages", "context", "response",
               "prediction", "pred_answer", "answer", "gold", "gold_answer", "labels",
               "judge", "judge_reply")


def _field(value: Any) -> Markup:
    import json

    if isinstance(value, str):
        text = value
    elif isinstance(value, (dict, list)):
        text = json.dumps(value, ensure_ascii=False, indent=1, default=str)
    else:
        return cell(value)
    if len(text) > MAX_TEXT_CHARS:
        text = text[:MAX_TEXT_CHARS] + f"… ({len(text) - MAX_TEXT_CHARS} more characters)"
    if "\n" in text or len(text) > 60 or isinstance(value, (dict, list)):
        return Markup(f"<pre>{esc(text)}</pre>")
    return Markup(esc(text))


def _item(it: Mapping[str, Any]) -> str:
    status = "ok" if it.get("status", "ok") == "ok" else "unscored"
    ident = next((it[k] for k in _ID_KEYS if k in it), "?")
    groups = " · ".join(str(it[k]) for k in _GROUP_KEYS if k in it and it[k] is not None)
    headline = ""
    if status == "unscored":
        headline = f" — {it.get('reason') or 'unknown'}"
    else:
        values = [(k, v) for k, v in it.items() if k not in _ID_KEYS and k not in ("row", "repeat")
                  and isinstance(v, (int, float)) and not isinstance(v, bool)][:4]
        if values:
            headline = " — " + ", ".join(f"{k} {number(v, 3)}" for k, v in values)
    summary = (f'<span class="badge {status}">{status}</span><b>{esc(ident)}</b>'
               f' <span class="muted">{esc(groups)}{esc(headline)}</span>')
    keys = [k for k in _TEXT_FIRST if k in it]
    keys += [k for k in it if k not in keys and k != "status"]
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{_field(it[k])}</td></tr>" for k in keys)
    return (f'<li class="st-{status}"><details><summary>{summary}</summary><div>'
            f'<table class="kv"><tbody>{rows}</tbody></table></div></details></li>')


def _items(record: RunRecord, index: int) -> Markup:
    items = sorted(record.items, key=lambda it: it.get("status", "ok") == "ok")  # stable
    shown = items[:MAX_ITEMS_SHOWN]
    n_un = sum(1 for it in shown if it.get("status", "ok") != "ok")
    n_ok = len(shown) - n_un
    name = f"f{index}"
    head = (f"<h4>Items</h4><p class=note>{len(shown)} shown of {record.items_total} "
            f"({record.items_unscored} unscored), unscored first. Click an item for its "
            "fields.</p>")
    if record.items_truncated or len(shown) < len(items):
        head += note("The full list is in the run record file" +
                     (" (the record itself keeps a sample of the scored items)."
                      if record.items_truncated else "."))
    if not shown:
        return Markup(head + note("This run record holds no items."))
    radios = "".join(
        f'<input type="radio" name="{name}" id="{name}-{k}" class="f-{k}"{checked}>'
        f'<label for="{name}-{k}">{label} ({n})</label>'
        for k, label, n, checked in (("all", "all", len(shown), " checked"),
                                     ("unscored", "unscored", n_un, ""),
                                     ("ok", "scored", n_ok, "")))
    body = "".join(_item(it) for it in shown)
    # Folded: the numbers come first; the summary line says how many went unscored.
    unscored = f", {n_un} unscored" if n_un else ""
    return Markup(f'{head}<details class="drill-wrap"><summary>item list '
                  f'({len(shown)}{unscored})</summary><div class="drill">{radios}'
                  f'<ol class="items">{body}</ol></div></details>')


# ------------------------------------------------------------------ sections


def _family_body(record: RunRecord) -> Markup:
    from ragmeter.reports.html_extras import without_extras
    from ragmeter.reports.html_families import section_of

    section = section_of(record.family)
    doc = without_extras(record.result)
    if section is not None:
        try:
            return section(doc)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
            # The family's document has a shape this section does not know (an older or newer
            # record): show it generically and say so, rather than failing the whole report.
            return Markup(note(f"the {record.family} section could not read this result "
                               f"({type(err).__name__}: {err}); shown generically.", "warn")
                          + generic(doc))
    return generic(doc)


def _judging(record: RunRecord) -> Markup:
    """The judge alarms (flagged: a degenerate judge, a judge at or below chance) and the judge
    cards of a judged run: every judged number carries its judge's validation, or says plainly
    that it is unvalidated."""
    from ragmeter.judges._card import card_line

    parts = []
    for alarm in record.result.get("alarms") or []:
        if isinstance(alarm, Mapping):
            what = "judge at or below chance" if alarm.get("kind") == "judge_at_chance" \
                else "degenerate judge"
            parts.append(note(f"⚠ FLAGGED — {what}: {alarm.get('message', '')}", "warn"))
    cards = record.result.get("judges")
    if not isinstance(cards, list):  # a validation per judge: the cards are beside it
        cards = record.result.get("judge_cards")
    for card in cards or []:
        if isinstance(card, Mapping):
            parts.append(note(f"judge: {card_line(card)}",
                              "" if card.get("validated") else "warn"))
    return Markup("".join(str(p) for p in parts))


def run_label(record: RunRecord) -> str:
    """What a run was run on, in a few words: its data files' short names
    (:func:`~ragmeter.reports.html_headline.data_label`: ``hotpotqa/test`` for a RAGBench
    shard), else its verb."""
    names = list(dict.fromkeys(data_label(i.path) for i in record.inputs))
    if names:
        return ", ".join(names[:3]) + (f" (+{len(names) - 3})" if len(names) > 3 else "")
    doc = record.result if isinstance(record.result, Mapping) else {}
    return str(doc.get("verb") or doc.get("kind") or "")


def _headline(record: RunRecord) -> Markup:
    """The run's headline table and the legend of its metrics; a note when it has none."""
    doc = record.result if isinstance(record.result, Mapping) else {}
    rows = rows_of(record.family, doc)
    if not rows:
        return note("This result has no headline numbers; its tables follow.")
    metrics = metrics_of(record.family)
    return Markup(headline_table(rows, metrics, caption="Headline (95% CI under a value; n "
                                                        "items; hover a metric for its "
                                                        "definition)")
                  + legend(rows, metrics))


def _run(record: RunRecord, index: int) -> Markup:
    """One run, results first: its headline table and legend, then its section (the
    original's tables and plots) and the shared blocks (groups, stability, spend), then judge
    cards and alarms, coverage, provenance with the signature, and the items (folded)."""
    from ragmeter.reports.html_extras import extras

    notes = "".join(note(f"note: {n}") for n in record.notes)
    label = run_label(record)
    scored = record.items_total - record.items_unscored
    line = " · ".join(x for x in (_when(record), ", ".join(record.models),
                                  f"{scored} of {record.items_total} items scored"
                                  if record.items_total else "") if x)
    judging = _judging(record)
    return Markup(
        f'<article class="run" id="run-{index}"><h3>{esc(record.family)}'
        f'{" · " + esc(label) if label else ""} <span class="muted">'
        f'{esc(_short_id(record))}</span></h3><p class="runline">{esc(line)}</p>'
        f'<h4>Results</h4>{_headline(record)}'
        f'<h4>Tables and plots</h4>{_family_body(record)}{extras(record.result)}'
        + (f"<h4>Judges and alarms</h4>{judging}" if judging else "")
        + f'{_coverage(record)}'
        f'<h4>Provenance</h4>{_provenance(record)}{notes}'
        f'{_items(record, index)}</article>')


def _glance(records: Sequence[RunRecord]) -> Markup:
    """The report's first table: per run, its family, data and model, and its main number
    (the family's main metric: value, 95% CI, n; :func:`main_rows`), linked to its section."""
    rows = []
    for i, r in enumerate(records, 1):
        doc = r.result if isinstance(r.result, Mapping) else {}
        heads = rows_of(r.family, doc)
        main = main_rows(r.family, heads)
        metrics = metrics_of(r.family)
        shown = main[:GLANCE_GROUPS]
        name = main[0].metric if main else None
        digits = digits_of(metrics, name) if name else 4
        cells = "".join(f'<div>{esc(h.group) + " " if h.group != "all" else ""}'
                        f"{headline_inline(h, digits)}</div>" for h in shown)
        if len(main) > len(shown):
            cells += f'<div class="muted">(+{len(main) - len(shown)} more groups)</div>'
        flagged = sum(1 for h in heads if h.flag)
        rows.append([Markup(f'<a href="#run-{i}">{i}</a>'), r.family, run_label(r) or "—",
                     ", ".join(r.models) or "—", label_of(metrics, name) if name else "—",
                     Markup(cells or "—"),
                     f"{r.items_total - r.items_unscored}/{r.items_total}",
                     f"{FLAG_MARK} {flagged} flagged" if flagged else ""])
    return table(["#", "family", "data", "model", "main metric", "value (95% CI, n)", "scored",
                  "flags"], rows, numeric_from=99, cls="glance",
                 caption="Results at a glance (each run's main metric; its section has all "
                         "its numbers)")


def _side_by_side(records: Sequence[RunRecord], labels: Sequence[str]) -> Markup:
    """The runs' headline numbers side by side (value, CI, n per run; each run's own items)."""
    metrics = metrics_of(records[0].family)
    per_run = [{(h.group, h.metric): h for h in rows_of(r.family, r.result)
                if isinstance(r.result, Mapping)} for r in records]
    keys = list(dict.fromkeys(k for run in per_run for k in run))
    if not keys:
        return Markup("")
    rows = []
    for group, metric in keys:
        digits = digits_of(metrics, metric)
        rows.append([group, label_of(metrics, metric), *[headline_cell(run[(group, metric)],
                                                                       digits)
                                     if (group, metric) in run else None for run in per_run]])
    return table(["group", "metric", *labels], rows, numeric_from=2, cls="headline",
                 caption="Headline numbers side by side (each over its own run's items)")


def _comparison(records: Sequence[RunRecord], first_index: int) -> Markup:
    from ragmeter.reports.compare import compare_runs
    from ragmeter.reports.html_families import comparison_plot_of

    labels = [f"run {first_index + i}" for i in range(len(records))]
    legend = table(["run", "id", "data", "models", "when", "signature"],
                   [[lab, r.run_id, run_label(r) or "—", ", ".join(r.models) or "—", _when(r),
                     Markup(f'<span class="sigline">{esc(r.signature or "—")}</span>')]
                    for lab, r in zip(labels, records, strict=True)], numeric_from=99)
    parts = [f"<h3>Comparison of {len(records)} runs</h3>", str(legend)]
    sigs = {r.signature for r in records}
    if len(sigs) > 1:
        parts.append(note("The signatures differ (see above): the runs differ in settings, "
                          "so differences may come from the settings, not only the models.",
                          "warn"))
    comp = compare_runs(records, n_resamples=PERMUTATIONS, alpha=SIGNIFICANCE)
    parts.append(str(_side_by_side(records, labels)))
    if comp.no_common_items:
        parts.append(note(comp.notes.pop(0), "warn"))
    if comp.rows:
        headers = ["group", "metric", *[f"{lab} mean" for lab in labels]]
        for lab in labels[1:]:
            headers += [f"{lab} − {labels[0]}", "p (perm.)", "n paired"]
        rows = []
        for row in comp.rows:
            cells: list[Any] = [row.group, row.metric, *row.means]
            for test in row.tests:
                if test is None:
                    cells += [None, None, 0]
                    continue
                diff = f"{test.mean_diff:+.4f}" + (" ★" if test.significant else "")
                cells += [Markup(f'<span class="{"sig" if test.significant else ""}">'
                                 f'{esc(diff)}</span>'), test.p_value, test.n]
            rows.append(cells)
        klass = ["sig" if any(t is not None and t.significant for t in r.tests) else ""
                 for r in comp.rows]
        parts.append(str(table(headers, rows, numeric_from=2, row_classes=klass,
                               caption=f"Per-item paired comparison against {labels[0]} "
                                       f"(sign-flip permutation test, {PERMUTATIONS} "
                                       f"resamples; ★ highlighted: p < {SIGNIFICANCE})")))
        parts.append(note("Means are over the items present in every compared run with the "
                          "same key (the pairs); unscored items are left out."))
    parts += [note(n) for n in comp.notes]
    if comp.headline:
        parts.append(f"<details><summary>Aggregates side by side ({len(comp.headline)} "
                     "numbers that differ between the runs, from each run's result)</summary>"
                     + str(table(["number", *labels], comp.headline)) + "</details>")
    plot = comparison_plot_of(records[0].family)
    if plot is not None:
        parts.append(plot(records))
    return Markup("".join(parts))


REPORT_CSS = _CSS  # the report's stylesheet (the web app serves it as well)


def render_run(record: RunRecord, index: int = 1) -> Markup:
    """One run's article of the report (provenance, results, coverage, items); escaped markup.

    ``index`` numbers the article's ids and filter names (unique per page).
    """
    return _run(record, index)


def render_comparison(records: Sequence[RunRecord], first_index: int = 1) -> Markup:
    """The report's comparison of several runs of one family (paired tests, aggregates)."""
    return _comparison(records, first_index)


def render_report(records: Sequence[RunRecord], *, title: str = "ragmeter report",
                  lead: Markup | None = None) -> str:
    """The HTML document (a string) for these run records, grouped by family in order;
    ``lead`` (markup built and escaped by the caller, e.g. the pytest plugin's checks) comes
    first."""
    families: dict[str, list[tuple[int, RunRecord]]] = {}
    for i, r in enumerate(records, 1):
        families.setdefault(r.family, []).append((i, r))
    now = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", " UTC")
    toc = "".join(f'<a href="#family-{k}">{esc(fam)} ({len(runs)})</a>'
                  for k, (fam, runs) in enumerate(families.items()))
    if records:
        toc += '<a href="#runs">runs and signatures</a>'
    out = ["<!DOCTYPE html><html lang=en><head><meta charset=utf-8>",
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           # No network, no scripts: the browser is told so as well.
           '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
           'img-src data:; style-src \'unsafe-inline\'">',
           f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>",
           f'<header class="top"><h1>{esc(title)}</h1><p>{len(records)} run(s) · written '
           f'{esc(now)} · ragmeter {esc(__version__)} · offline file, no network</p>'
           f'<nav class="toc">{toc}</nav></header><main>']
    if lead:
        out.append(str(lead))
    if not records:
        out.append(note("No run records were given."))
    else:
        out.append(f'<section id="overview"><h2>Results</h2>{_glance(records)}</section>')
    for k, (fam, runs) in enumerate(families.items()):
        out.append(f'<section class="family" id="family-{k}"><h2>{esc(fam)}</h2>')
        if len(runs) > 1:
            out.append(str(_comparison([r for _, r in runs], runs[0][0])))
        out += [str(_run(r, i)) for i, r in runs]
        out.append("</section>")
    if records:
        out.append('<section id="runs"><h2>Runs and signatures</h2>')
        out.append(str(table(["#", "family", "run id", "when", "command", "scored"],
                             [[i, r.family, r.run_id, _when(r), " ".join(r.command),
                               f"{r.items_total - r.items_unscored}/{r.items_total}"]
                              for i, r in enumerate(records, 1)], numeric_from=99)))
        out.append(str(_signatures(records)) + "</section>")
    out.append(f"<footer>Written by ragmeter {esc(__version__)} from stored run records; "
               "nothing in this file calls a model or loads anything from the network."
               "</footer></main></body></html>")
    return "".join(out)


def write_report(records: Sequence[RunRecord], out_path: str | Path, *,
                 title: str = "ragmeter report", lead: Markup | None = None) -> Path:
    """Render and write the report atomically; returns the path written."""
    from ragmeter.io import write_text

    path = Path(out_path)
    write_text(path, render_report(records, title=title, lead=lead))
    return path
