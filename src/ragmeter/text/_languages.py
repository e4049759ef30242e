"""Language codes accepted in data files, and their classes for language-aware metrics."""

from __future__ import annotations

import re

__all__ = ["ISO_639_1", "canonical_language", "is_known_language", "CHAR_TOKEN_LANGUAGES"]

# ISO 639-1 two-letter codes (plus "no"/"nb"/"nn" and "iw"/"in"/"ji" legacy codes).
ISO_639_1 = frozenset(
    """aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu
    cv cy da de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho
    hr ht hu hy hz ia id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv
    kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no nr
    nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq
    sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh
    yi yo za zh zu iw in ji""".split()
)

# LBRAG tokenizes these by character for F1 (``lbrag/metrics.py``).
CHAR_TOKEN_LANGUAGES = frozenset({"ja", "zh", "zh_cn", "zh_tw"})

_CODE = re.compile(r"^([a-z]{2})(?:[_-]([a-z0-9]{2,4}))?$")


def canonical_language(code: str) -> str:
    """Lowercase and use ``_`` as separator: ``zh-CN`` -> ``zh_cn``."""
    return code.strip().lower().replace("-", "_")


def is_known_language(code: str) -> bool:
    """True for an ISO 639-1 code, optionally with a region/script suffix (``pt_br``)."""
    m = _CODE.match(canonical_language(code))
    return m is not None and m.group(1) in ISO_639_1
