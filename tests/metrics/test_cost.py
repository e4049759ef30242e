"""CNBE, LBRAG's cost-normalized bridging efficiency: (F1 - baseline F1) / cost, 0.0 at cost 0
(LBRAG experiments/scripts/experiment.py).  The scorer uses this same function on columns, so
the LBRAG golden test (tests/suites/test_multilingual_golden.py) covers it end to end."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ragmeter
from ragmeter.multilingual._cost import cnbe, cnbe_many


@pytest.mark.parametrize(("f1", "base", "cost", "expected"), [
    (0.8, 0.5, 100.0, 0.003),     # improvement per token
    (0.5, 0.8, 100.0, -0.003),    # a worse bridge is negative
    (0.9, 0.1, 0.0, 0.0),         # zero cost: 0.0 by LBRAG's rule, never inf
    (0.5, 0.5, 7.0, 0.0),
])
def test_cnbe(f1: float, base: float, cost: float, expected: float) -> None:
    assert cnbe(f1, base, cost) == pytest.approx(expected)
    assert cnbe_many([f1], [base], [cost])[0] == pytest.approx(expected)


def test_absent_cost_stays_absent() -> None:
    assert math.isnan(cnbe_many([0.5], [0.1], [np.nan])[0])


def test_scorer_cnbe_is_this_formula() -> None:
    rows = [{"sample_id": "1", "sample_lang": "en", "system": "direct", "gold_answer": "a b",
             "pred_answer": "a", "translate_tokens": 0},
            {"sample_id": "1", "sample_lang": "en", "system": "bridge", "gold_answer": "a b",
             "pred_answer": "a b", "translate_tokens": 50}]
    items = {i["system"]: i for i in ragmeter.multilingual.score(rows).items}
    assert items["bridge"]["cnbe"] == cnbe(items["bridge"]["f1"], items["direct"]["f1"], 50)
    assert items["bridge"]["cnbe"] > 0
