"""Independent computations the repeats/groups/spend tests compare ragmeter against: Fleiss'
κ written from the formula (Fleiss 1971, eq. 2-7), the flip rate, and money from the scripted
server's own token counts (words, as tests/servers/scripted_openai.py counts them)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any


def fleiss(ratings: Sequence[Sequence[Any]]) -> float:
    """Fleiss' κ of items × raters (every item rated by the same number of raters)."""
    cats = sorted({r for row in ratings for r in row}, key=repr)
    n = len(ratings[0])
    big_n = len(ratings)
    counts = [[sum(1 for r in row if r == c) for c in cats] for row in ratings]
    p_j = [sum(row[j] for row in counts) / (big_n * n) for j in range(len(cats))]
    p_i = [(sum(x * x for x in row) - n) / (n * (n - 1)) for row in counts]
    p_bar = sum(p_i) / big_n
    p_e = sum(p * p for p in p_j)
    return (p_bar - p_e) / (1 - p_e)


def flip_rate(ratings: Sequence[Sequence[Any]]) -> float:
    return sum(1 for row in ratings if len(set(row)) > 1) / len(ratings)


def coin(*parts: Any, p: float = 0.5) -> bool:
    """A deterministic pseudo-random yes/no from the parts (the 'varied' judge)."""
    h = hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).digest()
    return h[0] / 256 < p


def server_money(bodies: Sequence[str], reply: Any, price_in: float, price_out: float
                 ) -> tuple[int, int, float]:
    """Prompt and completion tokens of the answered bodies, counted as the scripted server
    counts them (words), and their price per million."""
    prompt = completion = 0
    for raw in bodies:
        body = json.loads(raw)
        prompt += sum(len(str(m.get("content", "")).split()) for m in body["messages"])
        completion += len(reply(body).split())
    return prompt, completion, (prompt * price_in + completion * price_out) / 1e6
