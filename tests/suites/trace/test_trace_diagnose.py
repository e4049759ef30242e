"""The diagnostic patterns of TRACe numbers (trace/_diagnose.py): the readings of the
GPT-labelling write-up's "Common Patterns" (its examples are the first cases of each pattern)
and ragmeter's low-adherence reading, at and around their thresholds, and the report section
naming them."""

from __future__ import annotations

import pytest

from ragmeter.trace._diagnose import ADHERENT, HIGH, LOW, diagnose, used_share


def _names(values: dict[str, float | None], writeup: bool = False) -> list[str]:
    return [d.name for d in diagnose(values, writeup=writeup)]


@pytest.mark.parametrize(("values", "writeup", "expected"), [
    # write-up, pattern 1 "Good Retrieval, Bad Generation": relevance 0.85, utilization 0.40
    ({"relevance": 0.85, "utilization": 0.40}, True, ["ignores_context"]),
    # write-up, utilization's Problem Pattern: relevance 0.9 + utilization 0.3
    ({"relevance": 0.9, "utilization": 0.3}, True, ["ignores_context"]),
    # RAGBench's utilization shares relevance's denominator: 0.3 of 0.9 relevant is a third used
    ({"relevance": 0.9, "utilization": 0.3}, False, ["ignores_context"]),
    ({"relevance": 0.9, "utilization": 0.6}, False, []),  # two thirds of it used
    # write-up, pattern 2 "Conservative but Accurate": completeness 0.50, adherence 1.0
    ({"completeness": 0.4, "adherence": 1.0}, False, ["grounded_incomplete"]),
    ({"completeness": 0.5, "adherence": 1.0}, False, []),  # at LOW: not below it
    ({"completeness": 0.4, "adherence": 0.8}, False, []),  # not grounded enough to say so
    # write-up, pattern 3 "Comprehensive and Grounded": 0.75, 0.80, 0.85, 1.0 (its definitions)
    ({"relevance": 0.75, "utilization": 0.80, "completeness": 0.85, "adherence": 1.0}, True,
     ["healthy"]),
    # the same numbers under RAGBench's definitions: 0.80 / 0.75 capped at 1 used
    ({"relevance": 0.75, "utilization": 0.80, "completeness": 0.85, "adherence": 1.0}, False,
     ["healthy"]),
    # ragmeter's reading: most answers unsupported
    ({"adherence": 0.3}, False, ["ungrounded"]),
    ({"relevance": 0.9, "utilization": 0.1, "completeness": 0.2, "adherence": 0.2}, True,
     ["ignores_context", "ungrounded"]),
    # nothing to read, or nothing to say
    ({}, False, []),
    ({"relevance": None, "utilization": 0.1, "completeness": None, "adherence": None}, False, []),
    ({"relevance": 0.4, "utilization": 0.3, "completeness": 0.7, "adherence": 0.9}, False, []),
])
def test_patterns(values: dict[str, float | None], writeup: bool, expected: list[str]) -> None:
    assert _names(values, writeup) == expected


def test_thresholds_are_the_write_ups() -> None:
    assert (HIGH, LOW, ADHERENT) == (0.7, 0.5, 0.9)
    edge = {"relevance": HIGH, "utilization": HIGH, "completeness": HIGH, "adherence": ADHERENT}
    assert _names(edge, writeup=True) == ["healthy"]  # at the threshold counts as high


@pytest.mark.parametrize(("relevance", "utilization", "writeup", "share"), [
    (0.5, 0.25, False, 0.5), (0.2, 0.4, False, 1.0), (0.0, 0.1, False, None),
    (None, 0.1, False, None), (0.5, 0.25, True, 0.25), (0.5, None, True, None),
])
def test_used_share(relevance: float | None, utilization: float | None, writeup: bool,
                    share: float | None) -> None:
    assert used_share(relevance, utilization, writeup=writeup) == share


def test_every_diagnosis_says_why_and_where_from() -> None:
    found = diagnose({"relevance": 0.9, "utilization": 0.1, "completeness": 0.2,
                      "adherence": 0.2}, writeup=True)
    for d in found:
        assert d.title and d.advice and d.source and d.evidence
    assert "relevance 0.90" in found[0].evidence


def test_the_report_section_names_the_pattern() -> None:
    from ragmeter.trace._report import section

    doc = {"signature": "family:trace|metrics:ragbench-1", "source": "x.jsonl",
           "metrics": {m: {"mean": v, "n": 10} for m, v in (
               ("relevance", 0.9), ("utilization", 0.2), ("completeness", 0.4),
               ("adherence", 1.0))},
           "headline": [{"metric": m, "group": g, "value": v}
                        for g, vals in (("all", (0.9, 0.2, 0.4, 1.0)),
                                        ("<b>fin</b>", (0.3, 0.3, 0.9, 0.2)))
                        for m, v in zip(("relevance", "utilization", "completeness",
                                         "adherence"), vals, strict=True)]}
    html = str(section(doc))
    assert html.index("Diagnosis") < html.index("TRACe metrics (RAGBench)")
    assert "the generator ignores good context" in html and "grounded but incomplete" in html
    assert "&lt;b&gt;fin&lt;/b&gt;: most answers are not grounded" in html  # escaped
    quiet = dict(doc, headline=[], metrics={m: {"mean": 0.6} for m in doc["metrics"]})
    assert "no pattern" in str(section(quiet))
