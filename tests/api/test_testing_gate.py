"""``ragmeter.testing.assert_metric``, the pytest plugin and ``ragmeter gate`` (issue 13)."""

from __future__ import annotations

import json

import pytest

import ragmeter
from ragmeter.errors import ConfigError
from ragmeter.testing import assert_metric
from tests.reports.test_browser import _open, browser  # noqa: F401  (the browser fixture)


def _rows() -> list[dict]:
    # 10 samples; the "lbrag" system answers 8 of them exactly, "direct" 3.
    out = []
    for i in range(10):
        gold = f"answer number {i}"
        out.append({"sample_id": str(i), "sample_lang": "en", "system": "lbrag",
                    "gold_answer": gold, "pred_answer": gold if i < 8 else "no idea",
                    "translate_tokens": 10})
        out.append({"sample_id": str(i), "sample_lang": "en", "system": "direct",
                    "gold_answer": gold, "pred_answer": gold if i < 3 else "something else",
                    "translate_tokens": 0})
    return out


@pytest.fixture(scope="module")
def result():
    return ragmeter.multilingual.score(_rows(), ci=True, resamples=500)


def test_assert_metric_value_and_ci(result) -> None:
    assert result.summary["metrics"]["lbrag"]["em"] == 0.8  # 8 of 10 exact
    assert_metric(result, "em", group="lbrag", min=0.75)
    lo, hi = result.summary["ci95"]["lbrag"]["em"]
    assert lo < 0.75 < hi
    with pytest.raises(AssertionError) as err:
        assert_metric(result, "em", group="lbrag", min=0.75, ci=True)  # CI lower bound < 0.75
    msg = str(err.value)
    for part in ("em [lbrag] FAILS", "CI lower bound", ">= 0.75", "value 0.8000", "n=10",
                 "coverage 20/20 scored", "95% CI ["):
        assert part in msg, (part, msg)
    assert_metric(result, "em", group="direct", max=0.31)
    with pytest.raises(AssertionError, match="em \\[direct\\] FAILS"):
        assert_metric(result, "em", group="direct", min=0.5)


def test_assert_metric_errors(result) -> None:
    with pytest.raises(ConfigError, match="several groups"):
        assert_metric(result, "em", min=0.1)
    with pytest.raises(ConfigError, match="no metric 'bleu'"):
        assert_metric(result, "bleu", group="lbrag", min=0.1)
    plain = ragmeter.multilingual.score(_rows())
    with pytest.raises(ConfigError, match="no confidence interval"):
        assert_metric(plain, "em", group="lbrag", min=0.1, ci=True)


def test_gate_exit_codes(run_cli, tmp_path, result) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(result.summary))
    code, out, _ = run_cli("gate", path, "--require", "em>=0.75", "--group", "lbrag")
    assert code == 0 and "ok   em [lbrag] holds" in out
    code, out, err = run_cli("gate", path, "--require", "em>=0.75", "--require", "f1<=2",
                             "--group", "lbrag", "--ci")
    assert code == 1 and "FAIL em [lbrag] FAILS" in out and "1 of 2" in err
    code, _, err = run_cli("gate", path, "--require", "em=0.75")
    assert code == 2 and "METRIC>=NUMBER" in err
    code, _, err = run_cli("gate", tmp_path / "nope.json", "--require", "em>=0.1")
    assert code == 2 and "does not exist" in err
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _, err = run_cli("gate", bad, "--require", "em>=0.1")
    assert code == 2 and "is not JSON" in err
    # a run record works as well as the --json document
    record = result.save(runs_dir=str(tmp_path / "runs"))
    code, _, _ = run_cli("gate", record.path, "--require", "em>=0.75", "--group", "lbrag")
    assert code == 0


def _plugin_args() -> list[str]:
    """The plugin loads through its ``pytest11`` entry point when ragmeter is installed (as in
    CI); from a bare source tree it has to be named."""
    from importlib.metadata import entry_points

    installed = any(e.value == "ragmeter.testing._plugin" for e in entry_points(group="pytest11"))
    return [] if installed else ["-p", "ragmeter.testing._plugin"]


PLUGIN_TEST = '''
import ragmeter
from ragmeter.testing import assert_metric

ROWS = {rows!r}

def test_reachable():
    assert_metric(ragmeter.multilingual.score(ROWS), "em", group="lbrag", min=0.5)

def test_unreachable():
    assert_metric(ragmeter.multilingual.score(ROWS), "em", group="lbrag", min=0.95)
'''


def test_pytest_plugin_report_and_junit(pytester, tmp_path) -> None:
    pytester.makepyfile(test_quality=PLUGIN_TEST.format(rows=_rows()))
    report = tmp_path / "session.html"
    junit = tmp_path / "junit.xml"
    res = pytester.runpytest_subprocess(*_plugin_args(), f"--ragmeter-report={report}",
                                        f"--junitxml={junit}")
    res.assert_outcomes(passed=1, failed=1)
    res.stdout.fnmatch_lines(["*em [[]lbrag[]] FAILS: value 0.8000 >= 0.95 required*"])
    html = report.read_text()
    assert html.count("multilingual") >= 2 and "lbrag" in html
    xml = junit.read_text()
    assert 'name="ragmeter:em[lbrag]" value="0.8"' in xml


@pytest.mark.browser
def test_plugin_report_opens_in_chromium(pytester, tmp_path, browser) -> None:  # noqa: F811
    pytester.makepyfile(test_quality=PLUGIN_TEST.format(rows=_rows()))
    report = tmp_path / "session.html"
    pytester.runpytest_subprocess(*_plugin_args(), f"--ragmeter-report={report}")
    context, page, requests = _open(browser, report)
    try:
        body = page.inner_text("body")
        assert "multilingual" in body and "lbrag" in body
        assert all(u.startswith(("file:", "data:")) for u in requests)
    finally:
        context.close()
