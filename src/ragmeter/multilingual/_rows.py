"""Reading one multilingual answer row: required fields, language code, one or several golds,
cost (``translate_tokens``, else the evidence's token counts) and semantic score, each checked
with an error that names the file, line and field.  Used by the scorer's row path."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragmeter.io import FieldMap, Row, as_number, as_text, is_blank, require, seq_of_dicts
from ragmeter.text._languages import canonical_language, is_known_language

COMPONENT = "multilingual"
REQUIRED = ("sample_id", "sample_lang", "system", "gold_answer", "pred_answer")
# The names `ragmeter app run` writes, read when the row has no column of LBRAG's name (and
# --field maps none): its output is scored as it is (docs/app.md).
ALIASES = {"sample_id": ("id",), "sample_lang": ("lang",), "gold_answer": ("reference",),
           "pred_answer": ("response",)}


class FastPathUnsupported(Exception):
    """Internal: the columnar fast path met something only the row path reports exactly."""


@dataclass(frozen=True)
class _Parsed:
    sample_id: str
    lang: str
    system: str
    gold: str | tuple[str, ...]  # several golds: the score is the max over them (SQuAD)
    pred: str | None
    cost: float | None
    semantic: float | None
    number: int
    question: str | None = None


def _row_cost(row: Row) -> float | None:
    tt = row.data.get("translate_tokens")
    if not is_blank(tt):
        return as_number(row, "translate_tokens", tt, component=COMPONENT, lo=0)
    if "evidence" not in row.data:
        return None
    total = 0.0
    for k, ev in enumerate(seq_of_dicts(row.data.get("evidence"))):
        if not isinstance(ev, dict):
            raise row.error(f"evidence[{k}] is not an object.", component=COMPONENT,
                            field="evidence", fix="give a list of objects with metadata.")
        meta = ev.get("metadata") or {}
        if isinstance(meta, dict) and not is_blank(meta.get("token_count")):
            total += as_number(row, f"evidence[{k}].metadata.token_count",
                               meta["token_count"], component=COMPONENT, lo=0)
    return total


def _gold(row: Row, value: Any) -> str | tuple[str, ...]:
    """One gold answer, or a list of them (scored as the max over the golds, as SQuAD)."""
    if not isinstance(value, (list, tuple)):
        return as_text(row, "gold_answer", value, component=COMPONENT)
    golds = tuple(as_text(row, "gold_answer", g, component=COMPONENT) for g in value)
    if not golds:
        raise row.error("is an empty list.", component=COMPONENT, field="gold_answer",
                        fix="give at least one gold answer.")
    return golds[0] if len(golds) == 1 else golds


def _parse_row(row: Row, fm: FieldMap, lang_ok: dict[str, bool]) -> _Parsed:
    values = {name: require(row, name, component=COMPONENT, field_map=fm) for name in REQUIRED}
    lang_raw = as_text(row, "sample_lang", values["sample_lang"], component=COMPONENT)
    lang = canonical_language(lang_raw)
    known = lang_ok.get(lang)
    if known is None:
        known = lang_ok[lang] = is_known_language(lang)
    if not known:
        raise row.error(f"{lang_raw!r} is not a known language code.", component=COMPONENT,
                        field="sample_lang",
                        fix="use an ISO 639-1 code, optionally with a region: en, de, zh_cn.")
    pred_raw = values["pred_answer"]
    pred = None if pred_raw is None else as_text(row, "pred_answer", pred_raw, component=COMPONENT)
    sem_raw = row.data.get("semantic_score")
    semantic = None if is_blank(sem_raw) else as_number(row, "semantic_score", sem_raw,
                                                        component=COMPONENT, lo=0.0, hi=1.0)
    return _Parsed(
        sample_id=as_text(row, "sample_id", values["sample_id"], component=COMPONENT),
        lang=lang,
        system=as_text(row, "system", values["system"], component=COMPONENT),
        gold=_gold(row, values["gold_answer"]),
        pred=pred,
        cost=_row_cost(row),
        semantic=semantic,
        number=row.number,
        question=(None if is_blank(row.data.get("question")) else
                  as_text(row, "question", row.data["question"], component=COMPONENT)),
    )
