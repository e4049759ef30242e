"""Reading a judge's replies: a score on the scale, or unscored with a reason (malformed JSON,
missing score, missing criterion, not a number, out of scale); choice probabilities become
the most probable point and the probability-weighted score (G-Eval)."""

from __future__ import annotations

import math

import pytest

from ragmeter.backends._types import Response
from ragmeter.criteria import load_criteria
from ragmeter.criteria._judge import _choice_fields, parse_combined, parse_reply, read_score
from ragmeter.criteria._metrics import expected_score

REL, COR, COMP = load_criteria(["relevance", "correctness", "completeness"]).criteria


@pytest.mark.parametrize(("reply", "score", "reason"), [
    ('{"score": 4, "explanation": "fine"}', 4, None),
    ('```json\n{"score": "5", "explanation": "x"}\n```', 5, None),   # fenced, text number
    ('Sure! {"score": 2.0} hope that helps', 2, None),                 # text around, 2.0
    ('{"score": 3, "explanation": "cut off in the mid', 3, None),      # truncated, repaired
    ("4", None, "malformed_json"),                                     # no object
    ("I would give it a four.", None, "malformed_json"),
    ('{"rating": 4}', None, "missing_score"),
    ('{"score": "four"}', None, "not_a_number"),
    ('{"score": null}', None, "not_a_number"),
    ('{"score": true}', None, "not_a_number"),
    ('{"score": 6}', None, "out_of_scale"),
    ('{"score": 0}', None, "out_of_scale"),
    ('{"score": 3.5}', None, "out_of_scale"),
])
def test_per_criterion_replies(reply, score, reason) -> None:
    got = parse_reply(reply, REL)
    assert (got.score, got.reason) == (score, reason)
    assert got.ok == (score is not None)
    if reason:
        assert got.detail


def test_explanations_are_kept_even_when_the_score_is_bad() -> None:
    assert parse_reply('{"score": 4, "explanation": "on topic"}', REL).explanation == "on topic"
    bad = parse_reply('{"score": 9, "reason": "great"}', REL)
    assert bad.reason == "out_of_scale" and bad.explanation == "great"


def test_combined_replies_each_criterion_on_its_own_scale() -> None:
    reply = ('{"relevance": {"score": 5, "explanation": "a"}, "correctness": 3, '
             '"completeness": {"score": 3}}')
    got = parse_combined(reply, [REL, COR, COMP])
    assert (got["relevance"].score, got["relevance"].explanation) == (5, "a")
    assert got["correctness"].score == 3                       # a bare number is read
    assert got["completeness"].reason == "out_of_scale"          # 3 is not on 0..2
    missing = parse_combined('{"relevance": {"score": 5}}', [REL, COR])
    assert missing["correctness"].reason == "missing_criterion"
    assert "relevance" in (missing["correctness"].detail or "")
    nothing = parse_combined("no json here", [REL, COR])
    assert {p.reason for p in nothing.values()} == {"malformed_json"}
    no_score = parse_combined('{"relevance": {"explanation": "x"}}', [REL])
    assert no_score["relevance"].reason == "missing_score"


def test_read_score_accepts_whole_numbers_only_on_the_scale() -> None:
    assert read_score(2, COMP).score == 2
    assert read_score("0", COMP).score == 0
    assert read_score(float("nan"), COMP).reason == "not_a_number"
    assert read_score(-1, COMP).reason == "out_of_scale"


def test_choice_probabilities_give_the_best_point_and_the_expected_score() -> None:
    # renormalized over the points; "x" is not a point and is ignored
    probs = {"1": 0.1, "2": 0.1, "3": 0.2, "4": 0.2, "5": 0.3, "x": 0.1}
    got = _choice_fields(REL, Response("5", choice_probs=probs, choice_method="logprobs"))
    assert got["status"] == "ok" and got["score"] == 5
    total = 0.9
    assert got["score_probs"] == pytest.approx({k: v / total for k, v in probs.items()
                                                if k != "x"})
    # by hand: (1*.1 + 2*.1 + 3*.2 + 4*.2 + 5*.3) / .9 = 3.2 / .9
    assert got["expected_score"] == pytest.approx(3.2 / 0.9)
    assert expected_score({1: 0.1, 2: 0.1, 3: 0.2, 4: 0.2, 5: 0.3}) == pytest.approx(3.2 / 0.9)
    tie = _choice_fields(COMP, Response("0", choice_probs={"0": 0.5, "2": 0.5}))
    assert tie["score"] == 0 and tie["expected_score"] == pytest.approx(1.0)  # ties: lowest
    none = _choice_fields(COMP, Response("", choice_probs=None, choice_method="no_logprobs"))
    assert none["reason"] == "no_choice_probs" and "no_logprobs" in none["detail"]
    assert all(math.isfinite(v) for v in got["score_probs"].values())
