"""What every judged number carries: the judge card and its validation, the degenerate-judge
alarm, repeats (stability) and spend."""

from __future__ import annotations

from ragmeter.judges._card import (
    DEGENERATE_SHARE,
    MIN_PROBABILITY_SPREAD,
    alarm_lines,
    card_line,
    check_chance,
    check_degenerate,
    judge_card,
    known_validations,
    model_id,
)
from ragmeter.judges._repeats import (
    check_repeats,
    deterministic_stability,
    repeat_id,
    repeat_requests,
)
from ragmeter.judges._spend import (
    USAGE_KEYS,
    add_usage,
    money,
    spend,
    usage_of,
)

__all__ = [
    "DEGENERATE_SHARE",
    "MIN_PROBABILITY_SPREAD",
    "USAGE_KEYS",
    "add_usage",
    "alarm_lines",
    "card_line",
    "check_chance",
    "check_degenerate",
    "check_repeats",
    "deterministic_stability",
    "judge_card",
    "known_validations",
    "model_id",
    "money",
    "repeat_id",
    "repeat_requests",
    "spend",
    "usage_of",
]
