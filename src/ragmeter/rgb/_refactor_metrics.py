"""The refactored RGB application's labels and rates (``--mode refactor``), as its write-up states.

Source: ``../shared/writeups/000_45ee2b9ca6956127.txt`` ("RGBMetrics /
METRICS_CALCULATION_COMPARISON.md", commit b1ccc5d), which quotes ``src/evaluator.py`` of the
refactored application.  What the write-up quotes is copied exactly:

* ``PRIMARY_REJECTION_PHRASES``, ``REJECTION_KEYWORDS`` and ``is_rejection`` (section 2): the
  response is lowercased and stripped; any phrase or keyword as a substring is a rejection;
* ``ERROR_DETECTION_KEYWORDS`` and ``detects_error`` (section 4): any keyword as a substring of
  the lowercased response, or ``"not <cf>"`` / ``"<cf> is wrong"`` with the lowercased
  counterfactual answer;
* ``corrects_error`` (section 4): ``is_correct(response, truth)`` and not (the normalized
  counterfactual occurs while the normalized truth does not);
* the rates (sections 1-4): every rate is ``count / total_samples`` (the write-up multiplies by
  100; ragmeter keeps fractions like every other rate): accuracy = correct / total (no credit
  for a rejection at noise 1.0), rejection_rate = rejected / total, error_detection_rate =
  detected / total, error_correction_rate = corrected / total (NOT / detected, as the
  original's CR).

What the write-up describes only in words, and how ragmeter fills it in (each an inference,
named in docs/rgb.md):

* ``is_correct`` "handles substring matching, token overlap (80%+), normalized comparison":
  the truth matches when its lowercased text is a substring of the lowercased response, or its
  normalized text is a substring of the normalized response, or at least 80% of its normalized
  tokens occur among the response's normalized tokens;
* ``normalize_answer`` is not shown: ragmeter uses the common SQuAD normalisation (lowercase,
  punctuation removed, articles a/an/the removed, whitespace collapsed);
* the refactor passes one truth string; an RGB answer may be a list of components (each a
  string or a list of alternatives): the item is correct when every component matches, a
  component matching when any of its alternatives does (the structure of evalue.py's
  ``checkanswer``);
* tokens are whitespace-separated (as SQuAD's normalisation); for Chinese, which has no
  spaces, the overlap rule therefore reduces to the substring rules.

Pure functions: no I/O, no model.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from typing import Any

__all__ = [
    "PRIMARY_REJECTION_PHRASES",
    "REJECTION_KEYWORDS",
    "ERROR_DETECTION_KEYWORDS",
    "TOKEN_OVERLAP",
    "normalize_answer",
    "is_correct",
    "answer_correct",
    "is_rejection",
    "detects_error",
    "corrects_error",
]

# Write-up section 2, ``PRIMARY_REJECTION_PHRASES`` (verbatim).
PRIMARY_REJECTION_PHRASES = (
    "i can not answer the question because of the insufficient information in documents",
    "insufficient information in documents",
    "can not answer",
    "cannot answer",
)
# Write-up section 2, ``REJECTION_KEYWORDS`` (verbatim, in its order).
REJECTION_KEYWORDS = (
    "i don't know", "i cannot", "i can't", "unable to", "not able to",
    "insufficient information", "no information", "cannot determine",
    "cannot answer", "not enough information", "don't have enough",
    "unable to determine", "cannot find", "no relevant", "not mentioned",
    "not provided", "not specified", "unclear", "unknown", "i'm not sure",
    "i am not sure", "cannot be determined", "information is not available",
    "does not provide",
)
# Write-up section 4, ``ERROR_DETECTION_KEYWORDS`` (verbatim, in its order).
ERROR_DETECTION_KEYWORDS = (
    "incorrect", "wrong", "false", "error", "mistake", "inaccurate",
    "not true", "not correct", "factually incorrect", "contradicts",
    "actually", "in fact", "however", "but actually", "the correct answer",
    "should be",
)
# Write-up section 1: "Token overlap (80%+)".
TOKEN_OVERLAP = 0.8

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD v1.1's normalisation (lowercase, no punctuation, no articles, single spaces);
    the write-up names ``normalize_answer`` without its body (an inference, see above)."""
    text = "".join(ch for ch in str(text).lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def is_correct(response: str, truth: str) -> bool:
    """Substring, normalized substring, or >= 80% of the truth's normalized tokens present."""
    if not str(truth).strip():
        return False
    if str(truth).lower() in response.lower():
        return True
    norm_truth = normalize_answer(truth)
    norm_resp = normalize_answer(response)
    if not norm_truth:
        return False
    if norm_truth in norm_resp:
        return True
    truth_tokens = norm_truth.split()
    resp_tokens = set(norm_resp.split())
    hit = sum(1 for t in truth_tokens if t in resp_tokens)
    return hit / len(truth_tokens) >= TOKEN_OVERLAP


def answer_correct(response: str, answer: Any) -> bool:
    """An RGB answer (string, or components that are strings or lists of alternatives): every
    component matched by :func:`is_correct` on at least one alternative."""
    components: Sequence[Any] = answer if isinstance(answer, list) else [answer]
    if not components:
        return False
    for comp in components:
        alts = comp if isinstance(comp, list) else [comp]
        if not any(is_correct(response, str(a)) for a in alts):
            return False
    return True


def is_rejection(response: str) -> bool:
    """Write-up section 2, ``is_rejection``: primary phrases, then the secondary keywords."""
    low = response.lower().strip()
    return (any(p in low for p in PRIMARY_REJECTION_PHRASES)
            or any(k in low for k in REJECTION_KEYWORDS))


def detects_error(response: str, counterfactual_answer: str | None) -> bool:
    """Write-up section 4, ``detects_error``: a keyword, or ``not <cf>`` / ``<cf> is wrong``."""
    low = response.lower()
    if any(k in low for k in ERROR_DETECTION_KEYWORDS):
        return True
    if counterfactual_answer:
        cf = counterfactual_answer.lower()
        if f"not {cf}" in low or f"{cf} is wrong" in low:
            return True
    return False


def _truth_texts(answer: Any) -> list[str]:
    components = answer if isinstance(answer, list) else [answer]
    out: list[str] = []
    for comp in components:
        out.extend(str(a) for a in (comp if isinstance(comp, list) else [comp]))
    return out


def corrects_error(response: str, answer: Any, counterfactual_answer: str | None) -> bool:
    """Write-up section 4, ``corrects_error``: the correct answer is given, and the response is
    not one that holds the counterfactual answer without the correct one."""
    if not answer_correct(response, answer):
        return False
    if counterfactual_answer:
        norm_resp = normalize_answer(response)
        norm_cf = normalize_answer(counterfactual_answer)
        truth_in = any(normalize_answer(t) in norm_resp for t in _truth_texts(answer))
        if norm_cf and norm_cf in norm_resp and not truth_in:
            return False
    return True
