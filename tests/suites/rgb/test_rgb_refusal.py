"""The refusal detector (Rej* offline) on hand-labelled answers (REFUSAL_LABELS.md) and on
single cases; the agreement statistics against an independent computation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmeter.rgb._refusal import agreement, detect_refusal

HERE = Path(__file__).parent


def _rows(name: str) -> list[dict]:
    return [json.loads(x) for x in (HERE / name).read_text(encoding="utf-8").splitlines() if x]


@pytest.mark.parametrize(("answer", "declines"), [
    ("I can not answer the question because of the insufficient information in documents.", 1),
    ("The documents do not mention the date.", 1),
    ("Ottawa.", 0),
    ("The documents don't say. However, based on my own knowledge, it is Ottawa.", 0),
    ("Kilimanjaro, although its height is not specified in the documents.", 0),
    ("文档信息不足，无法回答。", 1),
    ("据我所知，文档没有提到，但答案是北京。", 0),
    ("北京。", 0),
    ("答不上来。", 1),
])
def test_single_cases(answer: str, declines: int) -> None:
    assert int(detect_refusal(answer).declines) == declines


@pytest.mark.parametrize(("name", "min_correct"), [
    # measured with refusal-patterns-2 (benchmarks/bench_rgb_refusal.py): 79/80 and 39/40; a
    # change of the patterns that loses agreement fails here
    ("refusal_labels.jsonl", 79), ("refusal_labels_heldout.jsonl", 39),
    # 47 answers of the local model labelled after v2 (issue 27.3): all agree (2 declines)
    ("refusal_labels_model.jsonl", 47)])
def test_agreement_with_hand_labels(name: str, min_correct: int) -> None:
    rows = _rows(name)
    ref = [bool(r["declines"]) for r in rows]
    pred = [detect_refusal(r["answer"]).declines for r in rows]
    a = agreement(ref, pred)
    assert round(a["accuracy"] * a["n"]) >= min_correct
    assert a["kappa"] >= 0.9
    lo, hi = a["kappa_ci95"]
    assert lo <= a["kappa"] <= hi


def test_card_numbers_on_the_87_held_out_answers() -> None:
    """The judge card's kappa: the 40 hand-written held-out answers and the 47 of the local
    model together, 86 of 87 agree (bootstrap seed 12345)."""
    from ragmeter.rgb._refusal import DETECTOR_VALIDATION

    rows = _rows("refusal_labels_heldout.jsonl") + _rows("refusal_labels_model.jsonl")
    a = agreement([bool(r["declines"]) for r in rows],
                  [detect_refusal(r["answer"]).declines for r in rows])
    assert a["n"] == 87 and round(a["accuracy"] * 87) == 86
    assert DETECTOR_VALIDATION is not None
    assert round(a["kappa"], 3) == DETECTOR_VALIDATION["value"]
    assert [round(x, 3) for x in a["kappa_ci95"]] == DETECTOR_VALIDATION["ci"]


def test_agreement_statistics_independently() -> None:
    """kappa by hand: first pair po = 0.5, pe = 0.5 -> 0; second po = 0.75, pe = 0.5 -> 0.5."""
    ref = [True, True, False, False]
    pred = [True, False, False, True]
    a = agreement(ref, pred)
    assert a["accuracy"] == 0.5 and a["kappa"] == 0.0
    ref2 = [True, True, False, False, True, True, False, False]
    pred2 = [True, True, False, False, True, False, False, True]
    b = agreement(ref2, pred2)
    assert b["accuracy"] == 0.75 and b["kappa"] == pytest.approx(0.5)
    assert b["accuracy_ci95"][0] < 0.75 < b["accuracy_ci95"][1]
