"""The HTML report (reports/html.py): sections per family, escaping, generic rendering,
comparison with paired tests, size.  The browser check is in test_browser.py."""

from __future__ import annotations

import copy
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ragmeter.reports.compare import compare_runs
from ragmeter.reports.html import render_report, write_report
from ragmeter.runs._records import record_run
from tests.reports import cases


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("runs")
    return [cases.multilingual_record(d, ci=True, paired=True), cases.reliability_record(d)]


def test_demo_report_has_sections_tables_plots(demo, tmp_path: Path) -> None:
    path = write_report(demo, tmp_path / "r.html")
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    for text in ("Systems (LBRAG metrics", "Paired tests against direct", 'alt="F1 per system"',
                 'alt="cost per system"', 'alt="CNBE per system"', "Annotators against QC",
                 "Coverage", "why unscored", "Signatures of every number", "sha256"):
        assert text in page, text
    assert page.count('src="data:image/png;base64,') == 4  # F1, cost, CNBE, matrix
    assert path.stat().st_size < 3_000_000
    # no network and no script anywhere
    assert "<script" not in page.lower()
    assert not re.search(r'(src|href)="(?!data:|#)', page)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))


def test_everything_from_data_is_escaped(tmp_path: Path) -> None:
    page = render_report([cases.hostile_record(tmp_path)])
    parser = _Tags()
    parser.feed(page)
    names = {t for t, _ in parser.tags}
    assert "script" not in names
    assert not [(t, a) for t, attrs in parser.tags for a, _ in attrs if a.startswith("on")]
    assert all((dict(attrs).get("src") or "data:").startswith("data:")
               for t, attrs in parser.tags if t == "img")
    assert "&lt;script&gt;window.__xss=2" in page
    assert "&lt;img src=x onerror=&quot;document.title=" in page


def test_unknown_family_is_rendered_generically(tmp_path: Path) -> None:
    rec = record_run("future", {"signature": "s", "scores": {"a": {"x": 0.25, "n": 3}},
                                "table": [{"k": "r1", "v": 1.5}], "flag": True},
                     [], command=[], runs_dir_override=tmp_path)
    page = render_report([rec])
    assert "<h4>scores</h4>" in page and "0.2500" in page and "1.5000" in page
    assert ">r1<" in page


@pytest.mark.parametrize(("family", "doc", "expected"), [
    ("rgb", cases.RGB_RUN, ["Noise robustness: accuracy (%) by noise rate", ">90.0<",
                            "Negative rejection", "Information integration",
                            "Counterfactual robustness", "RGB accuracy vs noise rate"]),
    ("trace", cases.TRACE_SCORE, ["TRACe metrics (RAGBench)", "completeness", "0.7000"]),
    ("trace", cases.TRACE_VALIDATE, ["Validation against annotated labels",
                                     "hallucination_auroc", "gpt35",
                                     "TRACe validation per judge"]),
    ("rubric", cases.RUBRIC, ["Rubric grades (RAGaliq", "weighted score",
                              "rubric grade distribution", ">ko<"]),
])
def test_dedicated_family_sections(tmp_path: Path, family: str, doc: dict,
                                   expected: list[str]) -> None:
    items = cases.RGB_ITEMS if family == "rgb" else None
    page = render_report([cases.family_record(tmp_path, family, doc, items)])
    for text in expected:
        assert text in page, text
    assert "could not read this result" not in page


def test_a_section_meeting_an_unknown_shape_falls_back_and_says_so(tmp_path: Path) -> None:
    doc = copy.deepcopy(cases.RUBRIC)
    doc["groups"] = "not a list"
    page = render_report([cases.family_record(tmp_path, "rubric", doc)])
    assert "could not read this result" in page and "not a list" in page


def _ml_record(tmp_path: Path, f1s: list[float], system: str = "s") -> object:
    items = [{"sample_id": f"q{i}", "system": system, "status": "ok", "f1": v, "em": v}
             for i, v in enumerate(f1s)]
    mean = sum(f1s) / len(f1s)
    doc = {"signature": "family:multilingual|x", "baseline": None,
           "metrics": {system: {"em": mean, "f1": mean, "n": len(f1s)}},
           "coverage": {"rows": len(f1s), "scored": len(f1s), "unscored": 0, "reasons": {}}}
    return record_run("multilingual", doc, items, command=[], runs_dir_override=tmp_path)


def test_comparison_marks_significant_differences(tmp_path: Path) -> None:
    a = _ml_record(tmp_path, [0.0] * 20)
    b = _ml_record(tmp_path, [1.0] * 20)  # every item better: p = 1/(1+2000) territory
    c = _ml_record(tmp_path, [0.0, 1.0] * 10)  # half better, half equal
    d = _ml_record(tmp_path, [0.0] * 19 + [1.0])  # one item: not significant
    comp = compare_runs([a, b, d], n_resamples=2000)
    f1 = next(r for r in comp.rows if r.metric == "f1")
    assert f1.means == [0.0, 1.0, 0.05]
    assert f1.tests[0] is not None and f1.tests[0].significant and f1.tests[0].n == 20
    assert f1.tests[1] is not None and not f1.tests[1].significant
    page = render_report([a, b, c])
    assert "Comparison of 3 runs" in page and "+1.0000 ★" in page


def test_comparison_of_real_sample_runs_pairs_every_item(tmp_path: Path) -> None:
    a = cases.multilingual_record(tmp_path)
    b = cases.multilingual_record(tmp_path, baseline="retrieve")
    comp = compare_runs([a, b])
    assert {(r.group, r.metric) for r in comp.rows} >= {("bridge", "f1"), ("direct", "em")}
    assert all(t is not None and t.n == 12 and t.mean_diff == 0.0 and not t.significant
               for r in comp.rows for t in r.tests)  # same answers: no difference
    assert ["baseline_f1", 0.5180555555555556, 0.8888888888888888] in comp.headline


def test_drill_down_lists_unscored_first_and_caps(tmp_path: Path, monkeypatch) -> None:
    import ragmeter.reports.html as html_mod

    items = [{"id": f"ok{i}", "status": "ok", "score": 1.0} for i in range(5)]
    items += [{"id": "bad", "status": "unscored", "reason": "timeout"}]
    rec = record_run("x", {}, items, command=[], runs_dir_override=tmp_path)
    monkeypatch.setattr(html_mod, "MAX_ITEMS_SHOWN", 3)
    page = render_report([rec])
    li = re.findall(r'<li class="st-(\w+)">', page)
    assert li == ["unscored", "ok", "ok"]
    assert "3 shown of 6 (1 unscored)" in page
    assert "unscored (1)" in page and "scored (2)" in page


def test_empty_report_renders(tmp_path: Path) -> None:
    assert "No run records were given" in render_report([])
