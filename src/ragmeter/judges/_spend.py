"""What a run actually spent: tokens and money from the endpoint's usage fields (issue 15.9).

The runner stores every response with the ``usage`` the endpoint returned
(``prompt_tokens``, ``completion_tokens``; :mod:`ragmeter.runner._store`), and every
:class:`~ragmeter.runner._run.Outcome` carries that response, stored or fresh, with ``cached`` set
when it came from the store.  From the outcomes of one run this module counts, per item and
in total:

* the calls made by this run and their tokens (what this run paid for);
* the cached responses and their original tokens (cost 0 for this run; shown as "cached" so a
  re-run does not hide what the numbers cost the first time);
* failed calls (no usage: the endpoint returned none).

Money is tokens × price (USD per million tokens: ``--price-in``/``--price-out`` or the
backend's prices), None when no price is known.  Pure functions: no I/O, no model.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["USAGE_KEYS", "usage_of", "add_usage", "spend", "money"]

USAGE_KEYS = ("calls", "cached_calls", "failed_calls", "prompt_tokens", "completion_tokens",
              "cached_prompt_tokens", "cached_completion_tokens")


def usage_of(outcomes: Iterable[Any]) -> dict[str, int]:
    """The usage counters of some outcomes (the calls of one item, or of a whole run)."""
    out = dict.fromkeys(USAGE_KEYS, 0)
    for o in outcomes:
        resp = getattr(o, "response", None)
        if not getattr(o, "ok", False) or resp is None:
            out["failed_calls"] += 1
            continue
        prefix = "cached_" if getattr(o, "cached", False) else ""
        out["cached_calls" if prefix else "calls"] += 1
        out[f"{prefix}prompt_tokens"] += int(resp.usage.prompt_tokens)
        out[f"{prefix}completion_tokens"] += int(resp.usage.completion_tokens)
    return out


def add_usage(usages: Iterable[Mapping[str, Any] | None]) -> dict[str, int]:
    """The sum of usage counters (None entries count nothing)."""
    out = dict.fromkeys(USAGE_KEYS, 0)
    for u in usages:
        if u:
            for k in USAGE_KEYS:
                out[k] += int(u.get(k, 0) or 0)
    return out


def money(prompt_tokens: int, completion_tokens: int, price_in: float | None,
          price_out: float | None) -> float | None:
    """USD for these tokens at ``price_in``/``price_out`` per million; None without prices."""
    if price_in is None and price_out is None:
        return None
    return (prompt_tokens * (price_in or 0.0) + completion_tokens * (price_out or 0.0)) / 1e6


def spend(usage: Mapping[str, Any], price_in: float | None = None,
          price_out: float | None = None) -> dict[str, Any]:
    """The spend block of a summary (total or one ``--by`` group).

    ``cost_usd`` is what this run paid (its own calls); ``cached.cost_usd`` what the cached
    responses cost when they were first made, at the same prices (this run paid 0 for them).
    """
    u = add_usage([usage])
    return {
        "calls": u["calls"], "failed_calls": u["failed_calls"],
        "prompt_tokens": u["prompt_tokens"], "completion_tokens": u["completion_tokens"],
        "cost_usd": money(u["prompt_tokens"], u["completion_tokens"], price_in, price_out),
        "cached": {"calls": u["cached_calls"], "prompt_tokens": u["cached_prompt_tokens"],
                   "completion_tokens": u["cached_completion_tokens"],
                   "cost_usd": money(u["cached_prompt_tokens"], u["cached_completion_tokens"],
                                     price_in, price_out)},
        "prices_per_mtok": None if price_in is None and price_out is None
        else {"in": price_in, "out": price_out},
        "source": "usage fields of the endpoint's responses, as stored",
    }


def spend_line(block: Mapping[str, Any]) -> str:
    """One console line for a spend block."""
    def usd(v: Any) -> str:
        return "no price given" if v is None else f"${v:.6f}"

    c = block.get("cached") or {}
    line = (f"spent: {block['calls']} call(s), {block['prompt_tokens']} prompt + "
            f"{block['completion_tokens']} completion tokens, {usd(block['cost_usd'])}")
    if c.get("calls"):
        line += (f"; cached: {c['calls']} response(s), {c['prompt_tokens']} + "
                 f"{c['completion_tokens']} tokens, originally {usd(c.get('cost_usd'))} "
                 "(0 for this run)")
    if block.get("failed_calls"):
        line += f"; {block['failed_calls']} failed call(s) without usage"
    return line
