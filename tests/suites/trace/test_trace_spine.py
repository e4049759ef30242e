"""TRACe on the one-spine shape (issues 24, 25): the METRICS table, the signatures built from
it, and the headline of every verb."""

from __future__ import annotations

import re

import pytest

import ragmeter
from ragmeter.io._samples import sample_path
from ragmeter.stats import ALL_GROUP, MetricTable
from ragmeter.trace._metrics import (
    METRICS,
    SCORE_METRICS,
    VALIDATES,
    VALIDATION_METRICS,
    WRITEUP_METRICS,
)

SAMPLE = sample_path("trace_labelled.jsonl")  # 3 annotated rows, no baselines


def _first_rows(tmp_path_factory, split: str):
    """40 annotated rows of a RAGBench test split with its released baselines (JSONL)."""
    import json

    import pyarrow.parquet as pq

    from tests.conftest import shared

    path = shared("ragbench", split, "test-00000-of-00001.parquet")
    cols = ["id", "question", "documents", "response", "documents_sentences",
            "response_sentences", "all_relevant_sentence_keys", "all_utilized_sentence_keys",
            "unsupported_response_sentence_keys", "sentence_support_information",
            "gpt3_adherence", "gpt3_context_relevance",
            "gpt35_utilization", "ragas_faithfulness", "trulens_groundedness"]
    rows = pq.read_table(path, columns=cols).to_pylist()[:40]
    file = tmp_path_factory.mktemp("trace-spine") / f"{split}40.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return file


@pytest.fixture(scope="module")
def emanual(tmp_path_factory):
    return _first_rows(tmp_path_factory, "emanual")


@pytest.fixture(scope="module")
def covidqa(tmp_path_factory):
    """covidqa's first 40 rows: the shipped detector (v4) flags 5 of them (the annotations
    7); on emanual's first 20 it flags none, which rightly trips the degenerate alarm."""
    return _first_rows(tmp_path_factory, "covidqa")


def _row(rel, util, unsup, n=4):
    keys = [[[f"0{c}", f"Sentence {c}."] for c in "abcd"[:n]]]
    return {"documents_sentences": keys, "all_relevant_sentence_keys": rel,
            "all_utilized_sentence_keys": util, "unsupported_response_sentence_keys": unsup,
            "sentence_support_information": [
                {"response_sentence_key": "a", "fully_supported": "a" not in unsup}]}


# ------------------------------------------------------------------ the table


def test_the_tables_name_every_number_once_with_its_definition() -> None:
    assert isinstance(METRICS, MetricTable) and METRICS.version == "ragbench-1"
    assert METRICS.names == (*SCORE_METRICS, *VALIDATION_METRICS)
    assert SCORE_METRICS == ("relevance", "utilization", "completeness", "adherence")
    assert set(VALIDATES) == set(VALIDATION_METRICS)
    assert set(VALIDATES.values()) == set(SCORE_METRICS)
    for table in (METRICS, WRITEUP_METRICS):
        for m in table:
            assert re.fullmatch(r"[a-z][a-z_]*", m.name), m.name
            assert m.label and len(m.description) > 30 and m.source, m.name
    assert [m.name for m in METRICS if not m.higher_is_better] == [
        "relevance_rmse", "utilization_rmse", "completeness_rmse"]
    assert all(METRICS.get(n).fn is not None for n in SCORE_METRICS)
    assert WRITEUP_METRICS.names == (*SCORE_METRICS, "average")
    assert WRITEUP_METRICS.version == "writeup-003-1"


@pytest.mark.parametrize("metric, args, expected", [
    # RAGBench section 3 definitions, worked by hand on 4 document sentences
    ("relevance", (["0a", "0b"], 4), 0.5),
    ("utilization", (["0a"], 4), 0.25),
    ("completeness", (["0a", "0b"], ["0b", "0c"]), 0.5),
    ("completeness", ([], ["0a"]), 1.0),  # nothing relevant: complete (RAGBench)
    ("adherence", ([],), True),
    ("adherence", (["a"],), False),
])
def test_the_table_functions_are_the_metrics(metric, args, expected) -> None:
    fn = METRICS.get(metric).fn
    assert fn is not None and fn(*args) == expected


def test_score_computes_each_row_with_the_table_functions() -> None:
    rows = [_row(["0a", "0b"], ["0b"], []), _row(["0c"], ["0a", "0c"], ["a"])]
    items = ragmeter.trace.score(rows).items
    for item, raw in zip(items, rows, strict=True):
        rel, util = raw["all_relevant_sentence_keys"], raw["all_utilized_sentence_keys"]
        assert item["relevance"] == METRICS.get("relevance").fn(rel, 4)
        assert item["utilization"] == METRICS.get("utilization").fn(util, 4)
        assert item["completeness"] == METRICS.get("completeness").fn(rel, util)
        assert item["adherence"] == METRICS.get("adherence").fn(
            raw["unsupported_response_sentence_keys"])


def test_console_and_report_read_labels_and_directions_from_the_table(emanual,
                                                                      run_cli) -> None:
    code, out, err = run_cli("trace", "validate", emanual, "--no-record", "--resamples",
                             "100")
    assert code == 0, err
    for stat in VALIDATION_METRICS:
        m = METRICS.get(stat)
        assert m.label + ("↑" if m.higher_is_better else "↓") in out
    code, out, err = run_cli("trace", "score", SAMPLE, "--no-record")
    assert code == 0 and METRICS.get("adherence").label in out


# ------------------------------------------------------------------ signatures


def test_ragbench_score_signature_is_unchanged_and_validation_keeps_its_fields() -> None:
    """RAGBench's four metrics have no constant, so their signature string stays what it
    was; the validation's AUROC fields come from the table's constants."""
    sig = ragmeter.trace.score(SAMPLE).signature or ""
    assert re.fullmatch(r"family:trace\|metrics:ragbench-1\|bootstrap:1000@seed12345\|"
                        r"keys:ragbench\|ragmeter:[^|]+", sig), sig

def test_validation_signature_keeps_its_fields_from_the_table(emanual) -> None:
    sig = ragmeter.trace.validate(emanual, resamples=100).signature or ""
    assert re.fullmatch(r"family:trace\|metrics:ragbench-1\|auroc:rank\|"
                        r"bootstrap:100@seed12345\|positive:not_adherent\|ragmeter:[^|]+",
                        sig), sig


def test_a_changed_writeup_constant_changes_the_values_and_the_signature(monkeypatch) -> None:
    rows = [_row([f"0{c}" for c in "abcd"], ["0a"], [])]
    before = ragmeter.trace.score(rows, definitions="writeup")
    assert before.items[0]["relevance"] == 4 / 20  # the write-up's min(1, R / 20)
    assert "constants:relevance.denominator=20" in (before.signature or "")
    constants = WRITEUP_METRICS.get("relevance").constants
    monkeypatch.setitem(constants, "denominator", 10)  # type: ignore[index]
    after = ragmeter.trace.score(rows, definitions="writeup")
    assert after.items[0]["relevance"] == 4 / 10
    assert "constants:relevance.denominator=10" in (after.signature or "")


def test_a_changed_validation_constant_changes_the_signature(emanual, monkeypatch) -> None:
    before = ragmeter.trace.validate(emanual, resamples=100).signature
    constants = METRICS.get("hallucination_auroc").constants
    monkeypatch.setitem(constants, "positive", "adherent")  # type: ignore[index]
    after = ragmeter.trace.validate(emanual, resamples=100).signature
    assert before != after and "positive:adherent|" in (after or "")


def test_score_of_detector_labels_names_the_detector_and_its_coefficients() -> None:
    from ragmeter.trace._detector import load_detector

    det = load_detector()
    labels = ragmeter.trace.label(SAMPLE)
    assert labels.signature and f"{det.identity}@detector:{det.version}:{det.fingerprint}" \
        in labels.signature
    sig = ragmeter.trace.score(labels.items).signature or ""
    assert f"judge:{det.identity}@detector:{det.version}:{det.fingerprint}|" in sig
    assert re.fullmatch(r"[0-9a-f]{12}", det.fingerprint)
    # another detector (other coefficients) is another signature, even under the same name
    other = load_detector(mode="embedding")
    assert other.fingerprint != det.fingerprint


def test_label_signature_names_what_changes_the_labels() -> None:
    rows = [{"question": "Where do the Nets play?",
             "documents": ["The Nets play in Brooklyn."], "response": "In Brooklyn."}]
    sig = ragmeter.trace.label(rows).signature or ""
    assert sig.startswith("family:trace|metrics:ragbench-1|") and "strategy:detector" in sig
    assert "judge:ragmeter:trace-detector-v4@detector:" in sig
    assert "language:en" in sig
    other = ragmeter.trace.label(rows, language="de").signature
    assert other != sig


def test_run_signature_names_the_labelling_detector(emanual) -> None:
    from ragmeter.trace._detector import load_detector

    det = load_detector()
    sig = ragmeter.trace.run(emanual, limit=10, output=ragmeter.OutputOptions(resamples=100)
                             ).signature or ""
    assert f"|judge:{det.identity} (detector)|" in sig  # unchanged: the judge's name
    assert f"|labelled_by:{det.identity}@detector:{det.version}:{det.fingerprint}|" in sig


def test_fit_has_a_signature_and_its_held_out_scores_as_headline(emanual) -> None:
    import json

    rows = [json.loads(x) for x in emanual.read_text().splitlines()]
    result = ragmeter.trace.fit({"first": rows[:20], "second": rows[20:]}, name="mine")
    from ragmeter.trace._detector import fingerprint

    assert f"judge:ragmeter:mine@detector:{result.summary['version']}:" \
           f"{fingerprint(result.summary)}" in (result.signature or "")
    loso = result.summary["provenance"]["leave_one_split_out"]
    got = {(h.group, h.metric): h.value for h in result.headline}
    assert got == {(split, stat): v[stat] for split, v in loso.items()
                   for stat in ("hallucination_auroc", "relevance_rmse", "utilization_rmse")}


# ------------------------------------------------------------------ headlines


def _rows(result):
    return {(h.group, h.metric): h for h in result.headline}


def test_score_headline_has_the_four_metrics_overall_and_per_group(emanual) -> None:
    from ragmeter.testing import assert_metric, check_metric

    result = ragmeter.trace.score(emanual, by="id", resamples=100)
    doc = result.summary
    rows = _rows(result)
    for metric in SCORE_METRICS:
        h = rows[(ALL_GROUP, metric)]
        m = doc["metrics"][metric]
        assert (h.value, list(h.ci or ()), h.n) == (m["mean"], m["ci95"], m["n"])
        assert h.coverage == doc["coverage"]["scored"] / doc["coverage"]["rows"] == 1.0
        assert h.higher_is_better is True and h.flag is None
    first = next(iter(doc["groups"]["values"]))
    assert rows[(first, "adherence")].value == \
        doc["groups"]["values"][first]["metrics"]["adherence"]["mean"]
    assert_metric(result, "adherence", min=0.0)  # issue 25: used to fail
    (check,) = check_metric(result, "relevance", group=first, max=1.0)
    assert check.ok and check.value == rows[(first, "relevance")].value
    writeup = ragmeter.trace.score(emanual, definitions="writeup", resamples=100)
    assert {h.metric for h in writeup.headline} == {*SCORE_METRICS, "average"}


def test_label_headline_is_the_score_of_its_labels(emanual) -> None:
    from ragmeter.testing import assert_metric

    labels = ragmeter.trace.label(emanual, limit=12)
    scored = ragmeter.trace.score(labels.items)
    assert [h for h in labels.headline] == [h for h in scored.headline]
    assert {h.metric for h in labels.headline} == set(SCORE_METRICS)
    assert_metric(labels, "adherence", min=0.0, max=1.0)
    by = ragmeter.trace.label(emanual, limit=12, by="id")
    groups = {h.group for h in by.headline}
    assert groups == {ALL_GROUP, *by.summary["groups"]["values"]}


def test_validate_headline_is_per_judge_with_the_released_baselines(emanual) -> None:
    from ragmeter.testing import assert_metric

    result = ragmeter.trace.validate(emanual, pred_columns={"adherence": "trulens_groundedness"},
                                     judge_name="mine", resamples=100)
    doc = result.summary
    rows = _rows(result)
    assert {h.group for h in result.headline} == set(doc["judges"]) >= {
        "mine", "gpt-3.5 (released)", "ragas (released)", "trulens (released)"}
    for judge, ests in doc["judges"].items():
        for stat, e in ests.items():
            h = rows[(judge, stat)]
            assert (h.value, list(h.ci or ()) or None, h.n) == (e["value"], e["ci95"], e["n"])
            assert h.higher_is_better is METRICS.get(stat).higher_is_better
    assert rows[("mine", "hallucination_auroc")].value == \
        rows[("trulens (released)", "hallucination_auroc")].value  # the same column
    assert rows[("mine", "hallucination_auroc")].coverage == 1.0
    assert_metric(result, "hallucination_auroc", group="mine", min=0.0)
    with pytest.raises(Exception, match="several groups"):  # several judges: name one
        assert_metric(result, "hallucination_auroc", min=0.0)
    only = ragmeter.trace.validate(emanual, pred_columns={"adherence": "trulens_groundedness"},
                                   no_baselines=True, resamples=100)
    assert_metric(only, "hallucination_auroc", min=0.5)  # issue 25: said "no metric"
    by = ragmeter.trace.validate(emanual, by="id", resamples=100, no_baselines=True,
                                 pred_columns={"relevance": "gpt3_context_relevance"})
    key = next(iter(by.summary["groups"]["values"]))
    assert (f"judge / {key}", "relevance_rmse") in _rows(by)


def test_run_headline_is_the_validation_of_its_judge(covidqa) -> None:
    from ragmeter.testing import assert_metric

    result = ragmeter.trace.run(covidqa, limit=20, resamples=100)
    doc = result.summary
    ours = "ragmeter:trace-detector-v4 (detector)"
    rows = _rows(result)
    assert rows[(ours, "hallucination_auroc")].value == \
        doc["judges"][ours]["hallucination_auroc"]["value"]
    assert rows[(ours, "hallucination_auroc")].n == 20
    assert rows[("gpt-3.5 (released)", "relevance_rmse")].higher_is_better is False
    assert_metric(result, "hallucination_auroc", group=ours, min=0.0)
    assert all(h.flag is None for h in result.headline)


def test_a_degenerate_judge_flags_its_judged_numbers(scripted_server, emanual) -> None:
    """A JSON judge that calls every sentence supported trips the degenerate alarm: label's
    adherence and run's hallucination AUROC of that judge carry the flag; the released
    baselines' numbers and the judge's relevance do not."""
    import json as _json

    def reply(body: dict) -> str:
        text = body["messages"][-1]["content"]
        answer = text.split("Answer, one sentence per line after its key:\n", 1)[1]
        keys = re.findall(r"^([a-z]+)\. ", answer.split("\n\n")[0], re.M)
        docs = re.findall(r"^(\d+[a-z]+)\. ", text, re.M)
        return _json.dumps({
            "all_relevant_sentence_keys": docs[:1], "all_utilized_sentence_keys": docs[:1],
            "sentence_support_information": [
                {"response_sentence_key": k, "explanation": "", "supporting_sentence_keys": [],
                 "fully_supported": "yes"} for k in keys], "overall_supported": "yes"})

    server = scripted_server(reply=reply)
    backend = ragmeter.backends.openai("always-yes", base_url=server.url)
    store = ragmeter.RunOptions(store=str(emanual.parent / "s.sqlite"), progress=False)
    labels = ragmeter.trace.label(emanual, limit=8, backend=backend, run=store)
    assert labels.alarms and labels.alarms[0]["what"] == "adherence"
    flags = {h.metric: h.flag for h in labels.headline}
    assert flags["adherence"] and "degenerate" in flags["adherence"]
    assert flags["relevance"] is None
    run = ragmeter.trace.run(emanual, limit=8, backend=backend, run=store,
                             output=ragmeter.OutputOptions(resamples=100))
    judge = next(g for g in run.summary["judges"] if "always-yes" in g)
    rows = _rows(run)
    assert rows[(judge, "hallucination_auroc")].flag
    assert rows[(judge, "relevance_rmse")].flag is None
    assert rows[("gpt-3.5 (released)", "hallucination_auroc")].flag is None


# ------------------------------------------------------------------ option groups


def test_verbs_take_typed_groups_and_the_plain_keywords_of_before(emanual) -> None:
    import inspect

    for verb in (ragmeter.trace.score, ragmeter.trace.validate, ragmeter.trace.label,
                 ragmeter.trace.run, ragmeter.trace.fit):
        assert len(inspect.signature(verb).parameters) <= 12, verb.__name__
    typed = ragmeter.trace.run(
        emanual, judge=ragmeter.trace.JudgeOptions(strategy="detector"), limit=6,
        run=ragmeter.RunOptions(progress=False),
        output=ragmeter.OutputOptions(resamples=200, seed=7, by="id"))
    plain = ragmeter.trace.run(emanual, strategy="detector", limit=6, progress=False,
                               resamples=200, seed=7, by="id")
    def strip(doc: dict) -> dict:  # the summary less what measures time
        return {k: ({kk: vv for kk, vv in v.items() if kk not in ("seconds", "rows_per_s")}
                    if isinstance(v, dict) else v) for k, v in doc.items()}

    assert strip(typed.summary) == strip(plain.summary)
    assert "bootstrap:200@seed7" in (typed.signature or "")
    with pytest.raises(TypeError, match="unexpected keyword argument 'strategie'. Did you "
                                        "mean 'strategy'"):
        ragmeter.trace.label(emanual, strategie="detector")
    with pytest.raises(TypeError, match="judge= takes a JudgeOptions"):
        ragmeter.trace.label(emanual, judge={"strategy": "detector"})
    assert ragmeter.trace.score(emanual, resamples=100).summary == \
        ragmeter.trace.score(emanual, output=ragmeter.OutputOptions(resamples=100)).summary


def test_judge_options_are_named_as_the_cli_flags() -> None:
    import dataclasses

    from ragmeter.cli.trace_judge import label as label_command

    flags = {p.name for p in label_command.params}
    fields = {f.name for f in dataclasses.fields(ragmeter.trace.JudgeOptions)}
    assert fields <= flags


def test_the_launch_form_lives_with_the_family() -> None:
    from ragmeter._families import family_part
    from ragmeter.view import verbs

    (form,) = family_part("trace", "_form", "FORMS")
    assert form.key == "trace-run" and verbs.SPECS["trace-run"] is form
    assert all(spec.family != "trace" for spec in verbs._HERE)
    from ragmeter.cli.trace_judge import run as run_command

    flags = {o for p in run_command.params for o in p.opts}
    assert {f.flag for f in form.fields if f.flag} <= flags  # fields are the CLI's flags


def test_report_parts_are_found_through_the_family_table() -> None:
    from ragmeter.reports import html_families
    from ragmeter.trace import _report

    assert "trace" not in html_families.SECTIONS and "trace" not in html_families.PAIRED_UNITS
    assert html_families.section_of("trace") is _report.section
    assert html_families.paired_units_of("trace") is _report.paired_units
