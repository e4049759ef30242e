"""The rubric family's METRICS table (issue 24): every number defined once, the signature
built from the table's constants (a changed weight is a changed signature: issue 24.6), the
``[RESULT]`` parsers' table (grade 0 included) and the headline rows of a summary."""

from __future__ import annotations

import re

import pytest

import ragmeter
from ragmeter._families import family_part
from ragmeter.rubric import _metrics as rubric
from ragmeter.rubric._metrics import METRICS, headline
from ragmeter.stats import ALL_GROUP, MetricTable

# ------------------------------------------------------------------ the table


def test_the_table_defines_every_number_once() -> None:
    assert family_part("rubric", "_metrics", "METRICS") is METRICS
    assert isinstance(METRICS, MetricTable) and METRICS.version == rubric.METRIC_VERSION
    for m in METRICS:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", m.name), m.name
        assert m.label and m.description and m.source, m.name
        assert m.ci in ("bootstrap", "none") and m.version
    lower = {m.name for m in METRICS if not m.higher_is_better}
    assert lower == {"changed_share", "mean_spread", "flip_rate", "mae"}
    # the numbers summary["metrics"] and the tables show are rows of the table
    for name in (*rubric.RESULTS_COLUMNS, *rubric.AGREEMENT_COLUMNS, "expected_grade_mean",
                 "language_consistency_mean"):
        assert name in METRICS
    assert METRICS.get("weighted_score").constants == {"weights": rubric.WEIGHTS,
                                                       "exponent": 2}


def test_signature_keeps_its_spelling_and_follows_the_weights(tmp_path, monkeypatch) -> None:
    """The weights are written from the table's constants; before the table they were a
    literal beside WEIGHTS, so a changed weight changed the scores and not the signature
    (issue 24.6)."""
    rows = [{"id": str(i), "score": g} for i, g in enumerate([5, 4, 1, 0, 3])]
    before = ragmeter.rubric.score(rows)
    # the signature's spelling of RAGaliq's weights, unchanged since ragaliq-1
    assert "|weights:5:1,4:.8,3:.6,0:.4,2:.2,1:0|ws:mean^2|" in before.signature
    # RAGaliq's score by hand: weights 1, .8, 0, .4, .6 -> mean .56 -> .3136
    assert before.summary["metrics"]["all"]["weighted_score"] == pytest.approx(0.3136)
    monkeypatch.setitem(rubric.WEIGHTS, 1, 0.1)  # a wrong answer now worth 0.1
    after = ragmeter.rubric.score(rows)
    assert after.summary["metrics"]["all"]["weighted_score"] == pytest.approx(0.58 ** 2)
    assert "|weights:5:1,4:.8,3:.6,0:.4,2:.2,1:.1|" in after.signature
    assert after.signature != before.signature
    monkeypatch.setattr(rubric, "WEIGHT_EXPONENT", 3)
    monkeypatch.setitem(METRICS.get("weighted_score").constants, "exponent", 3)  # type: ignore[index]
    cubed = ragmeter.rubric.score(rows)
    assert cubed.summary["metrics"]["all"]["weighted_score"] == pytest.approx(0.58 ** 3)
    assert "|ws:mean^3|" in cubed.signature


# ------------------------------------------------------------------ the [RESULT] parsers


@pytest.mark.parametrize(("text", "strict", "lenient"), [
    # RAGaliq's judge_prompt.txt asks for "[RESULT] <grade>", grades 0..5 (0: nothing found)
    *[(str(g), g, g) for g in range(6)],
    ("-1", "out_of_range", "out_of_range"),
    ("6", "out_of_range", "out_of_range"),
    # int("0/5") fails in RAGaliq's eval.py (the item is dropped); the lenient parser reads
    # "N/5" by design (its docstring), so grade 0 out of 5 is 0
    ("0/5", "not_an_integer", 0),
])
def test_result_parsers_table(text: str, strict: int | str, lenient: int | str) -> None:
    reply = f"Feedback: the answer says so. [RESULT] {text}"
    for parse, expected in ((rubric.parse_result_strict, strict),
                            (rubric.parse_grade_lenient, lenient)):
        got = parse(reply)
        if isinstance(expected, int):
            assert (got.grade, got.reason, got.ok) == (expected, None, True), parse.__name__
            assert got.feedback == "Feedback: the answer says so."
        else:
            assert (got.grade, got.reason, got.ok) == (None, expected, False), parse.__name__
            assert got.detail


def test_grade_zero_survives_every_door(tmp_path) -> None:
    """A parsed 0 is a grade from the reply to the table: RAGaliq's counts and weight 0.4."""
    rows = [{"id": "a", "reply": "Nothing in the documents. [RESULT] 0"},
            {"id": "b", "reply": "Right. [RESULT] 5"}]
    result = ragmeter.rubric.score(rows, ci=False)
    group = result.summary["groups"][0]
    assert group["counts"]["0"] == 1 and group["n"] == 2
    assert group["weighted_score"] == pytest.approx(((0.4 + 1.0) / 2) ** 2)
    assert [i["grade"] for i in result.items] == [0, 5]


# ------------------------------------------------------------------ headline rows


def test_headline_of_a_build_summary() -> None:
    summary = {"verb": "build", "kept": 3, "coverage": {"total": 6, "scored": 4},
               "criteria": {"groundedness": {"mean": 4.5, "degenerate": None,
                                             "coverage": {"total": 5, "scored": 4}},
                            "relevance": {"mean": 5.0, "degenerate": {"kind": "x"},
                                          "coverage": {"total": 5, "scored": 5}}},
               "agreement": {"relevance": {"n": 5, "qwk": 0.0, "qwk_ci": [0.0, 0.0],
                                           "exact": 0.6, "exact_ci": [0.2, 1.0],
                                           "mae": 0.4, "mae_ci": [0.0, 0.8],
                                           "within_one": 1.0, "spearman": None}}}
    rows = {(h.group, h.metric): h for h in headline(summary)}
    kept = rows[(ALL_GROUP, "questions_kept")]
    assert (kept.value, kept.n, kept.coverage) == (3.0, 6, 4 / 6)
    g = rows[("groundedness", "critique_mean")]
    assert (g.value, g.n, g.coverage, g.flag) == (4.5, 4, 0.8, None)
    assert rows[("relevance", "critique_mean")].flag == "degenerate critic: relevance critique"
    qwk = rows[("relevance", "qwk")]
    assert (qwk.value, qwk.ci, qwk.n, qwk.flag) == (0.0, (0.0, 0.0), 5,
                                                    "degenerate critic: relevance critique")
    assert ("relevance", "spearman") in rows and rows[("relevance", "spearman")].value is None
    assert headline({"verb": "build", "dry_run": True}) == []
