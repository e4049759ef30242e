"""RGB's numbers per ``--by`` group (issue 15.8), from the scored (and judged) items.

Per group, over its scored items: ``accuracy`` (evalue.py's per-item ``correct``, at each
item's own noise rate), on counterfactual (``_fact``) items ED and CR (evalue.py's
``fact_rates``), and with a judge Rej*, ED* and CR* (the judged rates' own formulas); each
with n and a Wilson 95% interval.  Pooling items of different noise rates into one accuracy is
what ``--by lang`` asks for; ``--by noise_rate`` (or ``setting``) keeps the paper's cells.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ragmeter.rgb import _metrics as qa_rgb
from ragmeter.rgb._metrics import wilson

__all__ = ["rgb_group_summary", "raw_rows_by_id"]


def rgb_group_summary(items: Sequence[Mapping[str, Any]], *,
                      is_fact: Callable[[Mapping[str, Any]], bool],
                      task_of: Callable[[Mapping[str, Any]], str | None]) -> dict[str, Any]:
    """``metrics``/``ci95`` of one group.  ``is_fact(item)``: the item is from _fact data
    (ED and CR apply); ``task_of(item)``: ``reject``/``fact`` for judged items, else None."""
    from ragmeter._verb._groups import coverage_of_items

    ok = [i for i in items if i.get("status", "ok") == "ok"]
    correct = sum(int(i["correct"]) for i in ok)
    metrics: dict[str, Any] = {"accuracy": correct / len(ok) if ok else None, "n": len(ok)}
    ci: dict[str, Any] = {"accuracy": wilson(correct, len(ok))}
    fact = [i for i in ok if is_fact(i)]
    if fact:
        fr = qa_rgb.fact_rates([tuple(i["labels"]) for i in fact],
                               [int(i["factlabel"]) for i in fact])
        metrics.update({"ed": fr.fact_check_rate, "cr": fr.correct_rate, "n_fact": len(fact)})
        ci.update({"ed": wilson(fr.fact_tt, len(fact)), "cr": wilson(fr.correct_tt, fr.fact_tt)})
    for task in ("reject", "fact"):
        judged = [i for i in ok if task_of(i) == task and "flag" in (i.get("judge") or {})]
        if not judged:
            continue
        flags = [bool(i["judge"]["flag"]) for i in judged]
        hits = sum(flags)
        if task == "reject":
            metrics.update({"reject_rate_judged": qa_rgb.judge_reject_rate(flags),
                            "n_judged_reject": len(flags)})
            ci["reject_rate_judged"] = wilson(hits, len(flags))
        else:
            labels = [tuple(i["labels"]) for i in judged]
            good = qa_rgb.judged_correct_count(flags, labels)
            metrics.update({"ed_judged": qa_rgb.judge_reject_rate(flags),
                            "cr_judged": qa_rgb.judged_correct_rate(flags, labels),
                            "n_judged_fact": len(flags)})
            ci.update({"ed_judged": wilson(hits, len(flags)), "cr_judged": wilson(good, hits)})
    return {"metrics": metrics, "ci95": ci, "coverage": coverage_of_items(items)}


def raw_rows_by_id(source: Any) -> dict[str, dict[str, Any]]:
    """The rows of a predictions or data source by their ``id`` as text (for ``--by`` on a
    column ragmeter does not read otherwise); rows without an id are skipped."""
    from ragmeter.io import iter_rows

    out: dict[str, dict[str, Any]] = {}
    for row in iter_rows(source, component="rgb"):
        if "id" in row.data:
            out.setdefault(str(row.data["id"]), dict(row.data))
    return out
