"""The web app reads the shared headline (issue 25.7): the run list shows each run's family
main metric with CI and n (reliability's evaluators, not ``evaluators.ann_ayo.total_items``),
RAGBench runs are named by domain and split, the run page is the report's own article, and
the launch form's model dropdown lists what each endpoint's ``/models`` lists (fetched by the
server, kept a minute, the key sent in its header and shown nowhere)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from ragmeter.runs._records import InputFile, record_run
from tests.reports import cases
from tests.view.helpers import start_server

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found
    return found[1]


@pytest.fixture
def listed(tmp_path: Path):
    runs = tmp_path / "runs"
    rel = cases.reliability_record(runs)
    trace = {}
    for split in ("test", "validation"):
        path = f"/data/ragbench/hotpotqa/{split}-00000-of-00001.parquet"
        trace[split] = record_run("trace", cases.TRACE_SCORE, [], inputs=[InputFile(path=path)],
                                  command=["ragmeter", "trace", "score", path],
                                  runs_dir_override=runs)
    server = start_server(tmp_path)
    yield server, rel, trace
    server.stop()


def test_the_run_list_shows_each_familys_main_metric(listed) -> None:
    from ragmeter.reliability._metrics import headline
    from ragmeter.view.listing import headlines

    server, rel, trace = listed
    shown = headlines(rel)
    rows = [h for h in headline(rel.result) if h.metric == "reliability"]  # the family's own
    assert [h.label for h in shown] == [f"{h.group} reliability" for h in rows[:4]]
    assert (shown[0].value, shown[0].ci, shown[0].n) == (rows[0].value, rows[0].ci, rows[0].n)
    evaluators = [h.group for h in rows]
    page = httpx.get(server.url + "/", timeout=60).text
    row = page[page.index(f'data-run="{rel.run_id}"'):]
    row = row[:row.index("</tr>")]
    assert "total_items" not in row and "evaluators." not in row
    assert f"{evaluators[0]} reliability" in row and "n=" in row
    assert f"+{len(rows) - 4} more" in row  # four shown, the rest counted
    # TRACe's main metric, adherence, with its CI and n (the stored result's headline)
    row = page[page.index(f'data-run="{trace["test"].run_id}"'):]
    row = row[:row.index("</tr>")]
    assert re.search(r"adherence \(share adherent\) <b>0\.900</b> <span class=\"ci\">"
                     r"\[0\.800, 1\.000\]</span> <span class=\"ci\">n=10</span>", row), row


def test_ragbench_runs_are_named_by_domain_and_split(listed) -> None:
    server, _, trace = listed
    page = httpx.get(server.url + "/", timeout=60).text
    for split, rec in trace.items():
        row = page[page.index(f'data-run="{rec.run_id}"'):]
        assert f"hotpotqa/{split}" in row[:row.index("</tr>")]
    assert "test-00000-of-00001.parquet" not in page
    run = httpx.get(server.url + f"/runs/{trace['validation'].run_id}", timeout=60).text
    assert "hotpotqa/validation" in run
    assert run.index("Headline") < run.index("TRACe metrics (RAGBench)") < run.index(
        "Provenance")  # the report's own article: results first


@pytest.fixture
def endpoints(_isolated_home: Path, scripted_server, monkeypatch):
    server = scripted_server(models=("model-a", "org/model-b", "<b>bold</b>"))
    monkeypatch.setenv("RAGMETER_TEST_SECRET_KEY", "sk-models-key-never-shown")
    (_isolated_home / "endpoints.toml").write_text(
        f'[endpoints.live]\nbase_url = "{server.url}"\nmodel = "model-a"\n'
        'api_key_env = "RAGMETER_TEST_SECRET_KEY"\n'
        '[endpoints.dead]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "dead-model"\n',
        encoding="utf-8")
    return server


def test_the_model_dropdown_lists_each_endpoints_models(tmp_path: Path, endpoints,
                                                        monkeypatch) -> None:
    from ragmeter.backends._endpoints import Endpoint

    asked = []
    real = Endpoint.list_models
    monkeypatch.setattr(Endpoint, "list_models",
                        lambda self, *a, **kw: asked.append(self.name) or real(self, *a, **kw))
    app = start_server(tmp_path)
    try:
        started = time.monotonic()
        page = httpx.get(app.url + "/launch/rgb-run", timeout=60).text
        assert time.monotonic() - started < 10  # the dead endpoint is not waited for long
        select = page[page.index('<select name="model"'):]
        select = select[:select.index("</select>")]
        live = select[select.index('data-backend="endpoint:live"'):]
        live = live[:live.index("</optgroup>")]
        assert re.findall(r'<option value="([^"]*)"', live) == [
            "model-a", "org/model-b", "&lt;b&gt;bold&lt;/b&gt;"]  # escaped
        dead = select[select.index('data-backend="endpoint:dead"'):]
        assert "dead-model" in dead and "its model list: not reachable" in dead
        assert "sk-models-key" not in page
        assert endpoints.models_auth == ["Bearer sk-models-key-never-shown"]  # header only
        httpx.get(app.url + "/launch/trace-run", timeout=60)
        assert sorted(asked) == ["dead", "live"]  # kept: asked once a minute, not per page
        with httpx.Client(base_url=app.url, timeout=120) as client:
            csrf = _csrf(client.get("/launch/rgb-run").text)
            form = {"csrf": csrf, "backend": "endpoint:live", "language": "en",
                    "noise_rates": "0", "limit": "1", "model": "org/model-b"}
            r = client.post("/launch/rgb-run/estimate", data=form)
            assert r.status_code == 200, r.text[:400]
            assert "--endpoint live" in r.text and "--model org/model-b" in r.text
            r = client.post("/launch/rgb-run/estimate", data={**form, "model": "not-listed"})
            assert r.status_code == 400 and "is not one endpoint live lists" in r.text
            r = client.post("/launch/rgb-run/estimate",
                            data={**form, "backend": "local", "model": "model-a"})
            assert r.status_code == 400 and "has one model" in r.text
            r = client.post("/launch/rgb-run/estimate", data={**form, "model": ""})
            assert r.status_code == 200 and "--model" not in r.text  # the endpoint's own
    finally:
        app.stop()


def test_a_model_list_reply_is_checked(scripted_server) -> None:
    from ragmeter.backends._endpoints import Endpoint

    server = scripted_server(models=("ok", "x" * 201, "bad\x07id", "ok"))
    models, problem = Endpoint("s", server.url, "ok").list_models()
    assert (models, problem) == (["ok"], None)  # too long, control characters, twice: dropped
    models, problem = Endpoint("s", "http://127.0.0.1:9/v1", "ok").list_models()
    assert models == [] and problem == "not reachable (ConnectError)"
