"""Judge stability over repeats: Fleiss' κ against the worked example of its definition, and
flip rate / agreement on hand-computed cases."""

from __future__ import annotations

import pytest

from ragmeter.stats._stability import fleiss_kappa, repeat_agreement

# The worked example used to illustrate Fleiss (1971): 10 items, 14 raters, 5 categories;
# P̄ = 0.378, P̄e = 0.213, κ = 0.210 (to three digits).
FLEISS_EXAMPLE = [
    [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
]


def test_fleiss_worked_example() -> None:
    assert fleiss_kappa(FLEISS_EXAMPLE) == pytest.approx(0.20993, abs=5e-5)


def test_fleiss_perfect_and_undefined() -> None:
    assert fleiss_kappa([[3, 0], [0, 3], [3, 0]]) == pytest.approx(1.0)
    assert fleiss_kappa([[3, 0], [3, 0]]) is None  # one category only: chance agreement 1
    with pytest.raises(ValueError):
        fleiss_kappa([[2, 0], [1, 2]])


def test_repeat_agreement_hand_computed() -> None:
    out = repeat_agreement({"a": [5, 5, 5], "b": [4, 5, 4], "c": [1, None, 1], "d": [2, None,
                                                                                     None]},
                           repeats=3)
    assert out["items"] == 3                       # d has one scored repeat: left out
    assert out["flip_rate"] == pytest.approx(1 / 3)  # only b changes
    assert out["mean_agreement"] == pytest.approx((1 + 2 / 3 + 1) / 3)
    assert out["fleiss_items"] == 2                # a and b have all three repeats
    # a: [5,5,5], b: [4,5,4] over categories (4, 5): rows [0,3], [2,1]
    assert out["fleiss_kappa"] == pytest.approx(fleiss_kappa([[0, 3], [2, 1]]))
