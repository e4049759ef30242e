"""Statistics helpers against independent calculations (Python's statistics module, brute-force
AUROC over all pairs, textbook formulas)."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter import stats

FLOATS = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(st.lists(FLOATS, min_size=2, max_size=50))
def test_mean_std_match_statistics_module(values: list[float]) -> None:
    assert stats.mean(values) == pytest.approx(statistics.fmean(values), rel=1e-9, abs=1e-6)
    assert stats.sample_std(values) == pytest.approx(statistics.stdev(values), rel=1e-7, abs=1e-6)


def test_conventions_for_small_n() -> None:
    assert stats.mean([]) is None
    assert stats.sample_std([]) is None
    assert stats.sample_std([3.0]) == 0.0  # LBRAG: 0.0 when n < 2


def _auroc_pairs(scores: list[float], labels: list[int]) -> float:
    pos = [s for s, y in zip(scores, labels, strict=False) if y]
    neg = [s for s, y in zip(scores, labels, strict=False) if not y]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.booleans()), min_size=2, max_size=40))
def test_auroc_equals_pairwise_definition(rows: list[tuple[int, bool]]) -> None:
    scores = [float(s) for s, _ in rows]
    labels = [int(y) for _, y in rows]
    got = stats.auroc(scores, labels)
    if 0 < sum(labels) < len(labels):
        assert got == pytest.approx(_auroc_pairs(scores, labels), abs=1e-12)
    else:
        assert got is None


def test_rmse_by_definition() -> None:
    pred, true = [0.1, 0.5, 0.9], [0.0, 0.5, 1.0]
    assert stats.rmse(pred, true) == pytest.approx(math.sqrt((0.01 + 0 + 0.01) / 3))
    assert stats.rmse([], []) is None


def test_bootstrap_ci_contains_mean_and_is_deterministic() -> None:
    rng = np.random.default_rng(0)
    values = rng.random(200)
    lo, hi = stats.bootstrap_ci(values, seed=7)
    assert lo < values.mean() < hi
    assert stats.bootstrap_ci(values, seed=7) == (lo, hi)
    assert stats.bootstrap_ci([]) is None
    assert stats.bootstrap_ci([0.5, 0.5]) == (0.5, 0.5)


def test_paired_tests_detect_a_real_difference_and_not_a_null_one() -> None:
    rng = np.random.default_rng(1)
    base = rng.random(300)
    better = np.clip(base + 0.1 + rng.normal(0, 0.05, 300), 0, 1)
    t = stats.paired_bootstrap(better, base)
    assert t.p_value < 0.01 and t.ci_low > 0
    p = stats.paired_permutation(better, base)
    assert p.p_value < 0.01
    same = stats.paired_permutation(base, base.copy())
    assert same.p_value == 1.0 and same.mean_diff == 0.0


@pytest.mark.parametrize(
    ("k", "n", "lo", "hi"),
    [
        # Wilson 95% intervals, from the closed formula with z = 1.959964 (Newcombe 1998, Table I
        # gives 81/263 -> 0.2553-0.3662).
        (81, 263, 0.2553, 0.3662),
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
    ],
)
def test_wilson_interval(k: int, n: int, lo: float, hi: float) -> None:
    got = stats.wilson_interval(k, n)
    assert got is not None
    assert got[0] == pytest.approx(lo, abs=1e-4)
    assert got[1] == pytest.approx(hi, abs=1e-4)
    assert stats.wilson_interval(0, 0) is None


def test_cohen_kappa_textbook() -> None:
    # 2x2 example: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> po=0.7, pe=0.5, kappa=0.4
    a = ["y"] * 25 + ["n"] * 25
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert stats.cohen_kappa(a, b) == pytest.approx(0.4)
    assert stats.cohen_kappa([], []) is None
    assert stats.cohen_kappa(["A", "A"], ["A", "A"]) == 1.0


# --------------------------------------------------------------- numpy stand-ins for scipy
# Expected values computed with scipy 1.17.1 (scipy.stats.rankdata / norm.ppf / norm.cdf),
# which the core no longer depends on.

@pytest.mark.parametrize("values, expected", [
    ([3.0, 1.0, 2.0], [3.0, 1.0, 2.0]),
    ([1.0, 1.0, 2.0], [1.5, 1.5, 3.0]),
    ([0.5, 0.2, 0.5, 0.2, 0.9], [3.5, 1.5, 3.5, 1.5, 5.0]),
    ([7.0, 7.0, 7.0], [2.0, 2.0, 2.0]),
    ([4.0], [1.0]),
])
def test_rankdata_average_ties(values, expected):
    from ragmeter.stats import rankdata

    assert rankdata(values).tolist() == expected


def test_rankdata_along_an_axis():
    from ragmeter.stats import rankdata

    rows = np.array([[1.0, 1.0, 2.0], [3.0, 2.0, 1.0]])
    assert rankdata(rows, axis=1).tolist() == [[1.5, 1.5, 3.0], [3.0, 2.0, 1.0]]
    assert rankdata(rows, axis=0).tolist() == [[1.0, 1.0, 2.0], [2.0, 2.0, 1.0]]


@pytest.mark.parametrize("p, z", [
    (0.975, 1.959963984540054), (0.995, 2.5758293035489004), (0.5, 0.0),
    (0.05, -1.6448536269514729), (1e-10, -6.361340902404056),
])
def test_normal_ppf_matches_scipy(p, z):
    from ragmeter.stats import normal_cdf, normal_ppf

    assert normal_ppf(p) == pytest.approx(z, abs=1e-13)
    assert normal_cdf(z) == pytest.approx(p, rel=1e-12)
