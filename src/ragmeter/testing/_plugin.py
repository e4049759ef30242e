"""The ragmeter pytest plugin (registered through the ``pytest11`` entry point).

* ``--ragmeter-report FILE.html``: one self-contained HTML report of every
  :class:`ragmeter.result.Result` created during the test session;
* every metric checked with :func:`ragmeter.testing.assert_metric` is added to the test's
  JUnit properties (``ragmeter:<metric>[<group>]`` = value), so ``--junitxml`` carries them.

It imports nothing heavy unless a ragmeter result is created.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

__all__ = ["pytest_addoption", "pytest_configure"]

_KEY = "_ragmeter_results"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragmeter")
    group.addoption("--ragmeter-report", action="store", default=None, metavar="FILE.html",
                    help="Write one HTML report of every ragmeter result created in the session.")


class _Collector:
    def __init__(self, out: str | None) -> None:
        self.out = out
        self.results: list[Any] = []

    def on_result(self, result: Any) -> None:
        self.results.append(result)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:
        from ragmeter.testing import _gate as testing

        def on_check(check: Any) -> None:
            name = f"ragmeter:{check.metric}" + (f"[{check.group}]" if check.group else "")
            item.user_properties.append((name, check.value))

        testing._LISTENERS.append(on_check)
        try:
            return (yield)
        finally:
            testing._LISTENERS.remove(on_check)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.out:
            return
        from ragmeter.reports.html import write_report

        records = [r.to_record(command=["pytest", f"ragmeter.{r.family}.{r.verb}"])
                   for r in self.results if not r.summary.get("dry_run")]
        path = write_report(records, self.out, title="ragmeter: results of the test session")
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"ragmeter: wrote {path} ({len(records)} result(s))")


def pytest_configure(config: pytest.Config) -> None:
    out = config.getoption("--ragmeter-report", default=None)
    collector = _Collector(out)
    if out:
        from ragmeter.result import _CREATED

        _CREATED.append(collector.on_result)
    config.pluginmanager.register(collector, "ragmeter-collector")
