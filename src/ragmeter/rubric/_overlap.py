"""An offline 0–5 rubric grader with no generative model: abstention rule + reference recall.

ragmeter's own judge (not RAGaliq's).  For one answer against its reference answer:

1. **Abstention** → grade 0.  RAGaliq's rubric gives 0 to "the response mentions that there is
   nothing found in the context or documents"; :func:`is_abstention` matches such statements
   with hand-written patterns (en, ru, de, fr, es, zh).  The en and ru patterns were written
   after reading RAGaliq's judged answers, so their measured precision on those runs is
   optimistic; de/fr/es/zh have no labelled data (unvalidated).
2. Otherwise the **reference recall**: the share of the reference's distinct content stems
   (LBRAG-normalized tokens of three or more characters, or digits, cut to their first five
   characters so that inflected Russian/German forms meet; characters for zh/ja) that occur
   in the response.  Grades 1..5 come from four cut points: grade = 1 + #{cut <= recall}.

The cut points are fitted (:func:`fit_cut_points`, coordinate ascent on quadratic-weighted
kappa, deterministic) on labelled grades, e.g. RAGaliq's judged runs; the shipped ones and
their cross-language scores are in ``ragmeter/rubric/data/overlap_v1.json``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ragmeter.text._languages import CHAR_TOKEN_LANGUAGES
from ragmeter.text._normalize import normalize_text

__all__ = ["content_stems", "reference_recall", "is_abstention", "grade_from_recall",
           "fit_cut_points", "ABSTENTION_VERSION"]

ABSTENTION_VERSION = "abstain-1"
STEM_CHARS = 5

_ABSTENTION = re.compile(
    "|".join([
        # en
        r"\b(?:does|do|did) not (?:provide|specify|mention|contain|include|state|say|give)",
        r"\bdoesn't (?:provide|specify|mention|contain|include|state|say)",
        r"\bnot (?:specified|mentioned|provided|stated|found|available|given|included)\b",
        r"\bno (?:specific |relevant |such )?information\b",
        r"\b(?:i|we) (?:don't|do not|cannot|can't) (?:know|find)",
        # ru
        r"\bне (?:содерж|указ|упомина|упомян|предоставл|представл|привод|сообща|найд)",
        r"\bнет (?:конкретной |никакой |такой )?информации",
        r"\bинформаци[яи]\b.{0,60}\bне\b",
        # de
        r"\b(?:nicht|keine) (?:angegeben|erwähnt|enthalten|gefunden|informationen)",
        r"\benthält keine\b",
        # fr
        r"\bne (?:précise|mentionne|contient|fournit|donne|indique) pas\b",
        r"\baucune information\b",
        r"\bn'est pas (?:précisé|mentionné|indiqué)",
        # es
        r"\bno (?:se )?(?:especifica|menciona|contiene|proporciona|indica)\b",
        r"\bno hay información\b",
        r"\bninguna información\b",
        # zh
        r"没有(?:提供|提到|提及|说明|具体|相关)",
        r"未(?:提供|提及|提到|说明|指明)",
        r"(?:不|没)(?:包含|清楚)",
    ]),
    re.IGNORECASE,
)


def is_abstention(response: str) -> bool:
    """True when the answer says the documents hold nothing on the question (see module)."""
    return bool(_ABSTENTION.search(response))


def content_stems(text: str, lang: str = "en") -> set[str]:
    """Distinct content stems of ``text`` (see module docstring)."""
    norm = normalize_text(text)
    if lang in CHAR_TOKEN_LANGUAGES:
        return {ch for ch in norm if not ch.isspace()}
    return {w[:STEM_CHARS] for w in norm.split() if len(w) >= 3 or w.isdigit()}


def reference_recall(reference: str, response: str, lang: str = "en") -> float:
    """Share of the reference's content stems found in the response; 0.0 for a reference
    with no content stem (nothing to recall) or an empty response."""
    ref = content_stems(reference, lang)
    if not ref:
        return 0.0
    return len(ref & content_stems(response, lang)) / len(ref)


def grade_from_recall(recall: float, abstained: bool, cut_points: Sequence[float]) -> int:
    """0 for an abstention, else 1 + the number of cut points at or below ``recall``."""
    if abstained:
        return 0
    return 1 + sum(1 for c in cut_points if c <= recall)


def _qwk(pred: np.ndarray, true: np.ndarray) -> float:
    from ragmeter.rubric._metrics import quadratic_weighted_kappa

    value = quadratic_weighted_kappa(pred.tolist(), true.tolist())
    return -1.0 if value is None else value


def fit_cut_points(recalls: Sequence[float], abstained: Sequence[bool],
                   grades: Sequence[int], *, rounds: int = 4) -> tuple[list[float], float]:
    """Four cut points maximizing quadratic-weighted kappa against ``grades`` on these items.

    Start: the 10/20/35/50% quantiles of the non-abstaining recalls; then ``rounds`` passes of
    coordinate ascent, each cut point tried at every distinct recall (rounded to 3 decimals)
    between its neighbours, keeping strict improvements only (so ties keep the earlier, lower
    candidate: deterministic).  Returns (cut points rounded to 4 decimals, training kappa).
    """
    s = np.round(np.asarray(recalls, dtype=np.float64), 4)
    ab = np.asarray(abstained, dtype=bool)
    y = np.asarray(grades, dtype=np.int64)
    if s.size == 0 or not (~ab).any():
        raise ValueError("fit_cut_points needs at least one non-abstaining answer")

    def predict(cuts: Sequence[float]) -> np.ndarray:
        p = 1 + np.searchsorted(np.asarray(cuts), s, side="right")
        return np.where(ab, 0, p)

    cuts = [round(float(c), 4) for c in np.quantile(s[~ab], [0.10, 0.20, 0.35, 0.50])]
    best = _qwk(predict(cuts), y)
    candidates = np.unique(np.round(s, 3))
    for _ in range(rounds):
        improved = False
        for i in range(4):
            lo = cuts[i - 1] if i > 0 else -np.inf
            hi = cuts[i + 1] if i < 3 else np.inf
            for c in candidates:
                if not lo <= c <= hi:
                    continue
                trial = list(cuts)
                trial[i] = round(float(c), 4)
                value = _qwk(predict(trial), y)
                if value > best + 1e-12:
                    best, cuts, improved = value, trial, True
        if not improved:
            break
    return cuts, best
