"""The features of ragmeter's fitted semantic score: lexical, numeric and script agreement of
an answer with its gold answer, in any language, with no model (pure).

Every feature is a number computed from the gold answer, the answer and the sample's language
(:data:`FEATURES`, in the order of the fitted file's coefficients):

- ``f1``, ``em``, ``contains``: LBRAG's token F1 and exact match, and ragmeter's ``contains``
  (the gold occurs in the answer), on LBRAG-normalized text (:mod:`ragmeter.multilingual.
  _metrics`, characters are the tokens for ja and zh);
- ``recall``: the share of the gold's tokens found in the answer (F1 punishes a right answer
  said in a sentence; recall does not);
- ``char2_f1``, ``char2_recall``, ``char3_f1``, ``char3_recall``: the same over character
  2- and 3-grams of the normalized text with spaces removed: inflected forms ("35 Jahre" for
  "35 Jahr"), transliteration variants ("Lordi"/"Lord") and scripts written without spaces
  (Thai) still overlap;
- ``num_gold``: the gold holds a number; ``num_recall``: the share of the gold's numbers that
  occur in the answer, read with either decimal mark ("3,5" is 3.5, "149,440.0" is 149440,
  "2.560" is 2.56 or 2560) and dates split into their parts ("2016-11-18": 2016, 11, 18);
  ``num_conflict``: the gold has numbers, the answer has numbers, and none agrees;
- ``script_mismatch``: the gold and the answer are written mostly in different scripts (a
  Chinese gold answered in Latin letters): the lexical features cannot see agreement there;
- ``log_len``: log(1 + the answer's tokens).

Numbers are read from the raw text (normalization drops the decimal mark).  Units are not
compared: "63 miles" and "101 km" agree in meaning and share no feature.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from ragmeter.multilingual._metrics import contains, exact_match_normalized, f1_normalized
from ragmeter.text._normalize import normalize_text
from ragmeter.text._overlap import multiset_overlap, tokens_for_f1

__all__ = ["FEATURE_VERSION", "FEATURES", "semantic_features", "numbers_in", "dominant_script"]

FEATURE_VERSION = "semantic-features-1"
FEATURES = ("f1", "em", "contains", "recall", "char2_f1", "char2_recall", "char3_f1",
            "char3_recall", "num_gold", "num_recall", "num_conflict", "script_mismatch",
            "log_len")

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def _readings(token: str) -> frozenset[float]:
    """The values a number written ``token`` can have: ``.`` or ``,`` as the decimal mark
    (the other one grouping thousands)."""
    out = set()
    for decimal, group in ((".", ","), (",", ".")):
        text = token.replace(group, "").replace(decimal, ".")
        try:
            out.add(round(float(text), 6))
        except ValueError:  # "1.2.3" with "." as the decimal mark
            continue
    return frozenset(out)


def numbers_in(text: str) -> list[frozenset[float]]:
    """Every number of ``text`` as the set of its readings (``"2016-11-18"``: three numbers;
    ``"3,5"``: {3.5, 35})."""
    return [_readings(m.group()) for m in _NUMBER.finditer(text)]


def _script(ch: str) -> str | None:
    """The script class of one character of normalized text (None: a digit)."""
    o = ord(ch)
    if ch.isdigit():
        return None
    for lo, hi, name in _SCRIPTS:
        if lo <= o < hi:
            return name
    return "other"


_SCRIPTS = ((0, 0x250, "latin"), (0x400, 0x500, "cyrillic"), (0x590, 0x600, "hebrew"),
            (0x600, 0x700, "arabic"), (0xFB50, 0xFF00, "arabic"), (0xE00, 0xE80, "thai"),
            (0x1100, 0x1200, "hangul"), (0xAC00, 0xD7B0, "hangul"), (0x3040, 0x3100, "kana"),
            (0x4E00, 0xA000, "han"))


def dominant_script(normalized: str) -> str | None:
    """The script most of the letters of a normalized text are written in (None: no
    letters); ties go to the script met first."""
    counts: dict[str, int] = {}
    for ch in normalized:
        if ch != " ":
            s = _script(ch)
            if s is not None:
                counts[s] = counts.get(s, 0) + 1
    return max(counts, key=lambda s: counts[s]) if counts else None


def _grams(normalized: str, n: int) -> list[str]:
    text = normalized.replace(" ", "")
    if len(text) < n:
        return [text] if text else []
    return [text[i:i + n] for i in range(len(text) - n + 1)]


def _precision_recall(pred: Sequence[str], gold: Sequence[str]) -> tuple[float, float]:
    if not pred or not gold:
        return 0.0, 0.0
    common = multiset_overlap(list(pred), list(gold))
    return common / len(pred), common / len(gold)


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def semantic_features(gold: str, answer: str, lang: str) -> list[float]:
    """The :data:`FEATURES` of one answer, in that order (every value finite)."""
    g, a = normalize_text(gold), normalize_text(answer)
    out = [f1_normalized(a, g, lang), exact_match_normalized(a, g, lang), contains(a, g, lang)]
    a_tokens = tokens_for_f1(a, lang)
    out.append(_precision_recall(a_tokens, tokens_for_f1(g, lang))[1])
    for n in (2, 3):
        p, r = _precision_recall(_grams(a, n), _grams(g, n))
        out += [_f1(p, r), r]
    gold_numbers = numbers_in(gold)
    answer_numbers = frozenset().union(*numbers_in(answer))
    found = sum(1 for readings in gold_numbers if readings & answer_numbers)
    out += [1.0 if gold_numbers else 0.0,
            found / len(gold_numbers) if gold_numbers else 0.0,
            1.0 if gold_numbers and answer_numbers and not found else 0.0]
    gs, as_ = dominant_script(g), dominant_script(a)
    out.append(1.0 if gs and as_ and gs != as_ else 0.0)
    out.append(math.log1p(len(a_tokens)))
    return out
