"""Rubric aggregation and judge-reply parsers (RAGaliq, LBRAG) on canned values."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragmeter.rubric import _metrics as rubric


# Hand-computed from calculate_results.py's formula: mean weight, squared.
@pytest.mark.parametrize(("grades", "expected"), [
    ([5, 5], 1.0),
    ([1, 1], 0.0),
    ([0], 0.16),  # 0.4 ** 2: "nothing found" is worth more than a wrong answer
    ([5, 1], 0.25),
    ([4, 3, 2], (1.6 / 3) ** 2),
    ([], None),
])
def test_weighted_score(grades, expected):
    got = rubric.weighted_score(grades)
    assert got == expected if expected is None else math.isclose(got, expected)


def test_summarize_zero_handling():
    s = rubric.summarize([0, 0, 5, 3])
    assert s.mean_grade == 4.0 and s.median_grade == 4.0  # non-zero grades only
    assert s.percentage == 80.0
    assert s.percentage_with_zero == 40.0  # all grades
    assert s.counts == {"5": 1, "4": 0, "3": 1, "2": 0, "1": 0, "0": 2}


def test_summarize_all_zero_has_no_mean():
    s = rubric.summarize([0, 0])
    assert s.mean_grade is None and s.median_grade is None and s.percentage is None
    assert s.percentage_with_zero == 0.0


def test_summarize_rejects_out_of_range():
    with pytest.raises(ValueError):
        rubric.summarize([6])


@given(st.lists(st.sampled_from(rubric.GRADES), min_size=1, max_size=50))
def test_invariants(grades):
    s = rubric.summarize(grades)
    assert 0.0 <= s.weighted_score <= 1.0
    assert 0.0 <= s.percentage_with_zero <= 100.0
    assert sum(s.counts.values()) == s.n == len(grades)
    if s.mean_grade is not None:
        assert 1.0 <= s.mean_grade <= 5.0 and not math.isnan(s.mean_grade)


# Strict = RAGaliq eval.py::judge: split on [RESULT] into exactly two parts, int() the second.
@pytest.mark.parametrize(("reply", "grade", "reason"), [
    ("Feedback: fine. [RESULT] 4", 4, None),
    ("Feedback: fine.\n[RESULT]  5  ", 5, None),
    ("Feedback: fine. [RESULT] +3", 3, None),  # int("+3") works in the original too
    ("Feedback: no marker, score 4", None, "no_result_marker"),
    ("A [RESULT] 4 [RESULT] 5", None, "several_result_markers"),
    ("Feedback: ok [RESULT] 4/5", None, "not_an_integer"),
    ("Feedback: ok [RESULT] 4. The answer is right.", None, "not_an_integer"),
    ("Feedback: ok [RESULT] 4.0", None, "not_an_integer"),
    ("Feedback: ok [RESULT] 7", None, "out_of_range"),
    ("Score: 4", None, "no_result_marker"),
    ("", None, "empty_reply"),
    ("   \n", None, "empty_reply"),
])
def test_parse_result_strict(reply, grade, reason):
    p = rubric.parse_result_strict(reply)
    assert (p.grade, p.reason) == (grade, reason)


@pytest.mark.parametrize(("reply", "grade", "reason"), [
    ("Feedback: ok [RESULT] 4", 4, None),
    ("Feedback: ok [RESULT] 4/5", 4, None),
    ("Feedback: ok [RESULT] 4. The answer is right.", 4, None),
    ("A [RESULT] 4 [RESULT] 4", 4, None),
    ("A [RESULT] 4 [RESULT] 5", None, "ambiguous_grade"),
    ("Score: 4", 4, None),
    ("Grade: 3/5 because it misses a date", 3, None),
    ("**5**", 5, None),
    ("4", 4, None),
    ("Score: 4. Later: Score: 2", None, "ambiguous_grade"),
    ("The answer is good.", None, "no_grade_found"),
    ("[RESULT] excellent", None, "not_an_integer"),
    ("Score: 9", None, "out_of_range"),
    ("", None, "empty_reply"),
])
def test_parse_grade_lenient(reply, grade, reason):
    p = rubric.parse_grade_lenient(reply)
    assert (p.grade, p.reason) == (grade, reason)


# LBRAG: the first {...} object, score clipped to [0, 1]; failures are reasons, not 0.0.
@pytest.mark.parametrize(("reply", "score", "reason", "clipped"), [
    ('{"score": 0.8, "explanation": "same"}', 0.8, None, False),
    ('Sure! {"score": 1, "explanation": "x"} hope this helps', 1.0, None, False),
    ('{"score": 1.7, "explanation": "x"}', 1.0, None, True),
    ('{"score": -0.2}', 0.0, None, True),
    ('{"score": 0.5} {"score": 0.9}', 0.5, None, False),
    ('{"score": "0.25"}', 0.25, None, False),
    ('{"explanation": "no score"}', None, "no_score", False),
    ('{"score": "high"}', None, "not_a_number", False),
    ('{"score": 0.8, }', None, "invalid_json", False),
    ("score 0.8", None, "no_json_object", False),
    ("", None, "empty_reply", False),
])
def test_parse_semantic_reply(reply, score, reason, clipped):
    from ragmeter.multilingual._semantic import parse_semantic_reply

    p = parse_semantic_reply(reply)
    assert (p.score, p.reason, p.clipped) == (score, reason, clipped)


def test_expected_grade_renormalizes():
    assert rubric.expected_grade({"4": 0.5, "5": 0.5}) == 4.5
    assert rubric.expected_grade({"0": 2.0, "5": 2.0}) == 2.5
    assert rubric.expected_grade({}) is None


def test_repeat_stability():
    st_ = rubric.repeat_stability({"a": [5, 5, 5], "b": [3, 4, 5], "c": [2]}, 3)
    assert st_.items == 2  # c has one scored repeat only
    assert st_.changed_share == 0.5
    assert st_.mean_spread == 1.0
    assert st_.per_item_spread == {"a": 0, "b": 2}
