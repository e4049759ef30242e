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
    AGREEMENT_METRICS,
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
    lbrag = ("em", "f1", "rlc", "rlc_ok", "cost", "cnbe", "semantic_score")
    assert [n for n in METRICS.names if n in lbrag] == list(lbrag)  # in LBRAG's order
    assert ROWS[-1].name == "rlc_lid"  # opt-in: the last column when computed
    # then the judge's agreement with reference scores: corpus-level, not row metrics
    assert list(METRICS.names[len(ROWS):]) == list(AGREEMENT_METRICS.names) == [
        "semantic_auroc", "semantic_spearman", "semantic_mae"]
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
        assert names == [m.name for m in ROWS if m.name != "rlc_lid"], system
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


# ------------------------------------------------------------------ headlines (issue 25)


def _answers() -> list[dict]:
    """Two systems over four samples; ``sys_b`` has no prediction for sample 3 (unscored) and
    no cost for sample 2."""
    rows = []
    for i in range(4):
        gold = f"answer {i}"
        rows.append({"sample_id": str(i), "sample_lang": "en", "system": "direct",
                     "gold_answer": gold, "pred_answer": gold if i < 2 else "nothing",
                     "translate_tokens": 0})
        rows.append({"sample_id": str(i), "sample_lang": "en", "system": "sys_b",
                     "gold_answer": gold, "pred_answer": None if i == 3 else gold,
                     **({} if i == 2 else {"translate_tokens": 10})})
    return rows


def test_score_headline_has_every_metric_of_every_system() -> None:
    from ragmeter.testing import assert_metric

    result = ragmeter.multilingual.score(_answers(), ci=True, resamples=200)
    doc = result.summary
    rows = {(h.group, h.metric): h for h in result.headline}
    assert {g for g, _ in rows} == {"direct", "sys_b"}  # systems are the groups; no "all"
    for (system, metric), h in rows.items():
        m = doc["metrics"][system]
        assert h.value == m[metric] and list(h.ci or ()) == doc["ci95"][system][metric]
        assert h.higher_is_better is METRICS.get(metric).higher_is_better
        assert_metric(result, metric, group=system, min=-1e9)  # reachable by name
    # metrics without a value are left out: no semantic scores in these rows
    assert ("direct", "semantic_score") not in rows
    direct_em, b_em, b_cost = rows[("direct", "em")], rows[("sys_b", "em")], \
        rows[("sys_b", "cost")]
    assert (direct_em.value, direct_em.n, direct_em.coverage) == (0.5, 4, 1.0)
    assert (b_em.value, b_em.n, b_em.coverage) == (1.0, 3, 0.75)  # 1 of 4 rows unscored
    assert (b_cost.n, b_cost.coverage) == (2, 0.5)  # sample 2 has no cost
    assert b_cost.higher_is_better is False
    assert rows[("sys_b", "cnbe")].n == 2
    assert doc["headline"] == [h.to_dict() for h in result.headline]


def test_score_headline_without_ci_has_no_interval() -> None:
    result = ragmeter.multilingual.score(_answers())
    assert result.headline and all(h.ci is None for h in result.headline)


def _judge_rows() -> list[dict]:
    return [{"sample_id": str(i), "sample_lang": "de" if i % 2 else "en", "system": "s",
             "question": f"q{i}", "gold_answer": f"answer {i}", "pred_answer": f"reply {i}"}
            for i in range(8)]


def test_judge_headline_signature_and_by_groups(scripted_server) -> None:
    scores = iter([0.2, 0.9, 0.4, 0.7, 0.1, 0.8, 0.3, 0.6] * 3)
    server = scripted_server(
        reply=lambda body: json.dumps({"score": next(scores), "explanation": "x"}))
    backend = ragmeter.backends.openai("judge-model", base_url=server.url)
    result = ragmeter.multilingual.judge(_judge_rows(), scoring="generate", backend=backend,
                                         by="lang", progress=False)
    assert not result.alarms
    sig = result.signature
    for part in ("family:multilingual", "backend:openai", "judge:judge-model",
                 "scoring:generate", "prompt:"):
        assert part in sig, (part, sig)
    rows = {h.group: h for h in result.headline}
    assert list(rows) == ["all", "de", "en"]
    overall = rows["all"]
    assert overall.metric == "semantic_score" and overall.flag is None
    assert overall.value == result.summary["metrics"]["semantic_score"]
    assert list(overall.ci or ()) == result.summary["ci95"]["semantic_score"]
    assert (overall.n, overall.coverage) == (8, 1.0)
    de = result.summary["groups"]["values"]["de"]
    assert (rows["de"].value, rows["de"].n) == (de["metrics"]["semantic_score"], 4)
    from ragmeter.testing import check_metric

    (check,) = check_metric(result, "semantic_score", min=0.0)  # the "all" row by default
    assert check.value == overall.value
    (check,) = check_metric(result, "semantic_score", group="en", min=0.0)
    assert check.n == 4


def test_judge_headline_is_flagged_when_the_judge_is_degenerate(scripted_server) -> None:
    server = scripted_server(reply=lambda body: '{"score": 1.0, "explanation": "same"}')
    backend = ragmeter.backends.openai("j", base_url=server.url)
    result = ragmeter.multilingual.judge(_judge_rows(), scoring="generate", backend=backend,
                                         progress=False)
    assert result.alarms[0]["kind"] == "degenerate_judge"
    (row,) = result.headline
    assert row.value == 1.0 and row.flag and row.flag.startswith("degenerate judge")


def test_judge_dry_run_names_the_judge_in_its_signature(tmp_path) -> None:
    backend = ragmeter.backends.openai("gpt-4o-mini", base_url="http://127.0.0.1:9")
    result = ragmeter.multilingual.judge(_judge_rows(), scoring="generate", backend=backend,
                                         repeats=2, dry_run=True, store=tmp_path / "s.sqlite")
    assert result.summary["dry_run"] is True
    assert "judge:gpt-4o-mini" in result.signature and "repeats:2" in result.signature


# ------------------------------------------------------------------ the family's report parts


def test_report_parts_are_found_through_the_family_table() -> None:
    from ragmeter.multilingual import _report
    from ragmeter.reports import html_families

    assert html_families.section_of("multilingual") is _report.section
    assert html_families.paired_units_of("multilingual") is _report.paired_units
    assert "multilingual" not in html_families.SECTIONS
    assert "multilingual" not in html_families.PAIRED_UNITS
    result = ragmeter.multilingual.score(SAMPLE, ci=True)
    html = str(_report.section(result.summary))
    for m in ROWS:  # every computed column is a table row's label
        assert (f"<th class=num>{m.label}</th>" in html) is (m.name != "rlc_lid"), m.name
    units = _report.paired_units(result.items)
    assert set(units) == {(s, k) for s in result.summary["metrics"] for k in PAIRED_METRICS}


def test_console_headings_are_lbrags_keys_in_capitals() -> None:
    from ragmeter.multilingual._report import console_heading

    headings = {m.name: console_heading(m) for m in ROWS}
    assert [headings[k] for k in ("em", "f1", "rlc", "rlc_ok", "cost", "cnbe", "semantic_score",
                                  "rlc_lid")] == ["EM", "F1", "RLC", "RLC_OK", "COST", "CNBE",
                                                  "semantic", "RLC_LID"]


def test_run_list_reads_the_headline_and_old_records_alike() -> None:
    from ragmeter.multilingual._metrics import METRICS, headline
    from ragmeter.view.listing import run_headlines

    def _multilingual(doc: dict) -> list:  # the run list's numbers: the main metric (F1)
        return run_headlines("multilingual", doc)[0]

    result = ragmeter.multilingual.score(SAMPLE, ci=True)
    new = _multilingual(result.summary)
    old = _multilingual({k: v for k, v in result.summary.items() if k != "headline"})
    assert new == old and [h.label for h in new] == ["direct F1", "retrieve F1", "bridge F1"]
    assert new[0].value == result.summary["metrics"]["direct"]["f1"] and new[0].ci is not None
    judged = {"verb": "judge", "metrics": {"semantic_score": 0.5, "n": 4},
              "ci95": {"semantic_score": [0.25, 0.75]},
              "coverage": {"rows": 4, "scored": 4, "unscored": 0, "reasons": {}}}
    (row,) = headline(judged)  # headline(summary) serves every verb
    assert (row.metric, row.group, row.n, row.coverage) == ("semantic_score", "all", 4, 1.0)
    (shown,) = _multilingual(judged)  # no F1 in a judge result: its one number
    assert (shown.label, shown.value, shown.ci) == (METRICS.get("semantic_score").label, 0.5,
                                                    (0.25, 0.75))


def test_the_launch_form_lives_with_the_family() -> None:
    from ragmeter._families import family_part
    from ragmeter.view import verbs

    (form,) = family_part("multilingual", "_form", "FORMS")
    assert form.key == "multilingual-judge" and verbs.SPECS[form.key] is form
    assert all(s.family != "multilingual" for s in verbs._HERE)
    assert form.call.__module__ == "ragmeter.multilingual._form"


# ------------------------------------------------------------------ option groups


def test_no_verb_takes_more_than_a_dozen_parameters() -> None:
    import inspect

    for verb in (ragmeter.multilingual.score, ragmeter.multilingual.judge):
        params = inspect.signature(verb).parameters
        assert len(params) <= 12, (verb.__name__, list(params))
    assert "JudgeOptions" in ragmeter.multilingual.__all__
    with pytest.raises(dataclasses.FrozenInstanceError):
        ragmeter.multilingual.JudgeOptions().repeats = 2  # type: ignore[misc]


def test_score_takes_groups_and_the_plain_keywords_of_earlier_releases() -> None:
    grouped = ragmeter.multilingual.score(
        SAMPLE, output=ragmeter.OutputOptions(ci=True, resamples=300, seed=7, by="lang"))
    plain = ragmeter.multilingual.score(SAMPLE, ci=True, resamples=300, seed=7, by="lang")
    assert grouped.summary == plain.summary and "groups" in plain.summary
    assert "bootstrap:300@seed7" in plain.signature
    # a plain keyword overrides that field of a given group
    mixed = ragmeter.multilingual.score(SAMPLE, output=ragmeter.OutputOptions(ci=True), seed=7,
                                        resamples=300, by="lang")
    assert mixed.summary == plain.summary


def test_score_engine_is_a_group_or_the_old_string() -> None:
    from ragmeter.errors import ConfigError

    rows = _answers()
    with pytest.raises(ConfigError, match="engine='ray' scores Parquet files"):
        ragmeter.multilingual.score(rows, engine="ray")
    with pytest.raises(ConfigError, match="engine='ray' scores Parquet files"):
        ragmeter.multilingual.score(rows, engine=ragmeter.EngineOptions(engine="ray"))
    with pytest.raises(ConfigError, match="engine='spark'; expected local or ray"):
        ragmeter.multilingual.score(rows, engine="spark", ray_workers=3)


def test_an_unknown_keyword_is_a_type_error_with_a_did_you_mean() -> None:
    with pytest.raises(TypeError, match="'resampels'. Did you mean 'resamples'"):
        ragmeter.multilingual.score(SAMPLE, resampels=100)
    with pytest.raises(TypeError, match="'scorign'. Did you mean 'scoring'"):
        ragmeter.multilingual.judge(SAMPLE, scorign="generate")
    with pytest.raises(TypeError, match="judge= takes a JudgeOptions"):
        ragmeter.multilingual.judge(SAMPLE, judge={"scoring": "generate"})


def test_judge_takes_groups_and_plain_keywords_alike(tmp_path) -> None:
    backend = ragmeter.backends.openai("gpt-4o-mini", base_url="http://127.0.0.1:9")
    store = tmp_path / "s.sqlite"
    grouped = ragmeter.multilingual.judge(
        _judge_rows(), backend=backend,
        judge=ragmeter.multilingual.JudgeOptions(scoring="generate", repeats=3),
        run=ragmeter.RunOptions(store=store, dry_run=True))
    plain = ragmeter.multilingual.judge(_judge_rows(), backend=backend, scoring="generate",
                                        repeats=3, store=store, dry_run=True)
    assert grouped.summary == plain.summary and plain.summary["calls"] == 24
