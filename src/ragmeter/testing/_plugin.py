"""The ragmeter pytest plugin (registered through the ``pytest11`` entry point).

* ``--ragmeter-report FILE.html``: one self-contained HTML report that opens with the quality
  checks of the session (each test, its requirement, the value, its 95% CI, n, coverage and
  the verdict), then every :class:`ragmeter.result.Result` created during the session;
* every metric checked with :func:`ragmeter.testing.assert_metric` is added to the test's
  JUnit properties (``ragmeter:<metric>[<group>]`` = value), so ``--junitxml`` carries them.

The report path is checked when pytest starts, before any test runs: a folder, a missing or
unwritable folder, or an existing file that is not a report this plugin wrote (a test module,
say) is refused with one line (pytest's usage error, exit 4), and it is checked again just
before writing.  Writing is atomic.  It imports nothing heavy unless a ragmeter result is
created.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["pytest_addoption", "pytest_configure", "MARKER", "check_report_path"]

# Written into every report of this plugin; only a file that has it may be written over.
MARKER = 'data-written-by="ragmeter-pytest-plugin"'
_SNIFF_BYTES = 1 << 20  # the marker is in the report's first part, after the stylesheet


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragmeter")
    group.addoption("--ragmeter-report", action="store", default=None, metavar="FILE.html",
                    help="Write one HTML report of the session's ragmeter checks and results "
                         "(never over a file that is not such a report).")


def _is_own_report(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            head = f.read(_SNIFF_BYTES)
    except OSError:
        return False
    return head.lstrip().lower().startswith(b"<!doctype html") and MARKER.encode() in head


def check_report_path(value: str) -> str | None:
    """Why ``value`` cannot take the report (one line naming the option and the fix), or None
    when it can: a new file in a writable folder, or a report this plugin wrote before."""
    path = Path(value)
    fix = "Fix: pass a new .html path, or the path of an earlier ragmeter report."
    if path.is_dir():
        return f"ragmeter: --ragmeter-report {value} is a folder. {fix}"
    if path.exists() or path.is_symlink():
        if not path.is_file():
            return f"ragmeter: --ragmeter-report {value} is not a regular file. {fix}"
        if not _is_own_report(path):
            return (f"ragmeter: --ragmeter-report {value} exists and is not a report this "
                    f"plugin wrote; refusing to write over it. {fix}")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        return f"ragmeter: --ragmeter-report {value}: the folder {folder} does not exist. {fix}"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"ragmeter: --ragmeter-report {value}: the folder {folder} is not writable. {fix}"
    return None


class _Collector:
    def __init__(self, out: str | None) -> None:
        self.out = out
        self.results: list[Any] = []
        self.checks: list[tuple[str, Any]] = []  # (test id, MetricCheck), in check order
        self.outcomes: dict[str, str] = {}

    def on_result(self, result: Any) -> None:
        self.results.append(result)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:
        from ragmeter.testing import _gate as testing

        def on_check(check: Any) -> None:
            name = f"ragmeter:{check.metric}" + (f"[{check.group}]" if check.group else "")
            item.user_properties.append((name, check.value))
            self.checks.append((item.nodeid, check))

        testing._LISTENERS.append(on_check)
        try:
            return (yield)
        finally:
            testing._LISTENERS.remove(on_check)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call":
            self.outcomes[report.nodeid] = report.outcome
        elif report.failed:
            self.outcomes[report.nodeid] = f"error in {report.when}"

    def lead(self) -> Any:
        """The checks of the session as the report's first section (escaped markup)."""
        from ragmeter.reports._html import Markup, esc, note, table
        from ragmeter.result import coverage_text

        rows = []
        for nodeid, c in self.checks:
            ci = list(c.ci) if isinstance(c.ci, (list, tuple)) else None
            verdict = Markup("holds") if c.ok else Markup(
                '<b style="color:#b00000">FAILS</b>'
                + (f" (flagged: {esc(c.flag)})" if c.flag else ""))
            rows.append([nodeid, c.requirement, c.value, ci, c.n, coverage_text(c.coverage),
                         verdict, self.outcomes.get(nodeid, "—")])
        failed = sum(1 for _, c in self.checks if not c.ok)
        body = (table(["test", "requirement", "value", "95% CI", "n", "coverage", "verdict",
                       "test outcome"], rows, numeric_from=2)
                if rows else note("No test checked a metric with assert_metric in this "
                                  "session."))
        summary = (f"{len(self.checks)} check(s) in {len({n for n, _ in self.checks})} "
                   f"test(s): {len(self.checks) - failed} hold, {failed} fail. The results "
                   "the tests created follow.")
        return Markup(f'<section id="checks" {MARKER}><h2>Quality checks</h2>'
                      f"<p>{esc(summary)}</p>{body}</section>")

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.out:
            return
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")

        def say(line: str) -> None:
            if reporter is not None:
                reporter.write_line(line)

        problem = check_report_path(self.out)
        if problem is None:
            from ragmeter.reports.html import write_report

            records = [r.to_record(command=["pytest", f"ragmeter.{r.family}.{r.verb}"])
                       for r in self.results if not r.summary.get("dry_run")]
            try:
                path = write_report(records, self.out, lead=self.lead(),
                                    title="ragmeter: checks and results of the test session")
            except OSError as err:
                problem = (f"ragmeter: --ragmeter-report {self.out} could not be written "
                           f"({err.strerror or err}).")
            else:
                say(f"ragmeter: wrote {path} ({len(self.checks)} check(s), {len(records)} "
                    "result(s))")
                return
        say(problem)
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.USAGE_ERROR


def pytest_configure(config: pytest.Config) -> None:
    out = config.getoption("--ragmeter-report", default=None)
    if out:
        problem = check_report_path(out)
        if problem is not None:
            raise pytest.UsageError(problem)
    collector = _Collector(out)
    if out:
        from ragmeter.result import _CREATED

        _CREATED.append(collector.on_result)
    config.pluginmanager.register(collector, "ragmeter-collector")
