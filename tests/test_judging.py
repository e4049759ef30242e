"""The degenerate-judge alarm and judge cards (issue 12, items 5 and 7): pure functions, then
their display in the HTML report."""

from __future__ import annotations

import pytest

from ragmeter.judges._card import card_line, check_degenerate, judge_card
from ragmeter.reports.html import render_report
from ragmeter.runs._records import build_record


def test_alarm_trips_on_a_judge_that_always_says_no() -> None:
    alarm = check_degenerate(["No"] * 49 + ["Yes"], judge="local:smol", what="Rej*")
    assert alarm is not None and alarm["verdict"] == "No" and alarm["share"] == 0.98
    assert "49 of 50" in alarm["message"] and "local:smol" in alarm["message"]


@pytest.mark.parametrize("verdicts", [
    ["No"] * 47 + ["Yes"] * 3,           # 94% < 95%
    [0, 1, 2, 3, 4, 5] * 5,              # grades spread out
    ["No"] * 4,                          # too few items to judge the judge
])
def test_alarm_stays_quiet(verdicts: list) -> None:
    assert check_degenerate(verdicts, judge="j", what="x") is None


def test_unscored_items_do_not_count() -> None:
    assert check_degenerate(["No"] * 10 + [None] * 90, judge="j", what="x") is not None
    assert check_degenerate([None] * 100, judge="j", what="x") is None


def test_probabilities_that_do_not_separate() -> None:
    flat = [0.51, 0.52, 0.53, 0.52, 0.51, 0.54, 0.52, 0.53]
    varied = [0.05, 0.9, 0.4, 0.7, 0.2, 0.95, 0.6, 0.1]
    verdicts = ["yes", "no"] * 4  # the verdicts alone look varied
    alarm = check_degenerate(verdicts, judge="j", what="support", probabilities=flat)
    assert alarm is not None and alarm["spread"] < 0.05
    assert check_degenerate(verdicts, judge="j", what="x", probabilities=varied) is None


def test_card_lines() -> None:
    card = judge_card({"backend": "detector", "version": "v1"},
                      {"metric": "hallucination AUROC", "value": 0.71, "ci": [0.66, 0.76],
                       "data": "RAGBench, 4 splits, leave-one-out"})
    assert card_line(card) == ("detector:v1: hallucination AUROC 0.710 [0.660, 0.760], "
                               "RAGBench, 4 splits, leave-one-out")
    assert "unvalidated" in card_line(judge_card("local:SmolLM2"))


def test_report_flags_alarms_and_shows_cards_after_results_before_provenance() -> None:
    summary = {"family": "multilingual", "coverage": {"rows": 5, "scored": 5, "unscored": 0},
               "alarms": [check_degenerate(["No"] * 5, judge="local:smol", what="Rej*")],
               "judges": [judge_card("local:smol")]}
    html = render_report([build_record("multilingual", summary, [])])
    assert "FLAGGED — degenerate judge" in html and "Rej*" in html
    assert "local:smol: unvalidated" in html
    # results first, then judge cards and alarms, then provenance (issue 25.6)
    assert html.index("<h4>Results</h4>") < html.index("FLAGGED") < html.index("Provenance")


def test_shipped_validation_reaches_the_local_rubric_judges_card() -> None:
    """The local model's rubric judge (ragmeter's prompt, choice scoring) carries the agreement
    measured in docs/rubric.md; the name is the one rubric's card builds from the real backend
    identity and the shipped prompt, so a renamed model or prompt cannot silently keep it."""
    from ragmeter.backends._local._backend import LocalBackend
    from ragmeter.judges._card import card_line, judge_card, known_validations
    from ragmeter.rubric._judge import JudgePrompt
    from ragmeter.rubric._verbs import _judge_card, _judge_id

    backend = LocalBackend()  # the judge is named with its backend: local:<model>
    model = _judge_id(backend.identity()["model"], backend)
    assert model == f"local:{backend.identity()['model']}"
    card = _judge_card("choices", model, JudgePrompt.default().version)
    assert card["judge"] in known_validations()
    assert card["validated"] and card["validation"]["value"] == 0.038
    assert "quadratic kappa 0.038 [0.000, 0.110]" in card_line(card)
    # another prompt is another judge: unvalidated
    assert not _judge_card("choices", model, "file:judge_prompt.txt:abc")["validated"]
    assert not judge_card("somewhere:else")["validated"]
