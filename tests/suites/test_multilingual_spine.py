"""The multilingual family on the one-spine shape (issues 24, 25): its METRICS table is what
the scorer, the items and the signature are made of."""

from __future__ import annotations

import dataclasses
import json

import pytest

import ragmeter
from ragmeter.io._samples import sample_path
from ragmeter.multilingual import _metrics
from ragmeter.multilingual._metrics import (
    METRIC_KEYS,
    METRIC_VERSION,
    METRICS,
    PAIRED_METRICS,
    ROWS,
    exact_match_normalized,
    f1_normalized,
    signature_fields,
)
from ragmeter.multilingual._scorer import MultilingualConfig
from ragmeter.stats import MetricTable
from ragmeter.text._normalize import normalize_text
from ragmeter.text._overlap import exact_match, token_f1
from tests.conftest import shared

SAMPLE = sample_path("multilingual_answers.jsonl")


def _with_constant(name: str, **constants: object) -> MetricTable:
    """METRICS with one metric's constants replaced."""
    return MetricTable("multilingual", METRIC_VERSION, [
        dataclasses.replace(m, constants={**m.constants, **constants}) if m.name == name
        else m for m in METRICS])


def test_the_table_names_every_metric_once_with_a_definition_and_a_source() -> None:
    assert METRICS.family == "multilingual" and METRICS.version == METRIC_VERSION == "lbrag-1"
    assert METRICS.names == ("em", "f1", "rlc", "rlc_ok", "cost", "cnbe", "semantic_score",
                             "rlc_lid")
    assert len(ROWS) == len(METRICS)
    for m in ROWS:
        assert m.label and m.description and m.source, m.name
        assert m.row in ("answer", "response", "given", "baseline", "lid") or m.of in METRICS
    assert [m.name for m in ROWS if not m.higher_is_better] == ["cost"]
    assert all(name in METRICS for name in PAIRED_METRICS)


def test_metric_keys_are_the_keys_of_lbrags_metrics_json() -> None:
    doc = json.loads(shared("lbrag", "20251214_2145", "20251214_2145_metrics.json")
                     .read_text(encoding="utf-8"))
    keys = list(doc["metrics"]["direct"])
    assert [k for k in keys if not k.endswith("_std") and k != "n"] == list(METRIC_KEYS)


@pytest.mark.parametrize(("prediction", "gold", "lang"), [
    ("Paris", "paris", "en"),                      # identical after normalization
    ("the city of Paris", "Paris", "en"),          # partial overlap
    ("Berlin", "Paris", "en"),                     # disjoint
    ("", "Paris", "en"),                           # one side empty
    ("!!", "?", "en"),                             # both empty after normalization
    ("東京です", "東京", "ja"),                     # characters are the tokens
    ("北京", "北京市", "zh_cn"),
])
def test_answer_functions_equal_lbrags_functions_on_raw_text(prediction, gold, lang) -> None:
    """The table's per-row functions take normalized answers; on raw text they are LBRAG's
    exact_match and token F1 (ragmeter.text._overlap, tested against LBRAG's rows)."""
    pn, gn = normalize_text(prediction), normalize_text(gold)
    assert exact_match_normalized(pn, gn, lang) == exact_match(prediction, gold)
    assert f1_normalized(pn, gn, lang) == token_f1(prediction, gold, lang)


def test_every_number_of_a_score_is_a_metric_of_the_table() -> None:
    result = ragmeter.multilingual.score(SAMPLE, ci=True)
    for system, values in result.summary["metrics"].items():
        names = [k for k in values if not k.endswith(("_std", "_n")) and k != "n"]
        assert names == [n for n in METRICS.names if n != "rlc_lid"], system
        assert list(result.summary["ci95"][system]) == names
    item = next(i for i in result.items if i["status"] == "ok")
    assert [k for k in item if k in METRICS] == names


def test_the_signature_is_built_from_the_tables_constants(monkeypatch) -> None:
    # the strings of earlier releases are kept (golden: the signature of ragmeter 0.1.0)
    assert signature_fields() == {"f1": "char:ja,zh,zh_cn,zh_tw", "rlc": "script>=0.6"}
    before = MultilingualConfig().signature().render()
    assert "|f1:char:ja,zh,zh_cn,zh_tw|" in before and "|rlc:script>=0.6|" in before
    # a changed threshold or tokenization is a changed signature
    assert signature_fields(_with_constant("rlc_ok", threshold=0.5))["rlc"] == "script>=0.5"
    assert signature_fields(_with_constant("f1", char_token_languages=("ja", "ko")))["f1"] \
        == "char:ja,ko"
    monkeypatch.setattr(_metrics, "METRICS", _with_constant("rlc_ok", threshold=0.7))
    after = MultilingualConfig().signature().render()
    assert after != before and "|rlc:script>=0.7|" in after
