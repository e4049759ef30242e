"""Pure reliability metrics (ragmeter issue 7): tables of hand-worked cases and invariants."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragmeter.reliability._metrics import (
    FLAGGED,
    Annotation,
    Consensus,
    compare_to_qc,
    evaluator_reliability,
    percent,
    pooled_reliability,
    qc_consensus,
)

A = Annotation(choice="A")
B = Annotation(choice="B")
TIE = Annotation(choice="Tie")
FLAG = Annotation(flagged=True)
SKIP = Annotation(skipped=True)


def qc(a: Annotation) -> Consensus:
    return qc_consensus([a])


# (evaluator, QC, expected (status, flag_mismatch, both_flagged, applicable, match));
# each row worked by hand from issue 7's definitions.
COMPARE = [
    (A, A, ("ok", False, False, True, True)),  # same choice
    (A, B, ("ok", False, False, True, False)),  # different choice
    (TIE, TIE, ("ok", False, False, True, True)),  # tie agreed
    (TIE, A, ("ok", False, False, True, False)),  # tie against a preference
    (FLAG, A, ("ok", True, False, False, False)),  # evaluator flagged, QC did not
    (A, FLAG, ("ok", True, False, False, False)),  # QC flagged, evaluator did not
    (FLAG, FLAG, ("ok", False, True, False, False)),  # both flagged: in total, not applicable
    (Annotation(flagged=True, choice="A"), FLAG, ("ok", False, True, False, False)),
    (SKIP, A, ("skipped", False, False, False, False)),  # evaluator skipped
    (Annotation(choice="A", skipped=True), A, ("skipped", False, False, False, False)),
    (A, SKIP, ("skipped", False, False, False, False)),  # QC skipped
]


@pytest.mark.parametrize(("ev", "key", "expected"), COMPARE)
def test_compare_to_qc(ev, key, expected):
    o = compare_to_qc(ev, qc(key))
    assert (o.status, o.flag_mismatch, o.both_flagged, o.applicable, o.match) == expected


def test_compare_without_consensus():
    o = compare_to_qc(A, qc_consensus([A, B]))
    assert o.status == "qc_no_consensus"


# (QC annotations, expected status, expected label or None, votes, agreeing)
CONSENSUS = [
    ([A], "ok", "A", 1, 1),  # a single QC is its own consensus
    ([FLAG], "ok", FLAGGED, 1, 1),
    ([SKIP], "skipped", None, 0, 0),
    ([A, A, B], "ok", "A", 3, 2),  # 2 of 3
    ([A, B, TIE], "no_consensus", None, 3, 1),  # three-way split
    ([A, B], "no_consensus", None, 2, 1),  # a tie between two QC is no majority
    ([A, A, B, B], "no_consensus", None, 4, 2),  # 2 vs 2: exactly half is not a majority
    ([FLAG, FLAG, A], "ok", FLAGGED, 3, 2),  # majority of flags
    ([A, SKIP, B], "no_consensus", None, 2, 1),  # skipped QC does not vote
    ([B, SKIP, SKIP], "ok", "B", 1, 1),
    ([SKIP, SKIP], "skipped", None, 0, 0),
    ([Annotation(flagged=True, choice="A"), FLAG], "ok", FLAGGED, 2, 2),  # choice ignored
]


@pytest.mark.parametrize(("annotations", "status", "label", "votes", "agreeing"), CONSENSUS)
def test_qc_consensus(annotations, status, label, votes, agreeing):
    c = qc_consensus(annotations)
    assert c.status == status
    assert (c.annotation.label() if c.annotation else None) == label
    assert (c.votes, c.agreeing) == (votes, agreeing)


def test_qc_consensus_needs_annotations():
    with pytest.raises(ValueError):
        qc_consensus([])


def test_evaluator_reliability_hand_worked():
    """Items i1..i9 of tests/suites/reliability/test_reliability_scoring.py, evaluator ann1.

    total 7 (i6, i7 skipped); flag mismatches i5, i8 -> 2/7; applicable i1, i2, i3, i9;
    matches i1, i3 -> 2/4.  kappa: ann [A, A, Tie, A] vs QC [A, B, Tie, Tie]: po = 1/2,
    pe = 3/4*1/4 + 0*1/4 + 1/4*2/4 = 5/16, kappa = (8/16 - 5/16) / (11/16) = 3/11.
    Wilson 95% of 2/4: (0.15004, 0.84996), from the closed form with z = 1.959964.
    """
    pairs = [
        (A, qc(A)), (A, qc(B)), (TIE, qc(TIE)), (FLAG, qc(FLAG)), (FLAG, qc(A)),
        (Annotation(choice="B", skipped=True), qc(B)), (A, qc(SKIP)), (B, qc(FLAG)),
        (A, qc(TIE)),
    ]
    r = evaluator_reliability(pairs)
    assert (r.total_items, r.applicable_items, r.matches) == (7, 4, 2)
    assert (r.flag_mismatch_items, r.both_flagged_items, r.skipped_items) == (2, 1, 2)
    assert r.reliability == 0.5
    assert r.flag_mismatch_pct == pytest.approx(200 / 7)
    assert r.cohen_kappa == pytest.approx(3 / 11)
    assert r.reliability_ci95 == pytest.approx((0.15003898915214947, 0.8499610108478506))
    assert r.low_sample is True


def test_zero_applicable_items_is_null_not_nan():
    r = evaluator_reliability([(FLAG, qc(A)), (A, qc(FLAG)), (FLAG, qc(FLAG))])
    assert (r.total_items, r.applicable_items, r.matches) == (3, 0, 0)
    assert r.reliability is None and r.reliability_ci95 is None and r.cohen_kappa is None
    assert r.flag_mismatch_pct == pytest.approx(200 / 3)


def test_no_items_at_all():
    r = evaluator_reliability([])
    assert r.total_items == 0 and r.flag_mismatch_pct is None and r.reliability is None


@pytest.mark.parametrize(("applicable", "threshold", "low"), [(29, 30, True), (30, 30, False),
                                                              (0, 0, False), (1, 2, True)])
def test_low_sample_threshold(applicable, threshold, low):
    r = evaluator_reliability([(A, qc(A))] * applicable, min_applicable=threshold)
    assert r.low_sample is low


def test_pooled_is_sum_of_matches_over_sum_of_applicable():
    good = evaluator_reliability([(A, qc(A))] * 9 + [(A, qc(B))])  # 9/10
    bad = evaluator_reliability([(A, qc(B))] * 2)  # 0/2
    empty = evaluator_reliability([(FLAG, qc(A))])  # 0/0
    assert pooled_reliability([good, bad, empty]) == pytest.approx(9 / 12)
    assert pooled_reliability([empty]) is None


@pytest.mark.parametrize(("part", "whole", "expected"), [(1, 4, 25.0), (0, 3, 0.0), (0, 0, None)])
def test_percent(part, whole, expected):
    assert percent(part, whole) == expected


annotations = st.one_of(
    st.builds(Annotation, flagged=st.just(False), choice=st.sampled_from(["A", "B", "Tie"]),
              skipped=st.booleans()),
    st.builds(Annotation, flagged=st.just(True), choice=st.none(), skipped=st.booleans()),
)


@given(st.lists(st.tuples(annotations, st.lists(annotations, min_size=1, max_size=3)),
                max_size=40))
def test_invariants(rows):
    pairs = [(a, qc_consensus(q)) for a, q in rows]
    r = evaluator_reliability(pairs)
    assert 0 <= r.matches <= r.applicable_items <= r.total_items <= len(pairs)
    assert r.total_items + r.skipped_items + r.qc_no_consensus_items == len(pairs)
    assert r.flag_mismatch_items + r.both_flagged_items + r.applicable_items == r.total_items
    for value in (r.reliability, r.flag_mismatch_pct, r.cohen_kappa):
        assert value is None or math.isfinite(value)
    if r.reliability is not None:
        assert 0.0 <= r.reliability <= 1.0
        lo, hi = r.reliability_ci95
        assert lo <= r.reliability <= hi


@given(st.lists(annotations, min_size=1, max_size=40))
def test_identical_to_qc_is_perfect(items):
    r = evaluator_reliability([(a, qc(a)) for a in items])
    assert r.flag_mismatch_items == 0
    assert r.reliability in (None, 1.0)
    assert r.cohen_kappa in (None, 1.0)
