"""The level of every bootstrap interval: a 90% interval is a 90% interval.

The tails are taken in one place, :func:`ragmeter.stats.percentile_interval`; these tests pin
its width on a fixed resample set against values computed by hand from the percentile
definition, and check that each bootstrap interval passes its ``confidence`` through (the
resampling is replaced by that fixed set, so the golden values hold exactly).
"""

from __future__ import annotations

import pytest

from ragmeter import stats
from ragmeter.stats import _core

# A fixed resample set and its percentile interval, by hand.  numpy's default quantile
# (Hyndman & Fan definition 7): q at position h = (n - 1) p, interpolated linearly.  n = 5:
#   90%: p = 0.05 -> h = 0.2 -> 0 + 0.2 * 10 = 2.0;   p = 0.95 -> h = 3.8 -> 30 + 0.8 * 10 = 38.0
#   95%: p = 0.025 -> h = 0.1 -> 1.0;                 p = 0.975 -> h = 3.9 -> 39.0
#   50%: p = 0.25 -> h = 1.0 -> 10.0;                 p = 0.75 -> h = 3.0 -> 30.0
RESAMPLES = [30.0, 0.0, 40.0, 10.0, 20.0]  # order does not matter
GOLDEN = {0.90: (2.0, 38.0), 0.95: (1.0, 39.0), 0.50: (10.0, 30.0)}


@pytest.mark.parametrize("confidence", sorted(GOLDEN))
def test_percentile_interval_by_hand(confidence):
    assert stats.percentile_interval(RESAMPLES, confidence) == pytest.approx(GOLDEN[confidence])


def test_percentile_interval_of_0_to_100():
    """101 equally spaced estimates: the q-quantile is 100 q exactly (h = 100 p)."""
    estimates = [float(i) for i in range(101)]
    assert stats.percentile_interval(estimates, 0.90) == pytest.approx((5.0, 95.0))
    assert stats.percentile_interval(estimates, 0.95) == pytest.approx((2.5, 97.5))


@pytest.mark.parametrize("confidence", [-0.1, 1.5])
def test_a_level_outside_0_1_is_refused(confidence):
    with pytest.raises(ValueError, match="confidence must be between 0 and 1"):
        stats.percentile_interval(RESAMPLES, confidence)


@pytest.fixture
def fixed_resamples(monkeypatch):
    """Every bootstrap draws RESAMPLES as its resampled means."""
    import numpy as np

    monkeypatch.setattr(_core, "_resample_means",
                        lambda a, n_resamples, rng: np.asarray(RESAMPLES))


@pytest.mark.parametrize("confidence", sorted(GOLDEN))
def test_each_bootstrap_interval_has_the_level_it_was_asked(fixed_resamples, confidence):
    values, other = [0.0, 1.0, 0.5, 0.25], [0.0, 0.0, 0.0, 1.0]
    expected = pytest.approx(GOLDEN[confidence])
    assert stats.bootstrap_ci(values, confidence=confidence) == expected
    paired = stats.paired_bootstrap(values, other, confidence=confidence)
    assert (paired.ci_low, paired.ci_high) == expected
    perm = stats.paired_permutation(values, other, n_resamples=10, confidence=confidence)
    assert (perm.ci_low, perm.ci_high) == expected


@pytest.mark.parametrize("confidence", sorted(GOLDEN))
def test_the_kappa_interval_has_the_level_it_was_asked(monkeypatch, confidence):
    kappas = iter(RESAMPLES)
    monkeypatch.setattr(_core, "cohen_kappa", lambda a, b: next(kappas))
    interval = stats.cohen_kappa_ci(["a", "b"], ["a", "a"], n_resamples=len(RESAMPLES),
                                    confidence=confidence)
    assert interval == pytest.approx(GOLDEN[confidence])


def test_a_90_percent_interval_is_narrower_than_the_95_percent_one():
    """On real resamples (seeded): the 90% interval lies strictly inside the 95% one."""
    values = [0.0, 1.0, 1.0, 0.0, 1.0, 0.5, 0.2, 0.9, 0.3, 0.7]
    lo90, hi90 = stats.bootstrap_ci(values, confidence=0.90)
    lo95, hi95 = stats.bootstrap_ci(values, confidence=0.95)
    assert lo95 < lo90 < hi90 < hi95
