"""``app run`` at the other doors: the web app's launch forms (estimate, then a job through
:func:`ragmeter.app.run`), the HTML report's section, and the family table."""

from __future__ import annotations

import html
import re
from pathlib import Path

import httpx
import pytest

import ragmeter
from ragmeter.io._samples import sample_path
from tests.view.helpers import jobs_of, start_server

SAMPLE = sample_path("retrieval_contexts.jsonl")


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found
    return found.group(1)


def test_the_family_table_finds_every_part() -> None:
    from ragmeter._families import FAMILIES, family_part

    assert FAMILIES["app"].main_metric == "answered"
    assert family_part("app", "_metrics", "METRICS").get("answered").higher_is_better
    assert callable(family_part("app", "_report", "section"))
    keys = [spec.key for spec in family_part("app", "_form", "FORMS")]
    assert keys == ["app-run-http", "app-run-chat"]


def test_html_report_section_shows_the_application_without_secrets(rag_app, tmp_path,
                                                                    monkeypatch):
    from ragmeter.app._report import section

    app = rag_app()
    monkeypatch.setenv("APP_TOKEN", "s3cret-token-value")
    url = app.url("/ask").replace("http://", "http://user:pw@") + "?api_key=k123"
    result = ragmeter.app.run(SAMPLE, ragmeter.app.http(
        url, template={"query": "{question}"}, headers={"X-Key": "${APP_TOKEN}"},
        contexts="sources[*].text", name="bike-rag"), run=ragmeter.RunOptions(progress=False))
    shown_html = str(section(result.summary))
    for shown in ("bike-rag", "answered", "latency p95 (ms)", "sources[*].text", "X-Key",
                  "***@127.0.0.1"):
        assert shown in shown_html, shown
    for secret in ("s3cret", "user:pw", "k123"):
        assert secret not in shown_html and secret not in result.signature
        assert secret not in repr(result.summary)
    record = result.save(tmp_path / "runs")
    from ragmeter.cli import main

    with pytest.raises(SystemExit) as done:
        main(["report", record.run_id, "--runs-dir", str(tmp_path / "runs"), "--out",
              str(tmp_path / "report.html")])
    assert done.value.code == 0
    page = (tmp_path / "report.html").read_text()
    assert "bike-rag" in page and "s3cret" not in page


@pytest.fixture
def served(tmp_path: Path):
    data = tmp_path / "data"
    data.mkdir()
    server = start_server(tmp_path, data_dirs=[data])
    yield server
    server.stop()


def test_launch_form_estimates_then_runs_the_application(served, rag_app) -> None:
    pytest.importorskip("starlette")
    from ragmeter.runs._records import list_runs

    app = rag_app()
    form = {"test_set": "sample:retrieval_contexts.jsonl", "url": app.url("/ask"),
            "template": '{"query": "{question}"}', "contexts": "sources[*].text",
            "limit": "5"}
    with httpx.Client(base_url=served.url, timeout=60) as client:
        page = client.get("/launch/app-run-http")
        assert page.status_code == 200 and 'name="backend"' not in page.text
        csrf = _csrf(page.text)
        bad = client.post("/launch/app-run-http/estimate",
                          data={**form, "url": "ftp://x", "csrf": csrf})
        assert bad.status_code == 400 and "is not an http:// or https:// URL" in bad.text
        r = client.post("/launch/app-run-http/estimate", data={**form, "csrf": csrf})
        assert r.status_code == 200, r.text[-1500:]
        assert '<td id="est-calls">5</td>' in r.text and app.total == 0
        hidden = {k: html.unescape(v) for k, v in re.findall(
            r'<input type="hidden" name="([^"]+)" value="([^"]*)"',
            r.text.split('id="start-form"', 1)[1])}
        r = client.post("/launch/app-run-http/start", data=hidden)
        assert r.status_code == 303
        job_id = r.headers["location"].rsplit("/", 1)[-1]
        jobs_of(served).wait(job_id, 60)
        job = jobs_of(served).jobs[job_id]
        assert job.status == "done", job.error
        assert app.total == 5
        runs = list_runs(runs_dir_override=Path(served.settings.runs_dir))
        assert [r.run_id for r in runs] == [job.run_id]
        assert runs[0].command[:3] == ["ragmeter", "app", "run"]
        assert "--url" in runs[0].command
        run_page = client.get(f"/runs/{job.run_id}")
        assert run_page.status_code == 200 and "answered" in run_page.text
