"""RGB labels and rates on hand-made predictions.

Expected values are worked out by hand from chen700564/RGB @ 65ec39e evalue.py (``predict``,
``checkanswer`` and the scoring loop), fact_evalue.py and reject_evalue.py.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragmeter.rgb import _metrics as qa_rgb


@pytest.mark.parametrize(("prediction", "answer", "zh", "labels", "factlabel"), [
    # plain string answer, found / not found
    ("The answer is Tampa, Florida.", "Tampa, Florida", False, (1,), 0),
    ("It was in Glendale.", "Tampa, Florida", False, (0,), 0),
    # uppercase in prediction and answer: both lowercased by checkanswer
    ("TAMPA, FLORIDA", "Tampa, Florida", False, (1,), 0),
    ("tampa, florida", "TAMPA, Florida", False, (1,), 0),
    # multi-part answers: one label per component; list = alternatives
    ("Jan 3 and Jan 12", ["Jan 3", "Jan 12"], False, (1, 1), 0),
    ("Jan 3 only", ["Jan 3", "Jan 12"], False, (1, 0), 0),  # partial
    ("on January 12", [["Jan 12", "January 12"], "2022"], False, (1, 0), 0),
    ("on January 12, 2022", [["Jan 12", "January 12"], "2022"], False, (1, 1), 0),
    # zh: spaces removed before matching (only for zh data)
    ("1 月 3 日", ["1月3日"], True, (1,), 0),
    ("1 月 3 日", ["1月3日"], False, (0,), 0),
    # refusal markers are case-sensitive and checked before the answer
    ("I can not answer because of insufficient information.", "Tampa", False, (-1,), 0),
    ("Insufficient Information; maybe Tampa", "Tampa", False, (1,), 0),
    ("文档信息不足，因此我无法回答。", ["70"], True, (-1,), 0),
    ("insufficient information, but it is Tampa", "Tampa", False, (-1,), 0),
    # factual-error markers
    ("There are factual errors in the provided documents. Tampa, Florida.", "Tampa, Florida",
     False, (1,), 1),
    ("There are factual errors in the documents and insufficient information.", "Tampa",
     False, (-1,), 1),
    ("There are Factual Errors. Tampa", "Tampa", False, (1,), 0),  # case-sensitive marker
    ("提供文档的文档存在事实性错误。答案是70", ["70"], True, (1,), 1),
    # empty prediction
    ("", "Tampa", False, (0,), 0),
    ("", ["a", ["b", "c"]], False, (0, 0), 0),
])
def test_label_prediction(prediction, answer, zh, labels, factlabel):
    lab = qa_rgb.label_prediction(prediction, answer, remove_spaces=zh)
    assert lab.labels == labels
    assert lab.factlabel == factlabel
    assert lab.prediction == (prediction.replace(" ", "") if zh else prediction)


@pytest.mark.parametrize(("labels", "noise_rate", "correct"), [
    ((1,), 0.0, True), ((1, 1), 0.4, True), ((1, 0), 0.4, False), ((0,), 0.0, False),
    ((-1,), 1.0, True),   # rejection counts only at noise 1
    ((-1,), 0.8, False),
    ((1,), 1.0, True),    # at noise 1 an answer with every component also counts
    ((0,), 1.0, False), ((), 0.0, False),
])
def test_is_correct(labels, noise_rate, correct):
    assert qa_rgb.is_correct(labels, noise_rate) is correct


def test_accuracy_and_fact_rates():
    labels = [(1,), (0,), (-1,), (1, 1), (1, 0)]
    facts = [1, 1, 1, 0, 0]
    acc, tt = qa_rgb.accuracy(labels, 0.0)
    assert (acc, tt) == (0.4, 2)
    assert qa_rgb.accuracy(labels, 1.0) == (0.6, 3)
    fr = qa_rgb.fact_rates(labels, facts)
    # ED = 3/5; CR = (factlabel and 0 not in labels) / factlabel = {(1,), (-1,)} -> 2/3
    assert fr.fact_check_rate == pytest.approx(0.6)
    assert fr.correct_rate == pytest.approx(2 / 3)
    assert (fr.fact_tt, fr.correct_tt) == (3, 2)
    assert qa_rgb.fact_rates([(1,)], [0]).correct_rate == 0.0  # no factlabel -> 0 (original)
    assert qa_rgb.accuracy([], 0.0) == (None, 0)


def test_judged_rates():
    assert qa_rgb.judge_reject_rate([True, False, True, True]) == 0.75
    assert qa_rgb.judge_reject_rate([]) is None
    # fact_evalue.py: correct among detected requires 0 not in labels and 1 in labels
    assert qa_rgb.judged_correct_rate([True, True, False], [(1,), (-1,), (1,)]) == 0.5
    assert qa_rgb.judged_correct_rate([False], [(1,)]) == 0.0


@pytest.mark.parametrize(("prediction", "answer", "labels", "factlabel"), [
    ("The game was in Tampa.", "Tampa, Florida", (1,), 0),   # token overlap 1/2
    ("I don't know.", "Tampa", (-1,), 0),
    ("The documents contain errors; it is Tampa.", "Tampa", (1,), 1),
    ("Ｔａｍｐａ", "tampa", (1,), 0),  # NFKC
])
def test_lenient_labels(prediction, answer, labels, factlabel):
    lab = qa_rgb.lenient_labels(prediction, answer, remove_spaces=False)
    assert (lab.labels, lab.factlabel) == (labels, factlabel)


@given(st.text(max_size=60), st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=4))
def test_label_invariants(prediction, answer):
    lab = qa_rgb.label_prediction(prediction, answer, remove_spaces=False)
    assert lab.labels == (-1,) or (len(lab.labels) == len(answer)
                                  and set(lab.labels) <= {0, 1})
    # the answer itself, appended, is always found unless a refusal marker is present
    lab2 = qa_rgb.label_prediction(prediction + " " + " ".join(answer), answer,
                                   remove_spaces=False)
    assert lab2.labels == (-1,) or all(v == 1 for v in lab2.labels)
