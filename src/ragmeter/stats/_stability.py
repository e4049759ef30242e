"""How stable a judge is when it judges the same item several times (``--repeats N``).

Pure functions over ``{item: [verdict of repeat 1, repeat 2, ...]}`` (verdicts are any
hashable labels: grades, yes/no, rounded scores; None = that repeat is unscored and left out):

* **flip rate**: share of items whose verdict is not the same in every scored repeat;
* **per-item agreement**: share of an item's repeats that give its most common verdict,
  averaged over items;
* **Fleiss' κ** (Fleiss 1971, "Measuring nominal scale agreement among many raters"), with
  the repeats as raters, over the items with the full number of scored repeats.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

__all__ = ["fleiss_kappa", "item_agreement", "repeat_agreement"]


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' κ from an items × categories table of rating counts (every row sums to the
    same number of raters n ≥ 2).  None when undefined (no items, or every rating in one
    category, where chance agreement is 1)."""
    rows = [list(r) for r in counts if sum(r) > 0]
    if not rows:
        return None
    n = sum(rows[0])
    if n < 2 or any(sum(r) != n for r in rows):
        raise ValueError("fleiss_kappa: every item needs the same number (>= 2) of ratings")
    n_items = len(rows)
    k = max(len(r) for r in rows)
    p_j = [sum(r[j] if j < len(r) else 0 for r in rows) / (n_items * n) for j in range(k)]
    p_i = [(sum(c * c for c in r) - n) / (n * (n - 1)) for r in rows]
    p_bar = sum(p_i) / n_items
    p_e = sum(p * p for p in p_j)
    if p_e >= 1.0:
        return None
    return (p_bar - p_e) / (1.0 - p_e)


def item_agreement(verdicts: Sequence[Hashable | None]) -> float | None:
    """Share of an item's scored repeats that give its most common verdict; None with fewer
    than two scored repeats (its stability is unknown)."""
    scored = [v for v in verdicts if v is not None]
    if len(scored) < 2:
        return None
    return Counter(scored).most_common(1)[0][1] / len(scored)


def repeat_agreement(verdicts_by_item: Mapping[str, Sequence[Hashable | None]],
                     repeats: int) -> dict[str, Any]:
    """Flip rate, mean per-item agreement and Fleiss' κ of a judge over ``repeats`` repeats.

    Items with fewer than two scored repeats are left out of the flip rate and agreement
    (their stability is unknown); Fleiss' κ uses the items with all ``repeats`` scored.
    """
    flips = 0
    agreements: list[float] = []
    full: list[list[Hashable]] = []
    for verdicts in verdicts_by_item.values():
        agreement = item_agreement(verdicts)
        if agreement is None:
            continue
        scored = [v for v in verdicts if v is not None]
        agreements.append(agreement)
        flips += 1 if agreement < 1.0 else 0
        if len(scored) == repeats:
            full.append(scored)
    n = len(agreements)
    categories = sorted({v for row in full for v in row}, key=repr)
    table = [[Counter(row)[c] for c in categories] for row in full]
    return {"repeats": repeats, "items": n,
            "flip_rate": flips / n if n else None,
            "mean_agreement": sum(agreements) / n if n else None,
            "fleiss_kappa": fleiss_kappa(table) if len(full) and repeats >= 2 else None,
            "fleiss_items": len(full)}
