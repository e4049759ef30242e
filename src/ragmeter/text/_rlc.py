"""Response-language consistency (RLC), as LBRAG computes it (``lbrag/metrics.py``), and an
opt-in language-identification variant.

RLC is the share of a prediction's counted characters that belong to the expected language's
script.  Skipped: whitespace, digits (``str.isdigit``) and the punctuation ``.,!?;:()[]{}-'"/``
plus en dash and em dash.  Hits: for ``ja*`` Hiragana, Katakana or CJK U+4E00-U+9FFF; for
``zh*`` CJK U+4E00-U+9FFF; for en/de/es/fr/it/pt ``str.isalpha()``; for any other language
``isalpha()`` or CJK or U+3040-U+30FF.  No counted character -> 1.0.  RLC_OK = RLC >= 0.6.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy only inside the batch functions: a small score never imports it
    import numpy as np
    from lingua import Language, LanguageDetector

__all__ = ["rlc", "rlc_ok", "rlc_batch", "RLC_OK_THRESHOLD", "LidRlc", "LID_PLACES"]

RLC_OK_THRESHOLD = 0.6
_SKIP_PUNCT = frozenset(".,!?;:()[]{}-'\"/\u2013\u2014")
_LATIN_ALPHA_LANGS = frozenset({"en", "de", "es", "fr", "it", "pt"})


def _lang_class(lang: str) -> str:
    if lang.startswith("ja"):
        return "ja"
    if lang.startswith("zh"):
        return "zh"
    if lang in _LATIN_ALPHA_LANGS:
        return "alpha"
    return "other"


def _is_cjk(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fff"


def _hit(ch: str, cls: str) -> bool:
    if cls == "ja":
        return "\u3040" <= ch <= "\u309f" or "\u30a0" <= ch <= "\u30ff" or _is_cjk(ch)
    if cls == "zh":
        return _is_cjk(ch)
    if cls == "alpha":
        return ch.isalpha()
    return ch.isalpha() or _is_cjk(ch) or "\u3040" <= ch <= "\u30ff"


def rlc(prediction: str, lang: str) -> float:
    """Response-language consistency of one prediction (reference implementation)."""
    cls = _lang_class(lang)
    total = 0
    hits = 0
    for ch in prediction:
        if ch.isspace() or ch.isdigit() or ch in _SKIP_PUNCT:
            continue
        total += 1
        if _hit(ch, cls):
            hits += 1
    if total == 0:
        return 1.0
    return hits / total


def rlc_ok(rlc_value: float) -> float:
    """1.0 when RLC >= 0.6 (LBRAG's threshold), else 0.0."""
    return 1.0 if rlc_value >= RLC_OK_THRESHOLD else 0.0


def rlc_ok_many(rlc_values: np.ndarray) -> np.ndarray:
    """:func:`rlc_ok` of a float64 array (the same values: NaN gives 0.0 in both)."""
    import numpy as np

    return np.where(rlc_values >= RLC_OK_THRESHOLD, 1.0, 0.0)


# ------------------------------------------------------------------ vectorized RLC
# Per-codepoint class tables, built once (immutable, cached): bit 0 = skipped,
# bit 1 = alpha, bit 2 = CJK, bit 3 = kana (U+3040-U+30FF).  The batch function gives the
# same values as :func:`rlc` (a property test checks it) at a fraction of the cost.

_SKIP, _ALPHA, _CJK, _KANA = 1, 2, 4, 8


_UNKNOWN = 255


def _flags(cp: int) -> int:
    if 0xD800 <= cp <= 0xDFFF:
        return 0
    ch = chr(cp)
    flags = 0
    if ch.isspace() or ch.isdigit() or ch in _SKIP_PUNCT:
        flags |= _SKIP
    if ch.isalpha():
        flags |= _ALPHA
    if 0x4E00 <= cp <= 0x9FFF:
        flags |= _CJK
    if 0x3040 <= cp <= 0x30FF:
        flags |= _KANA
    return flags


@lru_cache(maxsize=1)
def _codepoint_table() -> np.ndarray:
    """Memo of per-code-point flags, filled on demand (a pure function's cache: each entry is
    computed once from ``str`` methods and never changes)."""
    import numpy as np

    table = np.full(0x110000, _UNKNOWN, dtype=np.uint8)
    table[:128] = [_flags(cp) for cp in range(128)]
    return table


def _flags_of(cps: np.ndarray) -> np.ndarray:
    table = _codepoint_table()
    flags = table[cps]
    if (flags == _UNKNOWN).any():
        for cp in sorted(set(cps[flags == _UNKNOWN].tolist())):  # np.unique imports numpy.ma
            table[cp] = _flags(cp)
        flags = table[cps]
    return flags


def rlc_batch(predictions: Sequence[str], langs: Sequence[str]) -> np.ndarray:
    """RLC of many predictions at once; equal to ``[rlc(p, l) for p, l in ...]``."""
    import numpy as np

    n = len(predictions)
    out = np.ones(n, dtype=np.float64)
    if n == 0:
        return out
    joined = "".join(predictions)
    cps = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    flags = _flags_of(cps) if cps.size else np.zeros(0, dtype=np.uint8)
    lengths = np.fromiter(map(len, predictions), dtype=np.int64, count=n)
    owner = np.repeat(np.arange(n), lengths)
    # Per language class, the flag bits that count as a hit (see the module docstring).
    by_lang = {lang: _HIT_BITS[_lang_class(lang)] for lang in set(langs)}
    hit_bits = np.fromiter(map(by_lang.__getitem__, langs), dtype=np.uint8, count=n)
    counted = (flags & _SKIP) == 0
    hit = counted & ((flags & hit_bits[owner]) != 0)
    total = np.bincount(owner[counted], minlength=n)
    hits = np.bincount(owner[hit], minlength=n)
    nz = total > 0
    out[nz] = hits[nz] / total[nz]
    return out


_HIT_BITS = {"ja": _KANA | _CJK, "zh": _CJK, "alpha": _ALPHA, "other": _ALPHA | _CJK | _KANA}


LID_PLACES = 8
"""Decimals of the language-identification RLC (see :class:`LidRlc`)."""


class LidRlc:
    """Language-identification RLC (opt-in, beyond LBRAG).

    LBRAG's RLC checks the script only, so an English answer to a German question scores 1.0.
    This variant asks ``lingua-language-detector`` (which ships its models) for the share of
    the prediction's confidence that goes to the expected language, restricted to the
    languages present in the data.  Empty or digit-only predictions score 1.0, as in LBRAG.
    Construct once per data set; ``score`` is then a pure function of its inputs: lingua
    sums its per-language probabilities in an order that changes between processes and even
    between calls (its confidence for one text varies in the last bits), so the score is
    rounded to :data:`LID_PLACES` decimals, which makes it reproducible (a Ray worker and one
    process give the same value).
    """

    def __init__(self, languages: Sequence[str]) -> None:
        try:
            from lingua import IsoCode639_1, Language, LanguageDetectorBuilder
        except ImportError:
            from ragmeter.errors import MissingDependencyError

            raise MissingDependencyError(
                "lingua-language-detector (needed by --rlc-lid)",
                "pip install 'ragmeter[lang]'",
            ) from None
        self._by_code: dict[str, Language] = {}
        wanted: list[Language] = []
        for code in sorted(set(languages)):
            base = code.split("_")[0]
            if base == "no":
                base = "nb"
            try:
                iso = IsoCode639_1.from_str(base)
                lang = Language.from_iso_code_639_1(iso)
            except (ValueError, AttributeError):
                continue
            self._by_code[code] = lang
            wanted.append(lang)
        self.unsupported = sorted(set(languages) - set(self._by_code))
        self._detector: LanguageDetector | None
        if len(set(wanted)) >= 2:
            self._detector = LanguageDetectorBuilder.from_languages(*set(wanted)).build()
        elif wanted:
            self._detector = None  # one language: nothing to confuse it with
        else:
            self._detector = None

    def supports(self, lang: str) -> bool:
        return lang in self._by_code

    def score(self, prediction: str, lang: str) -> float | None:
        """Confidence in [0, 1] that ``prediction`` is in ``lang``; None when unsupported."""
        target = self._by_code.get(lang)
        if target is None:
            return None
        if not any(ch.isalpha() for ch in prediction):
            return 1.0
        if self._detector is None:
            return 1.0
        return round(float(self._detector.compute_language_confidence(prediction, target)),
                     LID_PLACES)
