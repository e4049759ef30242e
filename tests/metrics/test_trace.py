"""TRACe metrics (pure) and the RAGBench sentence keys.

Golden rows come from the released RAGBench test splits (row numbers are 1-based, as
``trace score --items`` writes them); the full-split check is tests/suites/trace.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragmeter.text._sentences import (
    key_documents,
    letter_index,
    letter_key,
    parse_key,
    render_keyed,
    split_sentences,
)
from ragmeter.trace._metrics import (
    TraceLabels,
    adherence,
    auroc_estimate,
    completeness,
    relevance,
    rmse_estimate,
    trace_scores,
    unsupported_keys,
    utilization,
)


@pytest.mark.parametrize("labels, expected", [
    # RAGBench hotpotqa row 1 (id 5abe65e25542993f32c2a101): 28 document sentences,
    # R = 2a 2b 3a 3b 3c, U = 2b 3a 3b, unsupported = a -> 0.17857..., 0.10714..., 0.6, False
    (TraceLabels(28, ("2a", "2b", "3a", "3b", "3c"), ("2b", "3a", "3b"), ("a",)),
     (5 / 28, 3 / 28, 0.6, False)),
    # empty relevant list -> completeness 1.0 (RAGBench convention)
    (TraceLabels(10, (), ("0a",), ()), (0.0, 0.1, 1.0, True)),
    # duplicates and stray keys count in the list length (relevance), not in the sets
    (TraceLabels(4, ("0a", "0a", "9z"), ("0a",), ()), (0.75, 0.25, 1 / 3, True)),
])
def test_trace_scores_table(labels, expected):
    s = trace_scores(labels)
    assert (s.relevance, s.utilization, s.completeness, s.adherence) == expected


def test_zero_document_sentences_is_an_error_not_nan():
    with pytest.raises(ValueError):
        relevance([], 0)
    with pytest.raises(ValueError):
        utilization(["0a"], 0)


@pytest.mark.parametrize("support, expected", [
    ([("a", True), ("b", True)], ()),
    ([("a", True), ("b", False)], ("b",)),
    ([("a", None), ("b", True)], ("a",)),  # null verdict is not fully supported
])
def test_unsupported_keys(support, expected):
    assert unsupported_keys(support) == expected
    assert adherence(expected) is (not expected)


keys = st.lists(st.sampled_from(["0a", "0b", "0c", "1a", "1b", "2a"]), max_size=8)


@given(keys, keys, st.integers(min_value=1, max_value=50))
def test_scores_in_range_and_never_nan(rel, util, extra):
    n = max(len(rel), len(util)) + extra
    for v in (relevance(rel, n), utilization(util, n), completeness(rel, util)):
        assert 0.0 <= v <= 1.0 and not math.isnan(v)


@given(st.lists(st.sampled_from(["0a", "0b", "1a"]), unique=True))
def test_complete_when_everything_relevant_is_used(rel):
    # distinct keys: with duplicates RAGBench's |set(R) & set(U)| / len(R) stays below 1
    assert completeness(rel, rel) == 1.0


def test_rmse_and_auroc_estimates():
    est = rmse_estimate([0.1, 0.2, 0.4], [0.1, 0.4, 0.0], n_resamples=200)
    assert est.value == pytest.approx(math.sqrt((0 + 0.04 + 0.16) / 3))
    assert est.n == 3 and est.ci_low <= est.value <= est.ci_high
    perfect = auroc_estimate([0.9, 0.8, 0.1, 0.2], [True, True, False, False], n_resamples=200)
    assert (perfect.value, perfect.ci_low, perfect.ci_high) == (1.0, 1.0, 1.0)
    one_class = auroc_estimate([0.1, 0.2], [True, True])
    assert one_class.value is None and one_class.n == 2


@pytest.mark.parametrize("index, key", [(0, "a"), (25, "z"), (26, "aa"), (51, "az"),
                                        (52, "ba"), (701, "zz"), (702, "aaa")])
def test_letter_keys_bijective_base26(index, key):
    # RAGBench emanual keys run 0ay, 0az, 0ba
    assert letter_key(index) == key and letter_index(key) == index


@given(st.integers(min_value=0, max_value=100_000))
def test_letter_key_roundtrip(i):
    assert letter_index(letter_key(i)) == i


@pytest.mark.parametrize("key, parsed", [("2c", (2, 2)), ("b", (None, 1)), ("0aa", (0, 26)),
                                         ("x1", None), ("", None)])
def test_parse_key(key, parsed):
    assert parse_key(key) == parsed


@pytest.mark.parametrize("lang, text, expected", [
    ("en", "Dr. Smith arrived at 5 p.m. on Jan. 3. It rained!",
     ["Dr. Smith arrived at 5 p.m. on Jan. 3.", "It rained!"]),
    ("en", "Title: A study\nPassage: First one. Second one.",
     ["Title: A study", "Passage: First one.", "Second one."]),
    ("de", "Das ist z.B. ein Test. Zweiter Satz.", ["Das ist z.B. ein Test.", "Zweiter Satz."]),
    ("ja", "今日は晴れです。明日は雨です。", ["今日は晴れです。", "明日は雨です。"]),
    ("zh", "今天天气很好。明天下雨！", ["今天天气很好。", "明天下雨！"]),
    ("en", "   ", []),
])
def test_split_sentences(lang, text, expected):
    assert split_sentences(text, lang) == expected


def test_key_and_render_documents():
    docs = key_documents(["One. Two.", "Three."])
    assert docs == [[("0a", "One."), ("0b", "Two.")], [("1a", "Three.")]]
    assert render_keyed(docs) == "0a. One.\n0b. Two.\n1a. Three."
    assert render_keyed([("a", "Yes.")]) == "a. Yes."
