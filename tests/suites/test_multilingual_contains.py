"""``contains``: the gold answer occurs in the prediction (ragmeter's own metric, not LBRAG's).
Every expected value is worked out by hand from the definition in
``ragmeter.multilingual._metrics.contains`` (LBRAG's normalization, whole words, characters
for ja and zh, the max over several golds)."""

from __future__ import annotations

import pytest

import ragmeter
from ragmeter.multilingual._metrics import METRICS, contains
from ragmeter.text._normalize import normalize_text

CASES = [
    # (prediction, gold answer(s), language, expected, why)
    ("It is Paris.", "Paris", "en", 1.0, "the gold's word inside a longer answer"),
    ("Paris", "It is Paris", "en", 0.0, "the prediction inside the gold does not count"),
    ("New York City", "new york", "en", 1.0, "several words in a row, case folded"),
    ("York New", "New York", "en", 0.0, "the words in another order"),
    ("the party", "art", "en", 0.0, "whole words only"),
    ("Das ist München!", "münchen", "de", 1.0, "Latin-1 letters are kept by normalization"),
    ("Столица — Москва", "москва", "ru", 1.0, "Cyrillic"),
    ("東京です", "東京", "ja", 1.0, "characters in a row"),
    ("京東です", "東京", "ja", 0.0, "the characters in another order"),
    ("北 京", "北京", "zh_cn", 1.0, "spaces ignored between characters"),
    ("Berlin, not Rome", ["Paris", "Rome"], "en", 1.0, "the max over several golds"),
    ("Berlin", ["Paris", "Rome"], "en", 0.0, "no gold occurs"),
    ("", "Paris", "en", 0.0, "an empty prediction contains no answer"),
    ("?!", "...", "en", 1.0, "both empty after normalization, as EM and F1"),
]


@pytest.mark.parametrize(("prediction", "gold", "lang", "expected", "why"), CASES)
def test_contains_golden(prediction, gold, lang, expected, why) -> None:
    golds = [gold] if isinstance(gold, str) else gold
    pn = normalize_text(prediction)
    assert max(contains(pn, normalize_text(g), lang) for g in golds) == expected, why
    # the scorer's item and mean: the same value through the table's row
    rows = [{"sample_id": "1", "sample_lang": lang, "system": "s", "gold_answer": gold,
             "pred_answer": prediction}]
    result = ragmeter.multilingual.score(rows)
    assert result.items[0]["contains"] == expected, why
    assert result.summary["metrics"]["s"]["contains"] == expected
    assert METRICS.get("contains").fn is contains
