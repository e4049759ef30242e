"""An error detector for English and Chinese answers: does the answer say the documents are wrong?

ragmeter's own pattern-based judge for RGB's error detection ED* (issue 27, item 3) when no
generative judge is used, as :mod:`ragmeter.rgb._refusal` is for Rej*.  It asks what
fact_evalue.py's judge is asked: "if the response mentions that the document contains factual
errors, the model has successfully identified them; do not judge whether the reply itself
contains factual errors".  An answer *detects* when it says that the documents (the
information, passages, context, sources it was given) contain an error, are wrong,
inaccurate, misleading or contradict the facts, or that what they state is not true.

Rules, in order:

1. an *error* pattern matches (:data:`ERROR_PATTERNS_EN`, :data:`ERROR_PATTERNS_ZH`): an
   error word next to a word for the documents (either order, within a clause), an adverb
   of error on what the documents say ("the documents wrongly state"), "contrary to the
   documents", or the phrase "factual error(s)" / 事实性错误 anywhere;
2. unless the match is denied: "no (factual) errors", "does not contain any errors",
   "the documents are correct", 没有错误, 无误 (:data:`DENIAL_EN`, :data:`DENIAL_ZH`) with no
   other error pattern outside the denial.

Its agreement with hand-labelled answers is measured by ``benchmarks/bench_rgb_errors.py``
and reported in docs/rgb.md (development set written first; held-out set of answers the
local model wrote, labelled before the detector was run on them).  Pure functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ERROR_DETECTOR_VERSION", "ERROR_DETECTOR_VALIDATION", "ERROR_PATTERNS_EN",
           "ERROR_PATTERNS_ZH", "DENIAL_EN", "DENIAL_ZH", "ErrorVerdict", "detect_error"]

ERROR_DETECTOR_VERSION = "error-patterns-1"
# Agreement with hand-labelled answers, measured by benchmarks/bench_rgb_errors.py (docs/rgb.md)
# on the held-out set (tests/suites/rgb/error_labels_heldout.jsonl), which was labelled before
# the detector was run on it and never used to change the patterns.
ERROR_DETECTOR_VALIDATION: dict[str, object] | None = {
    "metric": "Cohen's kappa vs hand labels", "value": 0.780, "ci": [0.604, 0.922],
    "data": "91 held-out en/zh answers labelled before error-patterns-1 was run on them "
            "(tests/suites/rgb/error_labels_heldout.jsonl: 44 hand-written, kappa 0.682 "
            "[0.446, 0.864]; 47 by the local model, none flagging an error, 47/47 agree); "
            "accuracy 0.923 [0.850, 0.962]",
}

_DOCS_EN = (r"(?:documents?|docs?|passages?|context|texts?|sources?|information|info|"
            r"materials?|articles?|excerpts?|snippets?|references?|retrieved|provided|given|"
            r"claims?|statements?|data)")
_WRONG_EN = (r"(?:incorrect|inaccurate|wrong|erroneous|false|untrue|mistaken|misleading|"
             r"outdated|out of date|not (?:correct|accurate|true|right)|errors?|mistakes?|"
             r"inaccurac(?:y|ies)|misinformation|discrepanc(?:y|ies)|inconsistent|"
             r"inconsistenc(?:y|ies)|contradict(?:s|ory|ions?)?|conflicts? with|"
             r"conflicting|disagrees? with|at odds with|fake|fabricated)")
_ADVERB_EN = r"(?:incorrectly|wrongly|mistakenly|erroneously|falsely|inaccurately)"

ERROR_PATTERNS_EN = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"\bfactual(?:ly)? (?:errors?|mistakes?|inaccurac(?:y|ies)|incorrect|inaccurate|wrong)\b",
    r"\b" + _DOCS_EN + r"\b[^.;:!?]{0,60}?\b" + _WRONG_EN + r"\b",
    r"\b" + _WRONG_EN + r"\b[^.;:!?]{0,30}?\b(?:in|from|of|within|by) (?:[\w'-]+ ){0,3}?"
    + _DOCS_EN + r"\b",
    r"\b" + _ADVERB_EN + r" (?:states?|stated|says?|said|claims?|claimed|lists?|listed|"
    r"reports?|reported|mentions?|mentioned|attributes?|attributed|gives?|given|names?|"
    r"named|identif(?:y|ies|ied))\b",
    r"\b(?:contrary to|despite) (?:what )?(?:the |these )?" + _DOCS_EN + r"\b",
))

_DOCS_ZH = r"(?:文档|文件|文章|文中|文本|资料|材料|信息|内容|段落|参考|来源|所给|提供的|上述|原文|报道)"
_WRONG_ZH = (r"(?:有误|错误|有错|错了|是错的|不对|不正确|不准确|不属实|不真实|失实|虚假|有问题|"
             r"与事实不符|不符合事实|与实际(?:情况)?不符|不符合实际|矛盾|不一致|相冲突|误导|谬误)")

ERROR_PATTERNS_ZH = tuple(re.compile(p) for p in (
    r"事实(?:性)?错误",
    _DOCS_ZH + r"[^。！？；]{0,20}?" + _WRONG_ZH,
    r"(?:错误|有误|不准确)地(?:指出|说|称|表示|写|提到|认为)",
    r"与事实不符|不符合事实",
))

DENIAL_EN = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"\bno (?:factual |obvious |apparent )?(?:errors?|mistakes?|inaccurac(?:y|ies)|"
    r"discrepanc(?:y|ies)|contradictions?)\b",
    r"\b(?:do|does|did)(?: not|n't) (?:contain|have|include|show) (?:any )?(?:factual )?"
    r"(?:errors?|mistakes?|inaccurac(?:y|ies))\b",
    r"\b(?:is|are|was|were)(?: not|n't) (?:incorrect|inaccurate|wrong|erroneous|false|"
    r"misleading|outdated)\b",
    r"\bwithout (?:any )?(?:factual )?(?:errors?|mistakes?)\b",
    r"\berror[- ]free\b",
))

DENIAL_ZH = tuple(re.compile(p) for p in (
    r"(?:没有|并无|不存在|无|未发现|没发现)(?:任何|明显)?(?:的)?(?:事实(?:性)?)?(?:错误|问题|矛盾)",
    r"无误",
))


@dataclass(frozen=True)
class ErrorVerdict:
    """The detector's verdict and the text that decided it (None: no error pattern)."""

    detects: bool
    matched: str | None
    reason: str


def _spans(patterns: tuple[re.Pattern[str], ...], text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for p in patterns for m in p.finditer(text)]


def detect_error(answer: str) -> ErrorVerdict:
    """Whether ``answer`` says its documents contain errors (English and Chinese patterns
    both apply).  A match inside a denial ("the documents contain no errors") is not one."""
    text = answer.strip()
    hits = sorted((m.start(), m.end(), m.group(0))
                  for p in ERROR_PATTERNS_EN + ERROR_PATTERNS_ZH for m in p.finditer(text))
    if not hits:
        return ErrorVerdict(False, None, "no error pattern")
    denials = _spans(DENIAL_EN + DENIAL_ZH, text)
    for start, end, matched in hits:
        if not any(start < d_end and d_start < end for d_start, d_end in denials):
            return ErrorVerdict(True, matched, "error pattern")
    return ErrorVerdict(False, hits[0][2], "error pattern denied")
