"""``ragmeter view`` in a real browser (headless Debian Chromium through Playwright, launched as
tests/reports/test_browser.py does, failing rather than skipping under CI): the run list, a run's
numbers, a comparison, an RGB run launched on the built-in sample against the scripted
OpenAI-compatible server with live progress and its results in the list, a hostile model
answer that stays inert, and the token wall.

Set RAGMETER_VIEW_SHOTS=FOLDER to keep screenshots of the pages there."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.reports import cases
from tests.reports.test_browser import browser  # noqa: F401  (the shared Chromium fixture)
from tests.view.helpers import start_server, write_endpoints, write_records

pytestmark = pytest.mark.browser
SHOTS = os.environ.get("RAGMETER_VIEW_SHOTS")


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    pytest.importorskip("starlette")
    root = tmp_path_factory.mktemp("view")
    with pytest.MonkeyPatch.context() as mp:  # before the per-test home exists: never the user's
        mp.setenv("RAGMETER_HOME", str(root / "home"))
        ids = write_records(root / "runs")
    server = start_server(root)
    yield server, ids
    server.stop()


@pytest.fixture
def page(browser):  # noqa: F811
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    p = context.new_page()
    p.set_default_timeout(20_000)
    yield p
    context.close()


def _shot(page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=False)


def test_run_list_run_page_and_comparison(app, page) -> None:
    server, ids = app
    page.goto(server.url + "/")
    rows = page.locator("table#runs tbody tr")
    assert rows.count() >= 4
    ml = page.locator(f'tr[data-run="{ids["ml_a"]}"]')
    assert ml.locator("td.headlines", has_text="retrieve F1").is_visible()
    assert re.search(r"\[0\.\d{3}, [01]\.\d{3}\]", ml.locator("td.headlines").inner_text())
    _shot(page, "runs")
    # One run: the report's numbers.
    ml.locator("a").first.click()
    page.wait_for_url(re.compile(f"/runs/{ids['ml_a']}$"))
    table = page.locator("table.systems").first
    assert table.is_visible()
    assert re.search(r"0\.\d{4}", table.inner_text())
    assert page.locator("h4", has_text="Coverage").is_visible()
    _shot(page, "run")
    # Compare two runs ticked in the list.
    page.goto(server.url + "/?family=multilingual")
    page.locator(f'input[value="{ids["ml_a"]}"]').check()
    page.locator(f'input[value="{ids["ml_b"]}"]').check()
    page.locator("#compare-button").click()
    page.wait_for_url(re.compile("/compare"))
    assert page.locator("h3", has_text="Comparison of 2 runs").is_visible()
    assert page.locator("caption", has_text="Per-item paired comparison").is_visible()
    assert page.locator("caption", has_text="Per-item paired comparison").locator(
        "xpath=..").locator("tbody tr").count() >= 2
    _shot(page, "compare")


def test_launch_rgb_run_with_live_progress_and_inert_answers(app, page, scripted_server,
                                                             _isolated_home,
                                                             monkeypatch) -> None:
    server, _ = app
    # Every answer carries markup that would run if it were ever parsed as HTML.
    model = scripted_server(latency=0.04, reply=lambda body: "Canberra " + cases.HOSTILE)
    write_endpoints(_isolated_home, model.url)
    monkeypatch.setenv("RAGMETER_TEST_SECRET_KEY", "sk-secret-never-on-the-page")
    page.goto(server.url + "/launch")
    page.select_option("#backend", "endpoint:scripted")
    page.fill("#noise_rates", "0,0.4")
    page.fill("input[name=concurrency]", "2")
    page.fill("input[name=price_prompt]", "2.5")
    page.fill("input[name=price_completion]", "10")
    page.locator("#estimate-button").click()
    assert page.locator("#est-calls").count(), page.locator("main").inner_text()
    calls = int(page.locator("#est-calls").inner_text())
    assert 10 < calls <= int(page.locator("#est-requests").inner_text())
    assert re.fullmatch(r"\$0\.\d{4}", page.locator("#est-money").inner_text().strip())
    assert "sk-secret" not in page.content()
    _shot(page, "launch")
    page.locator("#start-button").click()
    page.wait_for_url(re.compile("/jobs/"))
    from playwright.sync_api import expect

    expect(page.locator("[data-k=done]")).not_to_have_text(re.compile(r"^[0-4]$"))
    _shot(page, "job-running")  # usually mid-run (best effort: it may have finished)
    expect(page.locator("[data-k=status]")).to_have_text("done", timeout=30_000)
    updates = int(page.locator("#job").get_attribute("data-updates") or 0)
    assert updates >= 3, updates  # several pushes arrived while it ran
    assert page.locator("[data-k=done]").inner_text() == str(calls)
    assert page.locator("[data-k=calls]").inner_text() == str(calls)
    assert int(page.locator("[data-k=completion_tokens]").inner_text()) > 0
    assert model.stats()["calls"] == calls
    _shot(page, "job")
    page.locator("#run-link").click()
    page.wait_for_url(re.compile("/runs/"))
    assert page.locator("caption", has_text="Noise robustness").first.is_visible()
    page.locator("details.drill-wrap > summary").first.click()  # long lists start folded
    item = page.locator("li.st-ok").first
    item.locator("summary").click()
    assert item.get_by_text(cases.XSS_SCRIPT, exact=False).first.is_visible()
    page.wait_for_timeout(300)
    assert page.evaluate("window.__xss") is None
    assert "pwned" not in page.title()
    assert page.evaluate("document.querySelectorAll('script:not([src])').length") == 0
    run_id = page.url.rsplit("/", 1)[-1]
    page.goto(server.url + "/")
    assert page.locator(f'tr[data-run="{run_id}"]').is_visible()
    _shot(page, "runs-after-launch")
    assert page.evaluate("window.__xss") is None


def test_token_is_required_when_set(page, tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    write_records(tmp_path / "runs")
    server = start_server(tmp_path, token="view-token-123")
    try:
        refused = page.goto(server.url + "/")
        assert refused is not None and refused.status == 401
        assert "token is required" in page.content()
        ok = page.goto(server.url + "/?token=view-token-123")
        assert ok is not None and ok.status == 200 and "token=" not in page.url
        assert page.locator("table#runs tbody tr").count() >= 4
        page.goto(server.url + "/launch")  # the cookie carries the token from now on
        assert page.locator("#launch-form").is_visible()
    finally:
        server.stop()


def test_launch_multilingual_judge_and_two_jobs_at_once(app, page, scripted_server,
                                                        _isolated_home) -> None:
    """A non-RGB family from its own form: the estimate, live progress, the run in the list;
    then two jobs launched one after the other run at once on the job list."""
    from playwright.sync_api import expect

    server, _ = app
    model = scripted_server(latency=0.04,
                            reply=lambda body: '{"score": 0.9, "explanation": "ok"}')
    (_isolated_home / "endpoints.toml").write_text("".join(
        f'[endpoints.{m}]\nbase_url = "{model.url}"\nmodel = "judge-{m}"\n' for m in "abc"),
        encoding="utf-8")

    def launch(endpoint: str) -> None:
        page.goto(server.url + "/launch/multilingual-judge")
        page.select_option("#answers", "sample:multilingual_answers.jsonl")
        page.select_option("#scoring", "generate")
        page.select_option("#backend", f"endpoint:{endpoint}")
        page.fill("input[name=concurrency]", "1")
        page.locator("#estimate-button").click()
        assert page.locator("#est-calls").inner_text() == "28", page.locator("main").inner_text()
        page.locator("#start-button").click()
        page.wait_for_url(re.compile("/jobs/"))

    launch("a")
    _shot(page, "launch-multilingual-judge-job")
    expect(page.locator("[data-k=status]")).to_have_text("done", timeout=30_000)
    assert int(page.locator("#job").get_attribute("data-updates") or 0) >= 3
    assert page.locator("[data-k=done]").inner_text() == "28"
    assert page.locator("[data-k=calls]").inner_text() == "28"
    expect(page.locator("#running-badge")).to_be_hidden()  # no job left running
    page.locator("#run-link").click()
    page.wait_for_url(re.compile("/runs/"))
    run_id = page.url.rsplit("/", 1)[-1]
    assert "judge-a" in page.locator("main").inner_text()
    page.goto(server.url + "/?family=multilingual")
    row = page.locator(f'tr[data-run="{run_id}"]')
    assert row.is_visible() and "judge" in row.inner_text()
    # Two jobs at once (--max-jobs 2): both running on the job list, then both done.
    launch("b")
    launch("c")
    page.goto(server.url + "/jobs")
    active = page.locator("tr[data-job][data-active='1']")
    expect(active).to_have_count(2, timeout=10_000)
    expect(page.locator("tr[data-job] [data-k=status]", has_text="running")).to_have_count(2)
    _shot(page, "jobs-two-running")
    expect(page.locator("tr[data-job][data-active='1']")).to_have_count(0, timeout=30_000)
    assert page.locator("tr[data-job] [data-k=status]", has_text="done").count() >= 3
    assert model.stats()["calls"] == 3 * 28
    links = page.locator("tr[data-job] td[data-k=run_id] a")
    ids = [links.nth(k).inner_text() for k in range(links.count())]
    page.goto(server.url + "/")
    for rid in ids:
        assert page.locator(f'tr[data-run="{rid}"]').is_visible()
