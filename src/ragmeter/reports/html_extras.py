"""The report's blocks shared by every family: judge stability over ``--repeats``, the
``--by`` groups (quality with CIs, coverage, spend) and what the run spent (tokens and money
from the endpoint's usage; cached responses shown at their original cost)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragmeter._verb._groups import flat_metrics
from ragmeter.reports._html import Markup, kv_table, table
from ragmeter.reports.html_families import with_ci

__all__ = ["extras", "without_extras"]


def _stability(st: Any) -> str:
    if not isinstance(st, Mapping):
        return ""
    blocks = {"": st} if "repeats" in st else {k: v for k, v in st.items()
                                              if isinstance(v, Mapping) and "repeats" in v}
    if not blocks:
        return ""
    rows = [[label or "all", b.get("repeats"), b.get("items"), b.get("flip_rate"),
             b.get("mean_agreement"), b.get("fleiss_kappa"),
             b.get("note") or ", ".join(f"{100 * v:.1f}%" for v in b.get("rate_per_repeat") or []
                                        if v is not None)]
            for label, b in blocks.items()]
    return str(table(["judged", "repeats", "items", "flip rate", "mean agreement",
                      "Fleiss' κ", "note / rate per repeat"], rows,
                     caption="Judge stability over repeats"))


def _spend_rows(sp: Mapping[str, Any]) -> list[tuple[str, Any]]:
    cached = sp.get("cached") or {}
    prices = sp.get("prices_per_mtok")
    return [("calls made by this run", sp.get("calls")),
            ("prompt tokens", sp.get("prompt_tokens")),
            ("completion tokens", sp.get("completion_tokens")),
            ("cost (USD)", sp.get("cost_usd") if prices else "no price given"),
            ("cached responses (cost 0 for this run)", cached.get("calls")),
            ("cached tokens (prompt + completion)",
             f"{cached.get('prompt_tokens', 0)} + {cached.get('completion_tokens', 0)}"),
            ("cached: original cost (USD)", cached.get("cost_usd") if prices else "—"),
            ("failed calls (no usage)", sp.get("failed_calls")),
            ("prices (USD per million tokens, in / out)",
             f"{prices.get('in')} / {prices.get('out')}" if prices else "none given")]


def _group_list_spend(groups: list[Any], by: list[str]) -> str:
    """Spend per group of a list-shaped groups table (rubric)."""
    rows = [[" / ".join(str(g.get(c)) for c in by) or "all", g["spend"].get("calls"),
             (g["spend"].get("cached") or {}).get("calls"),
             f"{g['spend'].get('prompt_tokens', 0)} + {g['spend'].get('completion_tokens', 0)}",
             g["spend"].get("cost_usd")]
            for g in groups if isinstance(g, Mapping) and isinstance(g.get("spend"), Mapping)]
    if not rows:
        return ""
    return str(table(["group", "calls", "cached", "tokens (in + out)", "cost (USD)"], rows,
                     caption="Spend per group"))


def _groups(groups: Any, by: Any = None) -> str:
    if isinstance(groups, list):
        return _group_list_spend(groups, list(by or []))
    if not isinstance(groups, Mapping) or not isinstance(groups.get("values"), Mapping):
        return ""
    values: Mapping[str, Any] = groups["values"]
    if any(isinstance(m, Mapping) for v in values.values()
           for m in (v.get("metrics") or {}).values()
           if isinstance(m, Mapping) and "mean" not in m and "value" not in m):
        # nested per system (multilingual): the generic renderer shows it
        from ragmeter.reports._html import generic

        return f"<h4>By {groups.get('by')}</h4>" + str(generic(dict(values)))
    flats = {k: flat_metrics(v) for k, v in values.items()}
    keys: list[str] = []
    for metrics, _ in flats.values():
        keys += [k for k in metrics if k not in keys]
    has_spend = any("spend" in v for v in values.values())
    rows = []
    for name, part in values.items():
        metrics, cis = flats[name]
        cov = part.get("coverage") or {}
        row: list[Any] = [name or "(empty)"]
        for k in keys:
            row.append(metrics.get(k))
            if k in cis:
                row[-1] = with_ci(metrics.get(k), cis.get(k))
        row.append(f"{cov.get('scored', '?')}/{cov.get('rows', cov.get('total', '?'))}")
        if has_spend:
            sp = part.get("spend") or {}
            row += [sp.get("calls"), (sp.get("cached") or {}).get("calls"),
                    f"{sp.get('prompt_tokens', 0)} + {sp.get('completion_tokens', 0)}",
                    sp.get("cost_usd")]
        rows.append(row)
    heads = ["group", *keys, "coverage"] + (["calls", "cached", "tokens (in + out)",
                                             "cost (USD)"] if has_spend else [])
    return str(table(heads, rows, caption=f"By {groups.get('by')} (95% CI under a value)"))


def extras(doc: Mapping[str, Any]) -> Markup:
    """Stability, groups and spend of a result document (empty when it has none)."""
    parts = [_stability(doc.get("stability")), _groups(doc.get("groups"), doc.get("by"))]
    sp = doc.get("spend")
    if isinstance(sp, Mapping):
        parts.append("<h4>Spend (from the endpoint's usage fields)</h4>"
                     + str(kv_table(_spend_rows(sp))))
    return Markup("".join(parts))


def without_extras(doc: Mapping[str, Any]) -> dict[str, Any]:
    """``doc`` without the blocks :func:`extras` shows (so a family section or the generic
    renderer does not show them twice); a key of an unknown shape stays for them to show."""
    out = dict(doc)
    for key in ("stability", "spend"):
        if isinstance(out.get(key), Mapping):
            out.pop(key)
    groups = out.get("groups")
    if isinstance(groups, Mapping) and isinstance(groups.get("values"), Mapping):
        out.pop("groups")
    return out
