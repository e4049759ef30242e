"""``--by FIELD``: the same numbers per group of items, shared by every family (issue 15.8).

A group is the items whose ``FIELD`` has one value.  The field is looked up in the item
itself, then in the fields the family adds (e.g. RGB's ``lang``/``noise_rate``), then in
the input rows the item came from (any column of your data: ``dataset``, ``system``,
``annotator``).  Each family summarizes a group with its own aggregation (the one its total
uses), and every group also gets its coverage and spend (:mod:`ragmeter.judges._spend`), so the
groups of a run add up to its total.

The result has one shape everywhere: ``{"by": FIELD, "values": {value: {"metrics", "ci95",
"coverage", "spend", ...}}}``, printed by :func:`ragmeter.reports.console_extras.print_extras`
(``multilingual score``: its family's ``print_groups``) and shown by the HTML report.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ragmeter.errors import InputError

__all__ = ["group_value", "FieldLookup", "group_items", "grouped", "coverage_of_items",
           "flat_metrics"]

Summarize = Callable[[list[dict[str, Any]]], dict[str, Any]]


def group_value(value: Any) -> str:
    """A field value as a group name: its text (``0.2``, ``en``), booleans lower-case, None as
    ``""`` (shown as ``(empty)``)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


class FieldLookup:
    """Where ``field`` is found for an item: the item, ``extra(item)``, then the input row
    ``rows[row_key(item)]``.  An item with no value (e.g. an instance without a prediction
    row) goes to the group ``""`` ("(empty)"); :meth:`check` raises a one-line
    :class:`InputError` when no item had the field at all (a typo in ``--by``)."""

    def __init__(self, field: str, component: str, *,
                 extra: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
                 rows: Mapping[str, Mapping[str, Any]] | None = None,
                 row_key: Callable[[Mapping[str, Any]], str] | None = None,
                 available: Sequence[str] = ()) -> None:
        self.field = field
        self.component = component
        self.extra = extra
        self.rows = rows
        self.row_key = row_key
        self.available = available
        self.found = 0
        self.example: Mapping[str, Any] | None = None

    def __call__(self, item: Mapping[str, Any]) -> str:
        value = self._find(item)
        if value is None:
            self.example = self.example or item
            return ""
        self.found += 1
        return value

    def check(self) -> None:
        """Raise when the field was found for no item."""
        if self.found or self.example is None:
            return
        item = self.example
        known = sorted({*self.available, *(k for k in item if not k.startswith("_"))})
        raise InputError(f"--by {self.field}: no item has a field {self.field!r}. Fields "
                         f"there: {', '.join(known[:20])}.", component=self.component,
                         fix="group by a field every item (or input row) has.")

    def _find(self, item: Mapping[str, Any]) -> str | None:
        if self.field in item:
            return group_value(item[self.field])
        if self.extra is not None:
            more = self.extra(item)
            if self.field in more:
                return group_value(more[self.field])
        if self.rows is not None and self.row_key is not None:
            row = self.rows.get(self.row_key(item))
            if row is not None and self.field in row:
                return group_value(row[self.field])
        return None


def group_items(items: Iterable[dict[str, Any]], key_of: Callable[[Mapping[str, Any]], str]
                ) -> dict[str, list[dict[str, Any]]]:
    """Items by group name, groups sorted by name, items in input order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        out.setdefault(key_of(item), []).append(item)
    if isinstance(key_of, FieldLookup):
        key_of.check()
    return {k: out[k] for k in sorted(out)}


def coverage_of_items(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``rows``/``scored``/``unscored``/``reasons`` of items with ``status``/``reason``."""
    reasons: dict[str, int] = {}
    for i in items:
        if i.get("status", "ok") != "ok":
            r = str(i.get("reason") or "unscored")
            reasons[r] = reasons.get(r, 0) + 1
    unscored = sum(reasons.values())
    return {"rows": len(items), "scored": len(items) - unscored, "unscored": unscored,
            "reasons": dict(sorted(reasons.items()))}


def grouped(by: str, items: Iterable[dict[str, Any]], key_of: Callable[[Mapping[str, Any]], str],
            summarize: Summarize, *, price_in: float | None = None,
            price_out: float | None = None,
            usage_of: Callable[[Mapping[str, Any]], Any] | None = None,
            with_spend: bool = True) -> dict[str, Any]:
    """``{"by", "values"}``: each group summarized by the family's ``summarize`` (which returns
    ``metrics``, ``ci95``, ``coverage``...), plus (``with_spend``: verbs that call a model)
    its spend from the items' ``usage``."""
    from ragmeter.judges._spend import add_usage, spend

    get_usage = usage_of or (lambda i: i.get("usage"))
    values: dict[str, Any] = {}
    for key, part in group_items(items, key_of).items():
        entry = dict(summarize(part))
        entry.setdefault("coverage", coverage_of_items(part))
        if with_spend:
            entry["spend"] = spend(add_usage(get_usage(i) for i in part), price_in,
                                   price_out)
        values[key] = entry
    return {"by": by, "values": values}


def flat_metrics(part: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A group's metrics and CIs as flat ``{name: value}`` for tables: a nested
    ``{metric: {"mean"|"value", "ci95"}}`` (TRACe) becomes ``{metric: mean}``."""
    metrics: dict[str, Any] = {}
    cis: dict[str, Any] = dict(part.get("ci95") or {})
    for k, v in (part.get("metrics") or {}).items():
        if isinstance(v, Mapping) and ("mean" in v or "value" in v):
            metrics[k] = v.get("mean", v.get("value"))
            if v.get("ci95"):
                cis[k] = v["ci95"]
        elif not isinstance(v, Mapping):
            metrics[k] = v
    return metrics, cis
