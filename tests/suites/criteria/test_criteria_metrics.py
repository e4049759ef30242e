"""The numbers of a criterion from judged rows, against values worked out by hand and against
independent implementations (QWK from Cohen 1968's formula, Spearman from average ranks,
Fleiss' kappa from Fleiss 1971); the headline's groups and flags; never NaN."""

from __future__ import annotations

import math
from itertools import product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter import stats
from ragmeter.criteria import load_criteria
from ragmeter.criteria._aggregate import Resampling, summarize_criterion, summarize_overall
from ragmeter.criteria._metrics import METRICS, headline
from tests.judged.helpers import fleiss, flip_rate

CRIT = load_criteria(["relevance", "completeness"])
REL, COMP = CRIT.criteria
HOW = Resampling(ci=True, resamples=500, seed=7)


def _row(i, crit, score, repeat=0, ref=None, reason=None):
    row = {"id": str(i), "criterion": crit, "repeat": repeat,
           "status": "ok" if score is not None else "unscored", "score": score}
    if reason:
        row["reason"] = reason
    if ref is not None:
        row["reference_score"] = ref
    return row


def qwk_by_formula(a, b, points):
    """Cohen (1968): 1 - sum w*O / sum w*E, w = (i-j)^2/(k-1)^2, E = outer(marginals)/n."""
    k, n = len(points), len(a)
    pos = {p: i for i, p in enumerate(points)}
    observed = [[0.0] * k for _ in range(k)]
    for x, y in zip(a, b, strict=True):
        observed[pos[y]][pos[x]] += 1
    rows = [sum(r) for r in observed]
    cols = [sum(observed[i][j] for i in range(k)) for j in range(k)]
    num = den = 0.0
    for i, j in product(range(k), range(k)):
        w = (i - j) ** 2 / (k - 1) ** 2
        num += w * observed[i][j]
        den += w * rows[i] * cols[j] / n
    return 1 - num / den


def spearman_by_ranks(a, b):
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        out = [0.0] * len(v)
        i = 0
        while i < len(v):
            j = i
            while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for t in range(i, j + 1):
                out[order[t]] = (i + j) / 2 + 1
            i = j + 1
        return out
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    return cov / math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))


def test_scores_pass_rate_and_coverage_by_hand() -> None:
    rows = [_row(0, "relevance", 1), _row(1, "relevance", 2), _row(2, "relevance", 5),
            _row(3, "relevance", 5), _row(4, "relevance", 4),
            _row(5, "relevance", None, reason="malformed_json"),
            _row(0, "relevance", 3, repeat=1)]          # repeats do not enter the scores
    got = summarize_criterion(REL, rows, HOW, repeats=1)
    m = got["metrics"]
    assert m["criterion_score"] == pytest.approx(17 / 5)                    # 1+2+5+5+4
    assert m["criterion_normalized"] == pytest.approx((0 + .25 + 1 + 1 + .75) / 5)
    assert m["criterion_pass_rate"] == pytest.approx(3 / 5)                 # 5, 5, 4 >= 4
    assert got["ci95"]["criterion_pass_rate"] == list(stats.wilson_interval(3, 5))
    assert got["n"]["criterion_score"] == 5
    assert got["counts"] == {"1": 1, "2": 1, "3": 0, "4": 1, "5": 2}
    assert got["coverage"] == {"rows": 6, "scored": 5, "unscored": 1,
                               "reasons": {"malformed_json": 1}}
    lo, hi = got["ci95"]["criterion_score"]
    assert lo <= m["criterion_score"] <= hi
    assert "validation" not in got and "stability" not in got


def test_agreement_with_reference_scores_equals_the_formulas() -> None:
    judge = [1, 2, 3, 4, 5, 5, 4, 2, 1, 3, 5, 4]
    human = [1, 3, 3, 5, 5, 4, 4, 1, 2, 3, 5, 5]
    rows = [_row(i, "relevance", j, ref=h) for i, (j, h) in enumerate(zip(judge, human,
                                                                           strict=True))]
    rows.append(_row(99, "relevance", None, ref=5, reason="out_of_scale"))  # unpaired
    rows.append(_row(98, "relevance", 4))                                     # no reference
    v = summarize_criterion(REL, rows, HOW)["validation"]
    assert v["n"] == 12 and v["with_reference"] == 13 and v["unpaired"] == 1
    assert v["qwk"] == pytest.approx(qwk_by_formula(judge, human, REL.points), abs=1e-12)
    assert v["spearman"] == pytest.approx(spearman_by_ranks(judge, human), abs=1e-12)
    assert v["exact"] == pytest.approx(sum(a == b for a, b in zip(judge, human,
                                                                  strict=True)) / 12)
    assert v["mae"] == pytest.approx(sum(abs(a - b) for a, b in zip(judge, human,
                                                                    strict=True)) / 12)
    lo, hi = v["ci95"]["qwk"]
    assert lo <= v["qwk"] <= hi


def test_probability_weighted_scores_are_validated_by_their_ranks() -> None:
    expected = [1.2, 2.5, 2.4, 4.9, 3.3, 4.1]
    human = [1, 3, 2, 5, 3, 4]
    rows = [{**_row(i, "relevance", 5, ref=h), "expected_score": e}
            for i, (e, h) in enumerate(zip(expected, human, strict=True))]
    got = summarize_criterion(REL, rows, HOW)
    v = got["validation"]
    assert v["spearman_expected"] == pytest.approx(spearman_by_ranks(expected, human),
                                                   abs=1e-12)
    assert v["qwk"] == 0.0 and v["spearman"] is None      # the argmax is constant: no signal
    assert got["metrics"]["spearman_expected"] == v["spearman_expected"]
    assert got["n"]["spearman_expected"] == 6
    lo, hi = v["ci95"]["spearman_expected"]
    assert lo <= v["spearman_expected"] <= hi


def test_qwk_counts_positions_on_a_short_scale() -> None:
    judge, human = [0, 1, 2, 2, 1, 0], [0, 2, 2, 1, 1, 0]
    rows = [_row(i, "completeness", j, ref=h) for i, (j, h) in enumerate(zip(judge, human,
                                                                              strict=True))]
    v = summarize_criterion(COMP, rows, HOW)["validation"]
    assert v["qwk"] == pytest.approx(qwk_by_formula(judge, human, (0, 1, 2)), abs=1e-12)


def test_stability_over_repeats_equals_fleiss_and_flip_rate() -> None:
    table = [[5, 5, 5], [4, 5, 4], [1, 1, 2], [3, 3, 3], [2, 4, 5]]
    rows = [_row(i, "relevance", s, repeat=r) for i, scores in enumerate(table)
            for r, s in enumerate(scores)]
    got = summarize_criterion(REL, rows, HOW, repeats=3)
    st_ = got["stability"]
    assert st_["fleiss_kappa"] == pytest.approx(fleiss(table), abs=1e-12)
    assert st_["flip_rate"] == pytest.approx(flip_rate(table))
    assert got["metrics"]["flip_rate"] == st_["flip_rate"]
    assert got["n"]["fleiss_kappa"] == 5


def test_all_group_is_rows_with_every_criterion_scored() -> None:
    rows = [_row(0, "relevance", 5), _row(0, "completeness", 2),     # passes both: 1.0
            _row(1, "relevance", 3), _row(1, "completeness", 2),     # fails relevance: .75
            _row(2, "relevance", 5), _row(2, "completeness", None, reason="x")]  # left out
    got = summarize_overall(CRIT, rows, HOW)
    assert got["metrics"]["criterion_normalized"] == pytest.approx((1.0 + 0.75) / 2)
    assert got["metrics"]["criterion_pass_rate"] == pytest.approx(0.5)
    assert got["coverage"]["rows"] == 3 and got["coverage"]["scored"] == 2


def test_headline_groups_are_criteria_and_flags_follow_them() -> None:
    rel = summarize_criterion(REL, [_row(i, "relevance", 5) for i in range(6)], HOW)
    comp = summarize_criterion(COMP, [_row(i, "completeness", i % 3) for i in range(6)], HOW)
    doc = {"criteria_results": {"relevance": rel, "completeness": comp},
           "overall": summarize_overall(CRIT, [], HOW),
           "groups": {"by": "topic", "values": {"relevance@brakes": rel}},
           "flags": {"relevance": "degenerate judge"}}
    rows = headline(doc)
    groups = {h.group for h in rows}
    assert groups == {"relevance", "completeness", "relevance@brakes"}  # no rows: no "all"
    assert all(h.metric in METRICS for h in rows)
    assert {h.flag for h in rows if h.group.startswith("relevance")} == {"degenerate judge"}
    assert {h.flag for h in rows if h.group == "completeness"} == {None}
    score = next(h for h in rows if (h.group, h.metric) == ("completeness", "criterion_score"))
    assert (score.value, score.n, score.coverage) == (1.0, 6, 1.0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([None, 1, 2, 3, 4, 5]),
                          st.sampled_from([None, 1, 2, 3, 4, 5])), min_size=0, max_size=25))
def test_no_nan_and_every_number_in_its_range(pairs) -> None:
    rows = [_row(i, "relevance", j, ref=h, reason=None if j else "malformed_json")
            for i, (j, h) in enumerate(pairs)]
    got = summarize_criterion(REL, rows, Resampling(True, 100, 1))
    values = dict(got["metrics"])
    values.update({k: v for k, v in (got.get("validation") or {}).items()
                   if k in ("qwk", "spearman", "exact", "mae")})
    for name, value in values.items():
        assert value is None or math.isfinite(value), name
    m = got["metrics"]
    if "criterion_score" in m:
        assert 1 <= m["criterion_score"] <= 5
        assert 0 <= m["criterion_normalized"] <= 1 and 0 <= m["criterion_pass_rate"] <= 1
    if m.get("qwk") is not None:
        assert -1 - 1e-9 <= m["qwk"] <= 1 + 1e-9
