"""Parsing a judge's single-call JSON labelling reply into RAGBench's label columns (pure).

Robust extraction: code fences and text around the JSON are ignored; a truncated object is
closed (open strings, arrays and objects) after cutting the unfinished member; keys are
normalized (``"0b."`` -> ``0b``, quotes, spaces, case).  Schema repair follows the paper's
post-processing (arXiv:2407.11005, section 4): keys that name no sentence are removed and
counted (``dropped_keys``), duplicates are removed and counted (``duplicate_keys``).  A reply
without JSON, or without a required field, or without a verdict for some response sentence,
is unscored with a reason (``no_json``, ``missing_field``, ``missing_support``), and so is a
``fully_supported`` that is no verdict spelling (``invalid_verdict``, :func:`read_verdict`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter._util._json import extract_json
from ragmeter.trace._metrics import adherence, unsupported_keys

__all__ = ["ParsedLabels", "ParseFailure", "extract_json", "normalize_key", "parse_labels",
           "read_verdict", "SPECIAL_SUPPORT_KEYS"]

# Strings the RAGBench prompt allows in supporting_sentence_keys instead of a sentence key.
SPECIAL_SUPPORT_KEYS = frozenset({"supported_without_sentence", "general", "well_known_fact",
                                  "numerical_reasoning"})
REQUIRED_FIELDS = ("all_relevant_sentence_keys", "sentence_support_information",
                   "all_utilized_sentence_keys")


@dataclass(frozen=True)
class ParseFailure:
    reason: str
    detail: str


@dataclass(frozen=True)
class ParsedLabels:
    relevant_keys: tuple[str, ...]
    utilized_keys: tuple[str, ...]
    support: tuple[dict[str, Any], ...]
    unsupported_keys: tuple[str, ...]
    overall_supported: bool | None
    relevance_explanation: str = ""
    overall_supported_explanation: str = ""
    dropped_keys: int = 0
    duplicate_keys: int = 0
    repaired: bool = False
    dropped_examples: tuple[str, ...] = field(default_factory=tuple)

    def to_columns(self) -> dict[str, Any]:
        """RAGBench's column names and layout."""
        return {
            "relevance_explanation": self.relevance_explanation,
            "all_relevant_sentence_keys": list(self.relevant_keys),
            "overall_supported_explanation": self.overall_supported_explanation,
            "overall_supported": self.overall_supported,
            "sentence_support_information": [dict(s) for s in self.support],
            "unsupported_response_sentence_keys": list(self.unsupported_keys),
            "all_utilized_sentence_keys": list(self.utilized_keys),
            "adherence_score": adherence(self.unsupported_keys),
            "dropped_keys": self.dropped_keys,
            "duplicate_keys": self.duplicate_keys,
            "json_repaired": self.repaired,
        }


def normalize_key(key: Any) -> str:
    """``" 0B. "`` -> ``0b``; ``"'a'"`` -> ``a``; ``"(2c)"`` -> ``2c``."""
    text = str(key).strip().strip("'\"`").strip()
    text = text.strip("()[]").strip()
    text = text.rstrip(".:,;)").strip()
    return text.lower()


# The spellings of a yes/no verdict that judges and labels files use (issue 24.6).
VERDICT_TRUE = frozenset({"true", "yes", "1"})
VERDICT_FALSE = frozenset({"false", "no", "0"})


def read_verdict(value: Any) -> bool | None | ParseFailure:
    """A yes/no verdict (``fully_supported``) as a judge's reply or a labels file writes it.

    True: JSON ``true``, the number 1, or the string ``true``/``yes``/``1`` (any case, spaces
    around); False: ``false``, 0, ``false``/``no``/``0``.  ``None`` (null) and NaN (a missing
    value in a DataFrame) are no verdict, which :func:`~ragmeter.trace._metrics.unsupported_keys`
    counts as not fully supported, as the paper does.  Anything else (``"maybe"``, 2, ``""``, a
    list) is a :class:`ParseFailure` ``invalid_verdict``: never read as false in silence.
    """
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        value = value.item()  # a numpy scalar from Parquet or pandas
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        if value != value:  # NaN
            return None
        if value in (0, 1):
            return bool(value)
    elif isinstance(value, str):
        text = value.strip().lower()
        if text in VERDICT_TRUE:
            return True
        if text in VERDICT_FALSE:
            return False
    return ParseFailure("invalid_verdict", f"{str(value)[:40]!r} is not a verdict (true/false, "
                                           "yes/no or 1/0)")


class _KeyFilter:
    def __init__(self, allowed: set[str], special: frozenset[str] = frozenset()) -> None:
        self.allowed = allowed
        self.special = special
        self.dropped = 0
        self.duplicates = 0
        self.examples: list[str] = []

    def keys(self, raw: Any) -> list[str]:
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, list):
            return []
        out: list[str] = []
        for item in raw:
            key = normalize_key(item)
            if key in self.allowed or key in self.special:
                if key in out:
                    self.duplicates += 1
                else:
                    out.append(key)
            else:
                self.dropped += 1
                if len(self.examples) < 5:
                    self.examples.append(str(item))
        return out


def parse_labels(text: str, document_keys: Sequence[str],
                 response_keys: Sequence[str]) -> ParsedLabels | ParseFailure:
    """Parse a labelling reply against the keys actually shown to the judge."""
    obj, repaired = extract_json(text)
    if obj is None:
        return ParseFailure("no_json", f"no JSON object in the reply ({text[:60]!r})")
    fields = {normalize_key(k).replace(" ", "_"): v for k, v in obj.items()}
    missing = [f for f in REQUIRED_FIELDS if f not in fields]
    if missing:
        return ParseFailure("missing_field", f"the reply has no {', '.join(missing)}"
                            + (" (truncated reply)" if repaired else ""))
    docs = _KeyFilter({k.lower() for k in document_keys})
    relevant = docs.keys(fields["all_relevant_sentence_keys"])
    utilized = docs.keys(fields["all_utilized_sentence_keys"])
    support_keys = _KeyFilter({k.lower() for k in document_keys}, SPECIAL_SUPPORT_KEYS)
    resp_allowed = {k.lower() for k in response_keys}
    info = fields["sentence_support_information"]
    if not isinstance(info, list):
        return ParseFailure("missing_field", "sentence_support_information is not a list")
    support: dict[str, dict[str, Any]] = {}
    dropped_resp = 0
    for item in info:
        if not isinstance(item, dict):
            dropped_resp += 1
            continue
        item = {normalize_key(k).replace(" ", "_"): v for k, v in item.items()}
        key = normalize_key(item.get("response_sentence_key", ""))
        if key not in resp_allowed or key in support:
            dropped_resp += 1
            continue
        verdict = read_verdict(item.get("fully_supported"))
        if isinstance(verdict, ParseFailure):
            return ParseFailure(verdict.reason, f"response sentence {key}: fully_supported "
                                                f"{verdict.detail}")
        support[key] = {
            "response_sentence_key": key,
            "explanation": str(item.get("explanation") or ""),
            "supporting_sentence_keys": support_keys.keys(item.get("supporting_sentence_keys")),
            "fully_supported": verdict,
        }
    lacking = [k for k in response_keys if k.lower() not in support]
    if lacking:
        return ParseFailure("missing_support", "no support verdict for response sentence(s) "
                            + ", ".join(lacking[:5]) + (" (truncated reply)" if repaired else ""))
    ordered = tuple(support[k.lower()] for k in response_keys)
    unsupported = unsupported_keys((s["response_sentence_key"], s["fully_supported"])
                                   for s in ordered)
    overall = read_verdict(fields.get("overall_supported"))
    return ParsedLabels(
        relevant_keys=tuple(relevant), utilized_keys=tuple(utilized), support=ordered,
        unsupported_keys=unsupported,
        # informational (adherence comes from the sentences' verdicts): unreadable is None
        overall_supported=None if isinstance(overall, ParseFailure) else overall,
        relevance_explanation=str(fields.get("relevance_explanation") or ""),
        overall_supported_explanation=str(fields.get("overall_supported_explanation") or ""),
        dropped_keys=docs.dropped + support_keys.dropped + dropped_resp,
        duplicate_keys=docs.duplicates + support_keys.duplicates, repaired=repaired,
        dropped_examples=tuple(docs.examples + support_keys.examples),
    )
