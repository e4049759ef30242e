"""Annotator reliability against a QC key, from Python.

::

    import ragmeter
    result = ragmeter.reliability.score("annotations.csv", qc=["qc_maria"])
    result.summary["evaluators"]["ann_ayo"]["reliability"]

``data`` is a path, a list of dicts, a pandas DataFrame or a pyarrow Table with one row per
(item, evaluator): ``item_id``, ``evaluator``, ``item_flag``, ``choice`` and optional
``skipped``.  ``ragmeter reliability score`` calls exactly this function.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ragmeter._verb._context import field_map, input_record
from ragmeter._verb._options import names
from ragmeter.result import Result

__all__ = ["score"]

COMPONENT = "reliability"


def score(data: Any, *, qc: str | Sequence[str], min_applicable: int = 30,
          fields: Mapping[str, str] | Iterable[str] | None = None,
          flag_yes: str | Sequence[str] | None = None,
          flag_no: str | Sequence[str] | None = None,
          plot: str | None = None, by: str | None = None) -> Result:
    """Every evaluator against QC: reliability, flag mismatch, Cohen's κ, Wilson 95% CIs.

    ``qc``: the evaluator(s) whose annotations are the key (several: majority).
    ``min_applicable``: evaluators with fewer applicable items are warned about and marked.
    ``flag_yes``/``flag_no``: ``item_flag`` values meaning flagged / ratable (replace the
    defaults).  ``plot``: also write the reliability matrix PNG there (``ragmeter[plots]``).
    ``by``: the pooled reliability (Wilson 95% CI), mean evaluator reliability, flag
    mismatch and coverage per group of annotator rows sharing this column (``language``,
    ``evaluator``, ``batch``...), each group against the QC verdicts of its own items:
    ``summary["groups"]``.
    """
    from ragmeter.reliability._scorer import (
        DEFAULT_FLAG_NO,
        DEFAULT_FLAG_YES,
        ReliabilityConfig,
        score_file,
    )

    config = ReliabilityConfig(
        qc=names(qc, "qc", COMPONENT), min_applicable=min_applicable,
        flag_yes=names(flag_yes, "flag_yes", COMPONENT) or DEFAULT_FLAG_YES,
        flag_no=names(flag_no, "flag_no", COMPONENT) or DEFAULT_FLAG_NO,
        field_map=field_map(fields, COMPONENT))
    if plot:
        from ragmeter.reports.plots import require_matplotlib

        require_matplotlib()  # fail on a missing extra before reading the data
    if by:
        from ragmeter.io import rereadable

        data = rereadable(data)  # read again for the groups (issue 29.9)
    detail = score_file(data, config)
    if plot:
        from ragmeter.io import write_bytes
        from ragmeter.reports.plots import reliability_matrix_png

        png = reliability_matrix_png(detail)
        if png is not None:
            write_bytes(plot, png)
    from ragmeter.reliability._metrics import headline

    doc = detail.to_json()
    if by:
        doc["groups"] = _groups(data, by, config)
    return Result(COMPONENT, "score", doc, items=detail.iter_items, detail=detail,
                  ordered_items=detail.ordered_items,
                  inputs=[input_record(data, doc["coverage"].get("rows"))],
                  headline=headline(doc))


def _groups(data: Any, by: str, config: Any) -> dict[str, Any]:
    """Each group of non-QC rows scored with the QC rows of its items (same config)."""
    from ragmeter._verb._groups import FieldLookup
    from ragmeter.io import iter_rows
    from ragmeter.reliability._scorer import score_annotations
    from ragmeter.stats import wilson_interval

    rows = list(iter_rows(data, component=COMPONENT, field_map=config.field_map))
    qc_rows = [r for r in rows if str(r.data.get("evaluator", "")).strip() in config.qc]
    lookup = FieldLookup(by, COMPONENT)
    parts: dict[str, list[Any]] = {}
    for r in rows:
        if str(r.data.get("evaluator", "")).strip() not in config.qc:
            parts.setdefault(lookup({"id": f"{r.unit} {r.number}", **r.data}), []).append(r)
    lookup.check()
    values: dict[str, Any] = {}
    for key in sorted(parts):
        items = {str(r.data.get("item_id")) for r in parts[key]}
        mine = parts[key] + [r for r in qc_rows if str(r.data.get("item_id")) in items]
        part = score_annotations(mine, config).to_json()
        matches = sum(int(e.get("matches") or 0) for e in part["evaluators"].values())
        applicable = sum(int(e.get("applicable_items") or 0)
                         for e in part["evaluators"].values())
        ci = wilson_interval(matches, applicable)
        values[key] = {
            "metrics": {"reliability": part["overall_reliability"],
                        "mean_evaluator_reliability": part["mean_evaluator_reliability"],
                        "flag_mismatch_pct": part["overall_flag_mismatch_pct"],
                        "evaluators": len(part["evaluators"]), "n": applicable},
            "ci95": {"reliability": list(ci) if ci else None},
            # (evaluator, item) pairs of the group; input_rows also counts its QC rows
            "coverage": {**{k: v for k, v in part["coverage"].items() if k != "rows"},
                         "input_rows": part["coverage"].get("rows")}}
    return {"by": by, "values": values}
