"""The pytest plugin's ``--ragmeter-report`` under hostile use (issue 29 item 8): it never writes
over a file that is not a report of its own (a report path equal to a test module overwrote
the test file), and a path it cannot write is one line (pytest's usage error, exit 4) before
any test runs, or one line at the end, never a traceback.  And (issue 25 item 3) the report
opens on the session's checks: each test, its requirement, value, CI and verdict."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ragmeter.testing._plugin import MARKER
from tests.api.test_testing_gate import PLUGIN_TEST, _plugin_args, _rows


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*_plugin_args(), *args)


def _refused(res: pytest.RunResult, words: str) -> None:
    text = res.stdout.str() + res.stderr.str()
    assert res.ret == pytest.ExitCode.USAGE_ERROR, text
    assert "Traceback" not in text and words in text, text
    lines = [line for line in text.splitlines() if "ragmeter:" in line]
    assert len(lines) == 1 and "Fix:" in lines[0], lines


def test_a_report_path_equal_to_a_test_module_is_refused(pytester: pytest.Pytester) -> None:
    module = pytester.makepyfile(test_quality=PLUGIN_TEST.format(rows=_rows()))
    before = module.read_bytes()
    res = _run(pytester, f"--ragmeter-report={module}")
    _refused(res, "is not a report this plugin wrote; refusing to write over it")
    assert module.read_bytes() == before
    assert "passed" not in res.stdout.str()  # refused before any test ran


@pytest.mark.parametrize("content", [
    b"<!DOCTYPE html><html><body>my own page</body></html>",
    b"<html>" + MARKER.encode() + b"</html>",  # the marker alone does not make a report
    b"# " + MARKER.encode() + b"\nimport os\n",  # nor in a module that quotes it
    b"",
])
def test_other_files_are_refused(pytester: pytest.Pytester, content: bytes) -> None:
    pytester.makepyfile(test_quality=PLUGIN_TEST.format(rows=_rows()))
    other = pytester.path / "page.html"
    other.write_bytes(content)
    _refused(_run(pytester, f"--ragmeter-report={other}"), "refusing to write over it")
    assert other.read_bytes() == content


def test_folders_and_missing_folders_are_refused(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_quality=PLUGIN_TEST.format(rows=_rows()))
    (pytester.path / "sub").mkdir()
    _refused(_run(pytester, f"--ragmeter-report={pytester.path / 'sub'}"), "is a folder")
    _refused(_run(pytester, f"--ragmeter-report={pytester.path / 'no' / 'r.html'}"),
             "does not exist")
    blocker = pytester.path / "file.txt"
    blocker.write_text("x")
    _refused(_run(pytester, f"--ragmeter-report={blocker / 'r.html'}"), "does not exist")


def test_a_folder_that_vanishes_during_the_session_is_one_line(pytester: pytest.Pytester,
                                                               tmp_path: Path) -> None:
    out = tmp_path / "reports"
    out.mkdir()
    pytester.makepyfile(test_gone=f'''
import shutil

def test_removes_the_report_folder():
    shutil.rmtree({str(out)!r})
''')
    res = _run(pytester, f"--ragmeter-report={out / 'r.html'}")
    text = res.stdout.str() + res.stderr.str()
    assert res.ret == pytest.ExitCode.USAGE_ERROR and "Traceback" not in text, text
    assert "ragmeter: --ragmeter-report" in text and "does not exist" in text
    res.assert_outcomes(passed=1)


def test_the_report_opens_with_each_check_then_rewrites_itself(pytester: pytest.Pytester,
                                                               tmp_path: Path) -> None:
    pytester.makepyfile(test_quality=PLUGIN_TEST.format(rows=_rows()))
    report = tmp_path / "session.html"
    res = _run(pytester, f"--ragmeter-report={report}")
    res.assert_outcomes(passed=1, failed=1)
    page = report.read_text(encoding="utf-8")
    checks = page.index('<section id="checks"')
    assert checks < page.index('<section class="family"') and MARKER in page  # checks first
    section = page[checks:page.index("</section>", checks)]
    for text in ("test_quality.py::test_reachable", "test_quality.py::test_unreachable",
                 "em [lbrag] &gt;= 0.5 (value)", "em [lbrag] &gt;= 0.95 (value)", "0.8000",
                 "holds", ">FAILS<", "passed", "failed", "20/20 scored",
                 "2 check(s) in 2 test(s): 1 hold, 1 fail"):
        assert text in section, text
    # a second session writes over its own earlier report
    shutil.copy(report, tmp_path / "first.html")
    res = _run(pytester, f"--ragmeter-report={report}")
    res.assert_outcomes(passed=1, failed=1)
    assert "ragmeter: wrote" in res.stdout.str()


def test_test_names_and_groups_are_escaped(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(test_names='''
import pytest
from ragmeter.testing import assert_metric

DOC = {"headline": [{"metric": "f1", "group": "<b>sys</b>", "value": 0.9}]}

@pytest.mark.parametrize("x", ["<img src=x onerror=alert(1)>"])
def test_named(x):
    assert_metric(DOC, "f1", group="<b>sys</b>", min=0.5)
''')
    report = tmp_path / "r.html"
    _run(pytester, f"--ragmeter-report={report}").assert_outcomes(passed=1)
    page = report.read_text(encoding="utf-8")
    assert "<img src=x" not in page and "<b>sys</b>" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "&lt;b&gt;sys&lt;/b&gt;" in page
