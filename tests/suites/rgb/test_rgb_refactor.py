"""``--mode refactor``: the refactored RGB application's rules, each from its write-up
(``../shared/writeups/000_45ee2b9ca6956127.txt``, "RGBMetrics / METRICS_CALCULATION_COMPARISON.md",
sections 1-4), on hand-made predictions."""

from __future__ import annotations

import pytest

from ragmeter.rgb import _refactor_metrics as rf
from ragmeter.rgb._build import BuildConfig
from ragmeter.rgb._data import RgbDataset, RgbInstance
from ragmeter.rgb._scoring import Prediction, score_predictions


@pytest.mark.parametrize(("response", "truth", "expected", "rule"), [
    ("It is in Tampa, Florida.", "Tampa, Florida", True, "substring (section 1)"),
    ("it is in TAMPA, FLORIDA", "Tampa, Florida", True, "case-insensitive substring"),
    ("Tampa Florida hosted it", "Tampa, Florida", True, "normalized comparison (punctuation)"),
    ("the game was in Tampa", "Tampa, Florida", False, "1 of 2 tokens: 50% < 80%"),
    ("Raymond James Stadium, Tampa Bay", "Raymond James Stadium Tampa Florida", True,
     "4 of 5 tokens = 80%: token overlap (80%+)"),
    ("Raymond James Stadium", "Raymond James Stadium Tampa Florida", False, "3 of 5 = 60%"),
    ("The Beatles", "Beatles", True, "articles removed by normalization"),
    ("anything", "", False, "empty truth never matches"),
])
def test_is_correct(response: str, truth: str, expected: bool, rule: str) -> None:
    assert rf.is_correct(response, truth) is expected, rule


@pytest.mark.parametrize(("response", "expected", "rule"), [
    ("I can not answer the question because of the insufficient information in documents.",
     True, "PRIMARY_REJECTION_PHRASES[0] (section 2)"),
    ("I Cannot Answer that.", True, "primary 'cannot answer', lowercased"),
    ("The answer is unknown.", True, "secondary keyword 'unknown'"),
    ("It is unclear from the text.", True, "secondary keyword 'unclear'"),
    ("Insufficient information.", True, "secondary 'insufficient information'"),
    ("I can't say for sure.", True, "secondary 'i can't'"),
    ("The document does not provide a date.", True, "secondary 'does not provide'"),
    ("The documents do not provide a date.", False,
     "'do not provide' is not in the lists ('does not provide' is)"),
    ("Paris is the capital of France.", False, "no keyword"),
    ("信息不足，无法回答。", False, "the refactor's lists are English only"),
])
def test_is_rejection(response: str, expected: bool, rule: str) -> None:
    assert rf.is_rejection(response) is expected, rule


@pytest.mark.parametrize(("response", "cf", "expected", "rule"), [
    ("The documents are incorrect; it was Tampa.", "Glendale, Arizona", True,
     "keyword 'incorrect' (section 4)"),
    ("However, the game was in Tampa.", "Glendale, Arizona", True, "keyword 'however'"),
    ("It was not Glendale, Arizona.", "Glendale, Arizona", True, "'not <cf>' pattern"),
    ("glendale, arizona is wrong", "Glendale, Arizona", True, "keyword 'wrong' / '<cf> is wrong'"),
    ("Glendale, Arizona.", "Glendale, Arizona", False, "repeats the counterfactual"),
    ("It was held in Tampa.", None, False, "no keyword, no counterfactual"),
    ("There are factual errors in the documents.", None, True, "'error' substring of 'errors'"),
])
def test_detects_error(response: str, cf: str | None, expected: bool, rule: str) -> None:
    assert rf.detects_error(response, cf) is expected, rule


@pytest.mark.parametrize(("response", "truth", "cf", "expected", "rule"), [
    ("It was in Tampa, Florida, not Glendale, Arizona.", "Tampa, Florida", "Glendale, Arizona",
     True, "correct answer given, counterfactual mentioned too (section 4: 'can contain both')"),
    ("Glendale, Arizona.", "Tampa, Florida", "Glendale, Arizona", False,
     "is_correct fails"),
    ("Tampa, Florida.", "Tampa, Florida", None, True, "no counterfactual field"),
])
def test_corrects_error(response: str, truth: str, cf: str | None, expected: bool,
                        rule: str) -> None:
    assert rf.corrects_error(response, truth, cf) is expected, rule


def test_answer_components_all_required() -> None:
    """ragmeter's reading of a multi-part RGB answer: every component, any alternative."""
    answer = [["Jan 2, 2022", "January 2, 2022"], "Paris"]
    assert rf.answer_correct("On January 2, 2022 in Paris", answer)
    assert not rf.answer_correct("On January 2, 2022", answer)


def _ds(kind: str, rows: list[tuple[str, object, str | None]]) -> RgbDataset:
    insts = tuple(RgbInstance(id=i, query=q, answer=a, positive=("p",), negative=("n",),
                              positive_wrong=("w",) if kind == "fact" else None,
                              place=f"line {i + 1}", fakeanswer=cf)
                  for i, (q, a, cf) in enumerate(rows))
    return RgbDataset(path="x.jsonl", name=f"en{'_fact' if kind == 'fact' else ''}",
                      kind=kind, lang="en", instances=insts)


def test_rejection_setting_rate_and_flips() -> None:
    """Section 2: rejection_rate = rejected / total; strict Rej counts only the two phrases."""
    ds = _ds("default", [("q0", ["Canberra"], None), ("q1", ["Ottawa"], None),
                         ("q2", ["Paris"], None), ("q3", ["Tokyo"], None)])
    preds = {"0": Prediction("insufficient information"),  # both count it
             "1": Prediction("I don't know."),  # refactor only: gained
             "2": Prediction("Paris"),  # strict counts a correct answer at noise 1.0: lost
             "3": Prediction("no idea")}  # neither
    sc = score_predictions(ds, preds, BuildConfig(noise_rate=1.0), mode="refactor")
    assert sc.metrics["accuracy"] == 0.5  # strict: items 0 and 2
    assert sc.refactor is not None
    assert sc.refactor["rejection_rate"] == 0.5  # items 0 and 1
    assert sc.refactor["flips"]["rejection_rate"] == {"gained": 1, "lost": 1}
    assert sc.refactor["comparable_with_paper"] is False


def test_noise_setting_accuracy_flips() -> None:
    """Section 1: accuracy = is_correct / total, with token overlap and normalization."""
    ds = _ds("default", [("q0", ["Tampa, Florida"], None), ("q1", ["Ottawa"], None)])
    preds = {"0": Prediction("Tampa Florida"),  # strict misses (comma), refactor finds: gained
             "1": Prediction("Ottawa")}
    sc = score_predictions(ds, preds, BuildConfig(noise_rate=0.4), mode="refactor")
    assert sc.metrics["accuracy"] == 0.5 and sc.refactor is not None
    assert sc.refactor["accuracy"] == 1.0
    assert sc.refactor["flips"]["accuracy"] == {"gained": 1, "lost": 0}


def test_fact_setting_rates_are_over_total() -> None:
    """Section 4: error_detection_rate and error_correction_rate are / total (the original's CR
    is / detected)."""
    ds = _ds("fact", [("q0", "Tampa, Florida", "Glendale, Arizona"),
                      ("q1", "Ottawa", "Toronto"),
                      ("q2", "Canberra", "Sydney"),
                      ("q3", "Paris", "Lyon")])
    preds = {"0": Prediction("There are factual errors in the documents. Tampa, Florida."),
             "1": Prediction("However, it is Ottawa."),  # refactor detects, strict does not
             "2": Prediction("Sydney."),
             "3": Prediction("Paris.")}
    sc = score_predictions(ds, preds, BuildConfig(noise_rate=0.0), mode="refactor")
    assert sc.metrics["fact_check_rate"] == 0.25 and sc.metrics["correct_rate"] == 1.0
    r = sc.refactor
    assert r is not None
    assert r["error_detection_rate"] == 0.5  # items 0, 1
    assert r["error_correction_rate"] == 0.75  # items 0, 1, 3 give the truth
    assert r["flips"]["error_detection_rate"] == {"gained": 1, "lost": 0}
    assert r["flips"]["error_correction_rate"] == {"gained": 2, "lost": 0}
