"""A refusal detector for English and Chinese answers: does the answer decline to answer?

ragmeter's own pattern-based judge for RGB's negative rejection (Rej*) when no generative
judge is used (issue 12, item 8).  An answer *declines* when it says that the question cannot
be answered (information missing, documents silent, "I don't know") and does not go on to give
an answer anyway ("the documents don't say, but based on my knowledge it is ...").

Rules, in order:

1. a *refusal* pattern matches (:data:`REFUSAL_PATTERNS_EN`, :data:`REFUSAL_PATTERNS_ZH`);
2. unless an *answer-anyway* pattern matches after it (:data:`ANSWER_ANYWAY_EN`,
   :data:`ANSWER_ANYWAY_ZH`), or the refusal is scoped to a side detail of an answer that
   starts with content ("X is the tallest ..., although its height is not specified"): a
   refusal after a concessive clause (although, though, but, while, 虽然, 但, 不过) whose
   preceding text holds no refusal is such a detail.

Its agreement with hand-labelled answers (tests/suites/rgb/refusal_labels.jsonl) is measured
in ``benchmarks/bench_rgb_refusal.py`` and reported in docs/rgb.md.  Pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["DETECTOR_VERSION", "DETECTOR_VALIDATION", "REFUSAL_PATTERNS_EN", "REFUSAL_PATTERNS_ZH", "ANSWER_ANYWAY_EN",
           "ANSWER_ANYWAY_ZH", "RefusalVerdict", "detect_refusal", "agreement"]

DETECTOR_VERSION = "refusal-patterns-2"
# Agreement with hand-labelled answers, measured by benchmarks/bench_rgb_refusal.py (docs/rgb.md).
# The 40 hand-written "held-out" answers were written after v1 was frozen (v1: 29/40, kappa
# 0.45); v2's patterns were revised after seeing them, so on them v2 is in-sample.  The 47
# answers of the local model (issue 27.3) were labelled after v2 and never used to change it.
DETECTOR_VALIDATION: dict[str, object] | None = {
    "metric": "Cohen's kappa vs hand labels", "value": 0.969, "ci": [0.891, 1.0],
    "data": "87 en/zh answers: 40 hand-written (refusal_labels_heldout.jsonl, in-sample for "
            "v2: kappa 0.950) and 47 by the local model (refusal_labels_model.jsonl, "
            "out-of-sample, 2 declines, 47/47 agree); v1 out-of-sample kappa 0.45",
}

_SOURCE = r"(?:documents?|passages?|context|texts?|sources?|information|materials?|articles?)"
_VERB = (r"(?:contain|mention|provide|include|say|specify|state|give|have|discuss|cover|"
         r"address|tell)")

REFUSAL_PATTERNS_EN = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"\binsufficient information\b",
    r"\b(?:not|n't) (?:have )?enough (?:information|info|details?|data)\b",
    r"\bno way (?:of|to) (?:know|knowing|tell|telling|determine|determining)\b",
    r"\bnothing in the " + _SOURCE,
    r"\b(?:do|does|did)(?: not|n't) answer\b",
    r"\black(?:s|ing)? (?:of )?(?:the )?(?:information|details|data)\b",
    r"\bno (?:relevant |specific |such )?(?:information|mention|details?|data)\b",
    r"\b(?:can ?not|can't|unable to|not able to|impossible to|not possible to)\s+"
    r"(?:be\s+)?(?:answer|determine|find|identify|locate|confirm|tell|say|know|provide)",
    r"\bcannot be (?:answered|determined|identified|found)\b",
    r"\b" + _SOURCE + r"\b[^.;]{0,40}\b(?:do|does|did)(?: not|n't) " + _VERB,
    r"\b(?:none of|neither of) the " + _SOURCE,
    r"\bsay(?:s)? nothing about\b",
    r"\b(?:is|are|was|were)(?: not|n't) (?:mentioned|provided|specified|stated|given|available|"
    r"included|found|present)\b",
    r"\bi (?:do not|don't|did not|didn't) know\b",
    r"\bi(?:'m| am) not sure\b",
    r"^\W*unknown\W*$",
    r"\bthe answer is not\b",
))

REFUSAL_PATTERNS_ZH = tuple(re.compile(p) for p in (
    r"信息不足", r"不足以", r"无法(?:回答|作答|确定|判断|得知|给出|提供|找到|获取)",
    r"无法[^，。,.]{0,12}(?:回答|作答)", r"没有[^，。,.]{0,12}答案",
    r"不能(?:回答|确定|判断|给出)", r"我不知道", r"^\W*不知道\W*$", r"无从得知",
    r"(?:没有|未|并未|没)(?:提到|提及|提供|说明|涉及|给出|写明|包含|相关)",
    r"(?:答|回答|查|给|说|找|确定|判断)不(?:了|到|出|上来)", r"没有回答", r"只字未提",
    r"找不到", r"未找到", r"没有找到", r"缺少(?:相关)?(?:内容|信息|资料)", r"缺乏(?:相关)?信息",
    r"^\W*不清楚\W*$", r"与该?问题无关",
))

ANSWER_ANYWAY_EN = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"\bbased on (?:my|general|common) (?:own )?(?:knowledge|understanding)\b",
    r"\b(?:from|to the best of) my knowledge\b",
    r"\bas far as i know\b",
    r"\bit is (?:generally|widely|commonly) (?:known|accepted)\b",
))

ANSWER_ANYWAY_ZH = tuple(re.compile(p) for p in (
    r"据我所知", r"根据(?:我的|常识|一般)(?:知识|了解)?", r"一般认为", r"通常认为",
))

# A concessive clause ("..., although ...", "……，虽然……") before the refusal: the refusal is
# about a side detail of an answer given in the first clause.
_CONCESSIVE = re.compile(r"[,;，；]\s*(?:although|though|but|while|虽然|但|不过)", re.IGNORECASE)


@dataclass(frozen=True)
class RefusalVerdict:
    """The detector's verdict and the pattern that decided it (None: no refusal found)."""

    declines: bool
    matched: str | None
    reason: str


def _first(patterns: tuple[re.Pattern[str], ...], text: str) -> re.Match[str] | None:
    found = [m for m in (p.search(text) for p in patterns) if m]
    return min(found, key=lambda m: m.start()) if found else None


def detect_refusal(answer: str) -> RefusalVerdict:
    """Whether ``answer`` declines to answer (English and Chinese patterns both apply)."""
    text = answer.strip()
    hit = _first(REFUSAL_PATTERNS_EN + REFUSAL_PATTERNS_ZH, text)
    if hit is None:
        return RefusalVerdict(False, None, "no refusal pattern")
    anyway = _first(ANSWER_ANYWAY_EN + ANSWER_ANYWAY_ZH, text)
    if anyway is not None:
        return RefusalVerdict(False, anyway.group(0), "answers anyway after declining")
    before = text[:hit.start()]
    concession = _CONCESSIVE.search(before)
    if concession is not None and not _first(REFUSAL_PATTERNS_EN + REFUSAL_PATTERNS_ZH,
                                             before[:concession.start()]):
        # "Kilimanjaro is the tallest mountain, although its height is not specified"
        return RefusalVerdict(False, hit.group(0), "refusal only about a side detail")
    return RefusalVerdict(True, hit.group(0), "refusal pattern")


def agreement(reference: Sequence[bool], predicted: Sequence[bool], *, seed: int = 12345
              ) -> dict[str, Any]:
    """Agreement of a judge's decline verdicts with reference labels: accuracy with its Wilson
    95% interval, Cohen's kappa with a bootstrap 95% interval (2000 resamples of items)."""
    from ragmeter.stats import cohen_kappa, cohen_kappa_ci, wilson_interval

    if len(reference) != len(predicted):
        raise ValueError("agreement needs two verdict sequences of equal length")
    ref = [str(int(x)) for x in reference]
    pred = [str(int(x)) for x in predicted]
    hits = sum(1 for x, y in zip(ref, pred, strict=True) if x == y)
    n = len(ref)
    acc_ci = wilson_interval(hits, n)
    kappa_ci = cohen_kappa_ci(ref, pred, seed=seed)
    return {"n": n, "accuracy": hits / n if n else None,
            "accuracy_ci95": list(acc_ci) if acc_ci else None,
            "kappa": cohen_kappa(ref, pred), "kappa_ci95": list(kappa_ci) if kappa_ci else None,
            "predicted_declines": sum(1 for p in predicted if p),
            "reference_declines": sum(1 for r in reference if r)}
