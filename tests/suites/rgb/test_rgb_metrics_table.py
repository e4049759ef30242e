"""RGB's METRICS table, the numbers of a setting, the headline of every verb and the signature
built from the table (issues 24, 25)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

import ragmeter
from ragmeter.io._samples import sample_path
from ragmeter.rgb import _metrics as m
from ragmeter.rgb._build import BuildConfig
from ragmeter.rgb._data import load_dataset
from ragmeter.rgb._run import RgbRunConfig, plan_settings
from ragmeter.rgb._scoring import signature_for
from ragmeter.stats import MetricTable
from ragmeter.testing import assert_metric, check_metric
from tests.conftest import shared

# The paper's symbols (Chen et al., AAAI 2024) and the names every door reaches them by.
PAPER = {"accuracy": "Acc", "reject_rate": "Rej", "reject_rate_judged": "Rej*",
         "integration_accuracy": "Acc", "accuracy_no_doc": "Acc", "accuracy_doc": "Acc_doc",
         "ed": "ED", "ed_judged": "ED*", "cr": "CR", "cr_judged": "CR*"}


def test_every_paper_number_has_a_stable_name_its_symbol_and_a_definition() -> None:
    assert m.METRICS.family == "rgb" and m.METRICS.version == m.METRIC_VERSION
    assert {n: m.METRICS.get(n).label for n in PAPER} == PAPER
    for metric in m.METRICS:
        assert metric.description and metric.source and metric.ci == "wilson"
        assert metric.glossary_line().startswith(f"{metric.label}: ")
    judged = {x.name for x in m.METRICS if x.judged}
    assert judged == {"reject_rate_judged", "ed_judged", "cr_judged"}
    # every name a role reports, and every table column, is a row of the table
    for names in m.ROLE_METRICS.values():
        assert set(names) <= set(m.METRICS.names)
    for columns in m.TABLE_COLUMNS.values():
        assert {metric for _, metric in columns} <= set(m.METRICS.names)


def test_released_constants_give_the_released_signature() -> None:
    """The pinned digest is the table's: signatures stay ``metrics:rgb-evalue@65ec39e``."""
    digest = hashlib.sha256(m.METRICS.signature_settings().encode("utf-8")).hexdigest()[:12]
    assert digest == m.RELEASED_CONSTANTS
    assert m.metric_version() == "rgb-evalue@65ec39e"
    assert "accuracy.reject_markers=信息不足,insufficient information" in \
        m.METRICS.signature_settings()


@pytest.mark.parametrize(("metric", "key", "value"), [
    ("accuracy", "reject_markers", ("insufficient information",)),
    ("ed", "fact_markers", ("factual errors", "factual error")),
    ("lenient_accuracy", "overlap", 0.6),
    ("refactor_accuracy", "token_overlap", 0.9),
])
def test_a_changed_constant_changes_the_signature(metric: str, key: str, value: object) -> None:
    changed = MetricTable("rgb", m.METRIC_VERSION, [
        dataclasses.replace(x, constants={**x.constants, key: value}) if x.name == metric
        else x for x in m.METRICS])
    dataset = load_dataset(sample_path("rgb_en.jsonl"))
    config = BuildConfig(noise_rate=0.4)
    released = signature_for(dataset, config)
    other = signature_for(dataset, config, table=changed)
    assert released.startswith("family:rgb|metrics:rgb-evalue@65ec39e|")
    assert other != released and other.startswith("family:rgb|metrics:rgb-evalue@65ec39e+")


@pytest.mark.parametrize(("kind", "noise", "passages", "role"), [
    ("default", 0.0, 5, "noise"), ("default", 0.8, 5, "noise"),
    ("default", 1.0, 5, "rejection"), ("int", 0.4, 5, "integration"),
    ("int", 1.0, 5, "integration"), ("fact", 0.0, 5, "fact_doc"),
    ("fact", 0.0, 0, "fact_nodoc"),
])
def test_setting_role(kind: str, noise: float, passages: int, role: str) -> None:
    assert m.setting_role(kind, noise, passages) == role


def test_rgb_run_plans_the_roles_setting_role_gives() -> None:
    datasets = [load_dataset(sample_path(n)) for n in
                ("rgb_en.jsonl", "rgb_en_int.jsonl", "rgb_en_fact.jsonl")]
    for s in plan_settings(datasets, RgbRunConfig()):
        assert m.setting_role(s.dataset.kind, s.build.noise_rate, s.build.passage_num) == s.role


def test_setting_group_names_data_and_setting() -> None:
    assert m.setting_group("en", 0.4) == "en@0.4"
    assert m.setting_group("en_fact", 0.0, 0.2, 0) == "en_fact@0.0_correct0.2_p0"
    assert BuildConfig(noise_rate=0.0, passage_num=0).label() == "noise0.0_p0"


def test_setting_rates_of_a_counterfactual_setting() -> None:
    """Hand-counted: 10 items, 3 correct, 4 flag an error of which 2 with every component;
    the judge detected 5, of which 1 with every component."""
    scored = {"accuracy": 0.3, "tt": 3, "n": 10, "fact_check_rate": 0.4, "correct_rate": 0.5,
              "fact_tt": 4, "correct_tt": 2}
    judged = {"ed_judged": 0.5, "cr_judged": 0.2, "detected": 5, "n": 10, "cr_correct": 1}
    rates = m.setting_rates("fact_doc", scored, judged)
    assert [(r.metric, r.value, r.hits, r.n) for r in rates] == [
        ("accuracy_doc", 0.3, 3, 10), ("ed", 0.4, 4, 10), ("ed_judged", 0.5, 5, 10),
        ("cr", 0.5, 2, 4), ("cr_judged", 0.2, 1, 5)]
    assert rates[0].ci95 == m.wilson(3, 10)
    assert m.setting_rates("fact_nodoc", {"accuracy": None, "tt": 0, "n": 0})[0].ci95 is None


def test_judged_correct_count_is_crs_numerator() -> None:
    detected = [True, True, False, True]
    labels = [(1, 1), (1, 0), (1,), (-1,)]
    assert m.judged_correct_count(detected, labels) == 1
    assert m.judged_correct_rate(detected, labels) == pytest.approx(1 / 3)


# ------------------------------------------------------------------ the headline of each verb


def _rows(name: str) -> list[dict]:
    path = shared("rgb", name)
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def test_build_headline_is_empty_and_its_signature_names_the_setting() -> None:
    result = ragmeter.rgb.build(sample_path("rgb_en.jsonl"), noise_rate=0.4)
    assert result.headline == [] and result.summary["headline"] == []
    assert result.signature is not None
    assert result.signature.startswith("family:rgb|metrics:rgb-evalue@65ec39e|")
    assert "noise:0.4" in result.signature and "prompts:ragmeter-rgb-instruction-1" in \
        result.signature


def test_score_headline_every_number_with_its_ci_and_n() -> None:
    rows = _rows("en_fact.json")
    preds = [{"id": r["id"], "prediction": (
        f"There are factual errors in the provided documents. {r['answer']}"
        if r["id"] % 2 else "no idea")} for r in rows[:-1]]
    result = ragmeter.rgb.score(preds, data=rows, name="en_fact", noise_rate=0.0,
                                mode="lenient")
    doc = result.summary
    rows_by = {h.metric: h for h in result.headline}
    assert list(rows_by) == ["accuracy_doc", "ed", "cr", "lenient_accuracy", "lenient_ed",
                             "lenient_cr"]
    assert {h.group for h in result.headline} == {"en_fact@0.0"}
    acc = rows_by["accuracy_doc"]
    assert (acc.value, acc.n) == (doc["accuracy"], doc["n"])
    assert list(acc.ci or ()) == m.wilson(doc["tt"], doc["n"])
    assert acc.coverage == doc["coverage"]["scored"] / doc["coverage"]["total"]
    assert (rows_by["cr"].value, rows_by["cr"].n) == (doc["correct_rate"], doc["fact_tt"])
    assert_metric(result, "ed", group="en_fact@0.0", min=0.0)
    assert_metric(result, "accuracy_doc", min=0.0)  # one group: no need to name it


@pytest.mark.parametrize(("data", "noise", "metric"), [
    ("rgb_en", 0.4, "accuracy"), ("rgb_en", 1.0, "reject_rate"),
    ("rgb_en_int", 0.2, "integration_accuracy")])
def test_score_headline_names_the_papers_number_of_the_setting(data: str, noise: float,
                                                               metric: str) -> None:
    path = sample_path(f"{data}.jsonl")
    preds = [{"id": i, "prediction": "insufficient information"} for i in range(5)]
    result = ragmeter.rgb.score(preds, data=path, noise_rate=noise)
    (row,) = result.headline
    assert row.metric == metric and row.group == f"{data}@{noise}"
    assert row.value == result.summary["accuracy"]


def test_judge_headline_flags_a_degenerate_judge(tmp_path: Path) -> None:
    rows = _rows("zh_refine.json")
    every = [{"id": i, "prediction": "信息不足，无法回答。"} for i in range(40)]
    mixed = [{"id": i, "prediction": "信息不足，无法回答。" if i % 4 == 0 else "答案是北京。"}
             for i in range(40)]
    bad = ragmeter.rgb.judge(every, data=rows, name="zh_refine", judge_method="detector",
                             store=tmp_path / "s.sqlite")
    good = ragmeter.rgb.judge(mixed, data=rows, name="zh_refine", judge_method="detector",
                              store=tmp_path / "s.sqlite")
    for result in (bad, good):
        heads = {h.metric: h for h in result.headline}
        assert list(heads) == ["reject_rate", "reject_rate_judged"]
        judged = heads["reject_rate_judged"]
        assert judged.group == "zh_refine@1.0"
        assert (judged.value, judged.n) == (result.summary["metrics"]["reject_rate_judged"], 40)
        assert list(judged.ci or ()) == result.summary["ci95"]["reject_rate_judged"]
        assert judged.coverage == 40 / 300  # 300 questions, 40 predictions
        assert heads["reject_rate"].flag is None  # the paper's Rej is not the judge's
        assert "judge:ragmeter:refusal-patterns" in (result.signature or "")
    assert bad.alarms and not good.alarms
    flags = {r.metric: r.flag for r in bad.headline} | {
        f"good {r.metric}": r.flag for r in good.headline}
    assert flags == {"reject_rate": None, "reject_rate_judged": "degenerate judge: treat as "
                     "unmeasured", "good reject_rate": None, "good reject_rate_judged": None}
    (check,) = check_metric(good, "reject_rate_judged", group="zh_refine@1.0", min=0.2)
    assert check.ok and check.value == 0.25


def test_run_headline_covers_every_table(scripted_server, tmp_path: Path) -> None:
    def reply(body: dict) -> str:
        user = body["messages"][-1]["content"]
        if "Now judge:" in user:
            return "No, the question is not addressed by the documents."
        return "The answer is Canberra." if "Canberra" in user else (
            "There are factual errors in the provided documents. insufficient information")

    server = scripted_server(reply=reply)
    result = ragmeter.rgb.run(
        None, noise_rates="0,0.4", judge=True, judge_method="text",
        backend=ragmeter.backends.openai("scripted", base_url=server.url),
        store=tmp_path / "s.sqlite", progress=False)
    heads = {(h.group, h.metric): h for h in result.headline}
    t = result.summary["tables"]
    for ds, by_rate in t["noise_robustness"].items():
        for rate, value in by_rate.items():
            assert heads[(f"{ds}@{rate}", "accuracy")].value == value
    for ds, row in t["rejection"].items():
        assert heads[(f"{ds}@1.0", "reject_rate")].value == row["rej"]
        assert heads[(f"{ds}@1.0", "reject_rate_judged")].value == row["rej_judged"]
    for ds, by_rate in t["integration"].items():
        for rate, value in by_rate.items():
            assert heads[(f"{ds}@{rate}", "integration_accuracy")].value == value
    (fact,) = t["counterfactual"]
    row, cells = t["counterfactual"][fact], t["cells"]["counterfactual"][fact]
    assert heads[(f"{fact}@0.0_p0", "accuracy_no_doc")].value == row["acc"]
    for key, metric in m.TABLE_COLUMNS["counterfactual"][1:]:
        h = heads[(f"{fact}@0.0", metric)]
        assert (h.value, h.n) == (row[key], cells[key]["n"])
        assert list(h.ci or ()) == (cells[key]["ci95"] or [])
    # the judge answers "not addressed" to every item: on rgb_en's 5 items Rej* describes the
    # judge (the degenerate alarm); rgb_zh's 3 are too few to tell
    assert heads[("rgb_en@1.0", "reject_rate_judged")].flag == \
        "degenerate judge: treat as unmeasured"
    assert heads[("rgb_zh@1.0", "reject_rate_judged")].flag is None
    assert heads[("rgb_en@1.0", "reject_rate")].flag is None
    assert "judge:openai:scripted|judge-method:text" in (result.signature or "")
    assert_metric(result, "accuracy", group="rgb_en@0.0", min=0.0)


def test_headline_of_a_stored_run_written_before_the_headline() -> None:
    """A record of the shape rgb run wrote before issue 25 (tests/reports/cases.py) still has
    its numbers: the headline is read from its settings."""
    from tests.reports.cases import RGB_RUN

    (row,) = m.headline(RGB_RUN)
    assert (row.metric, row.group, row.value, row.n) == ("accuracy", "en@0.0", 0.9, 2)
    assert m.headline({"family": "rgb", "verb": "build"}) == []


def test_dry_runs_have_a_signature_naming_the_judge(tmp_path: Path) -> None:
    """Nothing is called (an unreachable endpoint), yet the estimate says what would run."""
    backend = ragmeter.backends.openai("gpt-x", base_url="http://127.0.0.1:9/v1", api_key="k")
    preds = [{"id": i, "prediction": "x"} for i in range(3)]
    judged = ragmeter.rgb.judge(preds, data=sample_path("rgb_en_fact.jsonl"), backend=backend,
                                dry_run=True, store=tmp_path / "s.sqlite")
    assert judged.summary["dry_run"] and judged.headline == []
    assert "judge:openai:gpt-x|judge-method:text" in (judged.signature or "")
    assert "rate:ED*,CR*" in (judged.signature or "")
    run = ragmeter.rgb.run(None, judge=True, limit=1, backend=backend, dry_run=True,
                           store=tmp_path / "s.sqlite")
    assert run.summary["dry_run"] and run.headline == []
    assert "judge:openai:gpt-x|judge-method:text" in (run.signature or "")
    assert "model:openai:gpt-x" in (run.signature or "")


# ------------------------------------------------------------------ doors that read the table


def test_report_section_glossary_defines_the_papers_symbols() -> None:
    from ragmeter.reports.html_families import (
        COMPARISON_PLOTS,
        PAIRED_UNITS,
        SECTIONS,
        section_of,
    )
    from ragmeter.rgb import _report
    from tests.reports.cases import RGB_RUN

    assert "rgb" not in SECTIONS and "rgb" not in PAIRED_UNITS and "rgb" not in COMPARISON_PLOTS
    assert section_of("rgb") is _report.section
    html = str(_report.section(RGB_RUN))
    glossary = html[html.index("<summary>glossary</summary>"):]
    for name in ("reject_rate_judged", "ed_judged", "cr_judged", "accuracy_doc"):
        metric = m.METRICS.get(name)
        assert f"<td>{metric.label}</td><td>{name}</td>" in glossary
        assert metric.description.replace("'", "&#x27;") in glossary
    assert "lenient" not in glossary  # the opt-in numbers only when the result holds them


def test_run_list_shows_rgb_numbers_by_group_and_label() -> None:
    from ragmeter.view.listing import run_headlines
    from tests.reports.cases import RGB_RUN

    (row,), more = run_headlines("rgb", RGB_RUN)  # written before the headline: from settings
    assert (row.label, row.value, more) == ("en@0.0 Acc", 0.9, 0)
    doc = {"headline": [
        {"metric": "accuracy", "group": f"en@{r}", "value": 0.5, "ci": [0.4, 0.6], "n": 10}
        for r in ("0.0", "0.2", "0.4", "0.6", "0.8")] + [
        {"metric": "reject_rate_judged", "group": "en@1.0", "value": 1.0,
         "flag": "degenerate judge: treat as unmeasured"},
        {"metric": "reject_rate", "group": "en@1.0", "value": 0.2}]}
    rows, more = run_headlines("rgb", doc)  # the main metric (accuracy), every group
    assert [(h.label, h.ci, h.n) for h in rows] == [
        (f"en@{r} Acc", (0.4, 0.6), 10) for r in ("0.0", "0.2", "0.4", "0.6")]
    assert more == 1


# ------------------------------------------------------------------ typed option groups


def test_every_verb_takes_at_most_twelve_parameters() -> None:
    import inspect

    for verb in (ragmeter.rgb.build, ragmeter.rgb.score, ragmeter.rgb.judge, ragmeter.rgb.run):
        params = [p for p in inspect.signature(verb).parameters.values()
                  if p.kind is not inspect.Parameter.VAR_KEYWORD]
        assert len(params) <= 12, verb.__name__


def test_option_groups_equal_their_plain_keywords() -> None:
    path = sample_path("rgb_en_fact.jsonl")
    preds = [{"id": i, "prediction": "There are factual errors in the provided documents."}
             for i in range(4)]
    plain = ragmeter.rgb.score(preds, data=path, noise_rate=0.0, passage_num=3, seed=7)
    grouped = ragmeter.rgb.score(preds, data=path, noise_rate=0.0,
                                 setting=ragmeter.rgb.SettingOptions(passage_num=3, seed=7))
    assert plain.summary == grouped.summary and "passages:3" in (plain.signature or "")
    # a keyword overrides its field of the given group
    mixed = ragmeter.rgb.build(path, noise_rate=0.0, seed=7,
                               setting=ragmeter.rgb.SettingOptions(passage_num=3, seed=1))
    assert "passages:3" in (mixed.signature or "") and "seed:7" in (mixed.signature or "")
    with pytest.raises(TypeError, match="rgb.score\\(\\) got an unexpected keyword argument "
                                        "'pasage_num'. Did you mean 'passage_num'"):
        ragmeter.rgb.score(preds, data=path, noise_rate=0.0, pasage_num=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ragmeter.rgb.JudgeOptions().repeats = 2  # type: ignore[misc]


def test_judge_and_run_take_their_groups(tmp_path: Path) -> None:
    backend = ragmeter.backends.openai("gpt-x", base_url="http://127.0.0.1:9/v1", api_key="k")
    preds = [{"id": i, "prediction": "x"} for i in range(3)]
    judged = ragmeter.rgb.judge(
        preds, data=sample_path("rgb_en.jsonl"), backend=backend,
        judge=ragmeter.rgb.JudgeOptions(judge_model="gpt-judge", repeats=2),
        run=ragmeter.RunOptions(dry_run=True, store=tmp_path / "s.sqlite"))
    assert judged.summary["requests"] == 6  # 3 items, 2 repeats, none in the store
    assert "judge:openai:gpt-judge|judge-method:text" in (judged.signature or "")
    run = ragmeter.rgb.run(
        None, judge=ragmeter.rgb.JudgeOptions(judge_method="text"), backend=backend,
        generation=ragmeter.rgb.GenerationOptions(limit=1, max_tokens=16),
        run=ragmeter.RunOptions(dry_run=True, store=tmp_path / "s.sqlite"))
    assert "judge:openai:gpt-x|judge-method:text" in (run.signature or "")
    assert "limit:1" in (run.signature or "") and "max_tokens:16" in (run.signature or "")
