"""The report in a real browser: headless Debian Chromium driven by Playwright (no browser
download: executable_path=/usr/bin/chromium).  Checks sections, tables and plots are visible,
hostile item text executes nothing, the CSS-only filter works, the page reads without
JavaScript, and no request leaves file:// or data:."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ragmeter.reports.html import write_report
from tests.reports import cases

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser():
    if os.environ.get("CI"):  # CI installs both (.ci/run): a missing one is a failure there
        import playwright.sync_api as playwright
        assert Path(CHROMIUM).exists(), "CI must install Debian's chromium"
    else:
        playwright = pytest.importorskip("playwright.sync_api")
        if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
            pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("runs")
    records = [cases.multilingual_record(d, ci=True, paired=True),
               cases.multilingual_record(d, baseline="retrieve"),
               cases.reliability_record(d), cases.hostile_record(d)]
    return write_report(records, d / "report.html")


def _open(browser, report: Path, *, javascript: bool = True):
    context = browser.new_context(java_script_enabled=javascript,
                                  viewport={"width": 1280, "height": 900})
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(report.as_uri())
    page.wait_for_load_state("load")
    return context, page, requests


def test_sections_tables_and_plots_are_visible(browser, report: Path) -> None:
    context, page, requests = _open(browser, report)
    try:
        for heading in ("Results", "multilingual", "reliability", "newfamily",
                        "Runs and signatures"):
            assert page.locator("h2", has_text=heading).first.is_visible(), heading
        # results first: the first table is every run's main number, before any signature
        first = page.locator("table").first
        assert first.locator("caption").inner_text().startswith("Results at a glance")
        assert page.get_by_text("Comparison of 2 runs").is_visible()
        assert page.locator("caption", has_text="Systems (LBRAG metrics").first.is_visible()
        assert page.locator("caption", has_text="Annotators against QC").is_visible()
        assert page.locator("table").count() >= 15
        images = page.locator("img.plot")
        assert images.count() >= 7  # 2 x (F1, cost, CNBE) + matrix
        for i in range(images.count()):
            img = images.nth(i)
            img.scroll_into_view_if_needed()
            assert img.is_visible()
            assert img.evaluate("e => e.complete && e.naturalWidth > 100")
        assert all(u.startswith(("file://", "data:")) for u in requests), requests
    finally:
        context.close()


def test_hostile_text_executes_nothing_and_shows_as_text(browser, report: Path) -> None:
    context, page, requests = _open(browser, report)
    try:
        for wrap in page.locator("details.drill-wrap > summary").all():
            wrap.click()  # item lists start folded
        item = page.locator("li.st-unscored", has_text="evil-1")
        item.locator("summary").click()
        assert item.get_by_text(cases.XSS_SCRIPT, exact=False).first.is_visible()
        page.locator("li.st-ok", has_text="evil-2").locator("summary").click()
        page.wait_for_timeout(300)  # give any injected handler time to fire
        assert page.evaluate("window.__xss") is None
        assert page.title() == "ragmeter report"
        assert page.evaluate("document.querySelectorAll('script').length") == 0
        assert page.evaluate("document.querySelectorAll('img:not(.plot)').length") == 0
        assert "x" not in [u.rsplit("/", 1)[-1] for u in requests]
        assert all(u.startswith(("file://", "data:")) for u in requests), requests
    finally:
        context.close()


def test_status_filter_works_without_javascript(browser, report: Path) -> None:
    context, page, _ = _open(browser, report, javascript=False)
    try:
        run = page.locator("article.run", has_text="reliability score")
        ok_items = run.locator("li.st-ok")
        unscored = run.locator("li.st-unscored")
        assert not unscored.first.is_visible()  # folded: the numbers come first
        run.locator("details.drill-wrap > summary").click()
        assert unscored.first.is_visible()
        assert ok_items.first.is_visible()
        run.locator("label", has_text="unscored (").click()
        assert unscored.first.is_visible() and not ok_items.first.is_visible()
        run.locator("label", has_text="scored (").last.click()
        assert ok_items.first.is_visible() and not unscored.first.is_visible()
        assert run.locator("caption", has_text="Annotators against QC").is_visible()
    finally:
        context.close()


def test_demo_screenshot(browser, tmp_path: Path, report: Path) -> None:
    context, page, _ = _open(browser, report)
    try:
        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=False)
        assert shot.stat().st_size > 10_000
        assert report.stat().st_size < 3_000_000
    finally:
        context.close()
