"""Agreement of a critic with reference ratings: QWK, exact agreement, MAE, bootstrap CIs."""

from __future__ import annotations

import pytest

from ragmeter.metrics.agreement import (
    agreement,
    exact_agreement,
    mean_absolute_error,
    quadratic_weighted_kappa,
)

A = [1, 2, 3, 4, 5, 5, 4, 3, 2, 1, 3, 4]
B = [1, 2, 4, 4, 5, 4, 4, 2, 2, 1, 5, 3]


@pytest.mark.parametrize("a, b, expected", [
    # sklearn.metrics.cohen_kappa_score(A, B, weights="quadratic", labels=[1, 2, 3, 4, 5])
    # = 0.8174904942965779 (scikit-learn 1.9.1, computed once and frozen here).
    (A, B, 0.8174904942965779),
    ([5, 5, 5], [5, 5, 5], 1.0),  # one shared category: the cohen_kappa convention
    ([5, 5, 5, 5], [4, 5, 4, 5], 0.0),  # a constant rater agrees no better than chance
    ([1, 5], [5, 1], -1.0),
])
def test_qwk_table(a, b, expected):
    assert quadratic_weighted_kappa(a, b) == pytest.approx(expected)


def test_qwk_matches_sklearn():
    sk = pytest.importorskip("sklearn.metrics")
    assert quadratic_weighted_kappa(A, B) == pytest.approx(
        sk.cohen_kappa_score(A, B, weights="quadratic", labels=[1, 2, 3, 4, 5]))


def test_exact_and_mae():
    assert exact_agreement(A, B) == pytest.approx(7 / 12)
    assert mean_absolute_error(A, B) == pytest.approx(6 / 12)
    assert exact_agreement([], []) is None and mean_absolute_error([], []) is None
    assert quadratic_weighted_kappa([], []) is None


def test_rating_off_the_scale_is_an_error():
    with pytest.raises(ValueError):
        quadratic_weighted_kappa([0, 1], [1, 1])


def test_agreement_cis_contain_the_estimate_and_are_deterministic():
    a1 = agreement(A, B, n_resamples=300, seed=7)
    a2 = agreement(A, B, n_resamples=300, seed=7)
    assert a1 == a2 and a1.n == 12
    for value, ci in ((a1.qwk, a1.qwk_ci), (a1.exact, a1.exact_ci), (a1.mae, a1.mae_ci)):
        assert ci is not None and ci[0] <= value <= ci[1]
    assert agreement([3], [3]).qwk_ci is None  # no CI from one item
    empty = agreement([], [])
    assert empty.n == 0 and empty.qwk is None and empty.mean_rater is None
