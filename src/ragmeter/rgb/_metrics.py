"""RGB answer labelling and rates, exactly as the original ``evalue.py``.

Source: chen700564/RGB @ 65ec39e (``evalue.py``: ``checkanswer``, ``predict`` and the scoring
loop at the end of ``__main__``); ``fact_evalue.py`` / ``reject_evalue.py`` for the judged
rates.  Chen et al., "Benchmarking Large Language Models in Retrieval-Augmented Generation",
AAAI 2024.

Labels of one prediction (``predict``):

* for Chinese data (the dataset name contains ``zh``) every space ``" "`` is removed first;
* if the prediction contains ``信息不足`` or ``insufficient information`` (case-sensitive, on
  the un-lowercased text) the labels are ``[-1]`` (a rejection);
* otherwise one label per answer component (``checkanswer``): a string component must occur in
  the lowercased prediction; a list component is a set of alternatives, any of which may
  occur.  1 = found, 0 = not found.  (The original docstring says "0 for positive"; the code is
  the reference and it is what is reproduced here.)
* ``factlabel`` = 1 when the prediction contains ``事实性错误`` or ``factual errors``.

Accuracy (``all_rate``) counts an item when ``noise_rate == 1 and labels[0] == -1`` or when
``0 not in labels and 1 in labels``.  For counterfactual data ``fact_check_rate`` (ED) =
factlabel items / N and ``correct_rate`` (CR) = (factlabel and ``0 not in labels``) /
factlabel items, 0 when there are none.

The lenient variant (:func:`lenient_labels`) is NOT the paper's metric: it is the flexible
matching some re-implementations use, offered opt-in and always reported apart.

Pure functions: no I/O, no model.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "REJECT_MARKERS",
    "FACT_MARKERS",
    "RgbLabel",
    "clean_prediction",
    "check_answer",
    "label_prediction",
    "is_correct",
    "accuracy",
    "fact_rates",
    "FactRates",
    "judge_reject_rate",
    "judged_correct_rate",
    "LENIENT_REJECT_MARKERS",
    "LENIENT_FACT_MARKERS",
    "LENIENT_OVERLAP",
    "lenient_labels",
]

# evalue.py, predict(): the two rejection strings and the two factual-error strings.
REJECT_MARKERS = ("信息不足", "insufficient information")
FACT_MARKERS = ("事实性错误", "factual errors")

Answer = str | Sequence[Any]


@dataclass(frozen=True)
class RgbLabel:
    """The labels of one prediction, as the original stores them."""

    labels: tuple[int, ...]
    factlabel: int
    prediction: str  # after the zh space removal (the text that was labelled)


def clean_prediction(prediction: str, remove_spaces: bool) -> str:
    """evalue.py: ``if 'zh' in dataset: prediction = prediction.replace(" ", "")``."""
    return prediction.replace(" ", "") if remove_spaces else prediction


def check_answer(prediction: str, ground_truth: Answer) -> list[int]:
    """evalue.py ``checkanswer``: one 0/1 label per answer component (1 = found).

    A string component must occur in the lowercased prediction; a list component is found
    when any of its alternatives (lowercased) occurs.  A bare string answer is one component.
    """
    pred = prediction.lower()
    components = [ground_truth] if not isinstance(ground_truth, list) else ground_truth
    labels: list[int] = []
    for comp in components:
        if isinstance(comp, list):
            found = any(str(alt).lower() in pred for alt in comp)
        else:
            found = str(comp).lower() in pred
        labels.append(int(found))
    return labels


def label_prediction(prediction: str, ground_truth: Answer, *, remove_spaces: bool) -> RgbLabel:
    """evalue.py ``predict`` after the model call: rejection check, then ``checkanswer``."""
    text = clean_prediction(prediction, remove_spaces)
    if any(m in text for m in REJECT_MARKERS):
        labels: tuple[int, ...] = (-1,)
    else:
        labels = tuple(check_answer(text, ground_truth))
    factlabel = int(any(m in text for m in FACT_MARKERS))
    return RgbLabel(labels=labels, factlabel=factlabel, prediction=text)


def is_correct(labels: Sequence[int], noise_rate: float) -> bool:
    """evalue.py scoring loop: rejection at noise 1.0, or every component found.

    Note that at noise rate 1.0 an answer containing every component also counts, as in the
    original (``elif 0 not in label and 1 in label``).
    """
    if noise_rate == 1 and len(labels) > 0 and labels[0] == -1:
        return True
    return 0 not in labels and 1 in labels


def accuracy(all_labels: Sequence[Sequence[int]], noise_rate: float) -> tuple[float | None, int]:
    """``all_rate`` = correct items / items; returns (rate, tt).  None when there are no items
    (the original divides by zero)."""
    tt = sum(1 for labels in all_labels if is_correct(labels, noise_rate))
    return (tt / len(all_labels) if all_labels else None), tt


@dataclass(frozen=True)
class FactRates:
    fact_check_rate: float | None  # ED
    correct_rate: float | None  # CR
    fact_tt: int
    correct_tt: int


def fact_rates(all_labels: Sequence[Sequence[int]], factlabels: Sequence[int]) -> FactRates:
    """evalue.py, ``_fact`` datasets: ED = factlabel items / N; CR = (factlabel and
    ``0 not in labels``) / factlabel items, 0 when no item has a factlabel (as the original)."""
    if len(all_labels) != len(factlabels):
        raise ValueError("labels and factlabels differ in length")
    fact_tt = sum(1 for f in factlabels if f == 1)
    correct_tt = sum(1 for labels, f in zip(all_labels, factlabels, strict=True)
                     if f == 1 and 0 not in labels)
    if not all_labels:
        return FactRates(None, None, 0, 0)
    return FactRates(fact_tt / len(all_labels), correct_tt / fact_tt if fact_tt else 0.0,
                     fact_tt, correct_tt)


def judge_reject_rate(flags: Sequence[bool]) -> float | None:
    """Rej* / ED*: the share of items the judge flagged (reject_evalue.py / fact_evalue.py:
    ``rejecttt / len(results)``)."""
    return sum(1 for f in flags if f) / len(flags) if flags else None


def judged_correct_rate(detected: Sequence[bool], all_labels: Sequence[Sequence[int]]
                        ) -> float | None:
    """fact_evalue.py ``correct_rate``: (judge-detected and every component found) / detected,
    0 when none was detected."""
    det = sum(1 for d in detected if d)
    if not detected:
        return None
    ok = sum(1 for d, labels in zip(detected, all_labels, strict=True)
             if d and 0 not in labels and 1 in labels)
    return ok / det if det else 0.0


# ------------------------------------------------------------------ lenient (opt-in)

# Broad keyword lists of the kind used by re-implementations; NOT the paper's metric.
LENIENT_REJECT_MARKERS = (
    "insufficient information", "not enough information", "no information",
    "cannot answer", "can not answer", "can't answer", "unable to answer",
    "not able to answer", "does not contain", "do not contain", "doesn't contain",
    "not mentioned", "not provided", "no relevant", "i don't know", "i do not know",
    "unknown", "信息不足", "无法回答", "不能回答", "没有提供", "未提及", "不知道", "无法确定",
)
LENIENT_FACT_MARKERS = (
    "factual error", "factually incorrect", "incorrect information", "contain errors",
    "contains errors", "contains an error", "inconsistent", "inconsistency", "misinformation",
    "is incorrect", "is wrong", "not accurate", "inaccurate",
    "事实性错误", "事实错误", "有误", "错误", "不一致", "不准确",
)
# An alternative matches when at least this share of its tokens occurs in the prediction.
LENIENT_OVERLAP = 0.5

_WORD = re.compile(r"\w+", re.UNICODE)


def _lenient_tokens(text: str) -> list[str]:
    """Lowercased word tokens; CJK characters count one token each."""
    text = unicodedata.normalize("NFKC", text).lower()
    out: list[str] = []
    for word in _WORD.findall(text):
        if any("\u4e00" <= ch <= "\u9fff" or "\u3040" <= ch <= "\u30ff" for ch in word):
            out.extend(ch for ch in word)
        else:
            out.append(word)
    return out


def _lenient_found(prediction_tokens: set[str], prediction_norm: str, alternative: str) -> bool:
    alt_norm = unicodedata.normalize("NFKC", str(alternative)).lower()
    if alt_norm and alt_norm in prediction_norm:
        return True
    toks = _lenient_tokens(alt_norm)
    if not toks:
        return False
    hit = sum(1 for t in toks if t in prediction_tokens)
    return hit / len(toks) >= LENIENT_OVERLAP


def lenient_labels(prediction: str, ground_truth: Answer, *, remove_spaces: bool) -> RgbLabel:
    """Opt-in flexible labelling (not comparable with the paper): broad, case-insensitive
    refusal and error keyword lists; an alternative is found when its NFKC-lowercased text
    occurs in the prediction or at least ``LENIENT_OVERLAP`` of its tokens do."""
    text = clean_prediction(prediction, remove_spaces)
    low = unicodedata.normalize("NFKC", text).lower()
    factlabel = int(any(m in low for m in LENIENT_FACT_MARKERS))
    if any(m in low for m in LENIENT_REJECT_MARKERS):
        return RgbLabel(labels=(-1,), factlabel=factlabel, prediction=text)
    ptoks = set(_lenient_tokens(low))
    components = [ground_truth] if not isinstance(ground_truth, list) else ground_truth
    labels = []
    for comp in components:
        alts = comp if isinstance(comp, list) else [comp]
        labels.append(int(any(_lenient_found(ptoks, low, str(a)) for a in alts)))
    return RgbLabel(labels=tuple(labels), factlabel=factlabel, prediction=text)
