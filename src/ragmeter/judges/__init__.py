"""What every judged number carries: the judge card and its validation, the degenerate-judge
alarm, repeats (stability) and spend."""

from __future__ import annotations

from ragmeter.judges._card import (
    ALARM_KINDS,
    AT_CHANCE,
    DEGENERATE_SHARE,
    MIN_PROBABILITY_SPREAD,
    alarm_flag,
    alarm_lines,
    card_line,
    check_chance,
    check_degenerate,
    check_validity,
    judge_card,
    known_validations,
    model_id,
    validation_statistic,
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
    "ALARM_KINDS",
    "AT_CHANCE",
    "DEGENERATE_SHARE",
    "MIN_PROBABILITY_SPREAD",
    "USAGE_KEYS",
    "add_usage",
    "alarm_flag",
    "alarm_lines",
    "card_line",
    "check_chance",
    "check_degenerate",
    "check_validity",
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
    "validation_statistic",
]
