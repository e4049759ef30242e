"""The web app without a browser: access rules (token, Host, CSRF), run ids never used as paths,
data files only from the configured folders, the endpoints file and ``--endpoint``, and a job
that is cancelled and resumed from the store without calling anything twice."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest

from ragmeter.errors import ConfigError, UnknownNameError
from tests.view.helpers import start_server, write_endpoints, write_records

pytest.importorskip("starlette")


@pytest.fixture
def served(tmp_path: Path):
    ids = write_records(tmp_path / "runs")
    server = start_server(tmp_path)
    yield server, ids
    server.stop()


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "form without a CSRF field"
    return found.group(1)


def test_pages_serve_and_unknown_runs_are_not_paths(served, tmp_path: Path) -> None:
    server, ids = served
    with httpx.Client(base_url=server.url, timeout=60) as client:
        listing = client.get("/")
        assert listing.status_code == 200
        assert all(i in listing.text for i in ids.values())
        assert "script-src 'self'" in listing.headers["content-security-policy"]
        page = client.get(f"/runs/{ids['ml_a']}")
        assert page.status_code == 200 and "Systems (LBRAG metrics" in page.text
        outside = tmp_path / "secret.json"
        outside.write_text('{"run_id": "x", "family": "leak", "result": {"secret": 42}}')
        for bad in (str(outside), "../secret", "..%2Fsecret.json", ids["ml_a"] + ".json",
                    ids["ml_a"][:10]):
            r = client.get(f"/runs/{bad}")
            assert r.status_code == 404, bad
            assert "leak" not in r.text
        assert client.get("/compare", params={"run": ids["ml_a"]}).status_code == 400


def test_host_header_must_name_the_app(served) -> None:
    server, _ = served
    r = httpx.get(server.url + "/", headers={"Host": "evil.example:80"})
    assert r.status_code == 400


def test_token_required_when_set(tmp_path: Path) -> None:
    write_records(tmp_path / "runs")
    server = start_server(tmp_path, token="s3cret-token")
    try:
        assert httpx.get(server.url + "/").status_code == 401
        assert httpx.get(server.url + "/", headers={"Authorization": "Bearer nope"}
                         ).status_code == 401
        assert httpx.get(server.url + "/static/view.js").status_code == 401
        assert httpx.get(server.url + "/", headers={"Authorization": "Bearer s3cret-token"}
                         ).status_code == 200
        with httpx.Client(base_url=server.url, follow_redirects=False, timeout=60) as client:
            r = client.get("/", params={"token": "s3cret-token", "family": "rgb"})
            assert r.status_code == 303 and r.headers["location"] == "/?family=rgb"
            assert "HttpOnly" in r.headers["set-cookie"]
            assert client.get("/").status_code == 200  # the cookie now carries it
    finally:
        server.stop()


def test_posts_need_the_csrf_token_and_own_origin(served, tmp_path: Path) -> None:
    server, _ = served
    with httpx.Client(base_url=server.url, timeout=60) as client:
        form = {"backend": "local", "language": "en", "noise_rates": "0", "limit": "1"}
        assert client.post("/launch/rgb-run/start", data=form).status_code == 403
        assert client.post("/launch/rgb-run/start",
                           data={**form, "csrf": "wrong"}).status_code == 403
        csrf = _csrf(client.get("/launch").text)
        r = client.post("/launch/rgb-run/start", data={**form, "csrf": csrf},
                        headers={"Origin": "http://evil.example"})
        assert r.status_code == 403
        # A data file outside the configured folders is refused (none are configured here).
        r = client.post("/launch/rgb-run/estimate",
                        data={**form, "csrf": csrf, "data": "/etc/passwd"})
        assert r.status_code == 400 and "not in a configured data folder" in r.text


def test_endpoints_file_and_cli_option(tmp_path: Path, monkeypatch, _isolated_home) -> None:
    from ragmeter.backends._endpoints import load_endpoints
    from ragmeter.cli.backend_options import runner_context

    write_endpoints(_isolated_home, "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RAGMETER_TEST_SECRET_KEY", "sk-never-shown")
    (ep,) = load_endpoints().values()
    assert (ep.name, ep.model, ep.api_key()) == ("scripted", "scripted-model", "sk-never-shown")
    backend, store, _, _ = runner_context(endpoint="scripted", store=str(tmp_path / "s.sqlite"))
    store.close()
    assert backend.identity() == {"backend": "openai", "model": "scripted-model",
                                  "base_url": "http://127.0.0.1:9/v1"}
    backend, store, _, _ = runner_context(endpoint="scripted", model="other",
                                          store=str(tmp_path / "s.sqlite"))
    store.close()
    assert backend.identity()["model"] == "other"
    with pytest.raises(UnknownNameError, match="unknown endpoint 'scriptd'. Did you mean: scripted"):
        runner_context(endpoint="scriptd")
    (_isolated_home / "endpoints.toml").write_text('[endpoints.x]\nbase_url = "u"\n')
    with pytest.raises(ConfigError, match=r"endpoints.x needs field 'model'"):
        load_endpoints()


def test_cancelled_job_resumes_from_the_store(tmp_path: Path, scripted_server,
                                              _isolated_home) -> None:
    from ragmeter.runs._records import list_runs
    from ragmeter.view.forms import validate
    from ragmeter.view.jobs import JobManager
    from ragmeter.view.verbs import SPECS

    server = scripted_server(latency=0.05)
    write_endpoints(_isolated_home, server.url)
    manager = JobManager(store_path=str(tmp_path / "store.sqlite"),
                         runs_dir=str(tmp_path / "runs"))
    launch = validate(SPECS["rgb-run"], {"backend": "endpoint:scripted", "noise_rates": "0",
                                         "concurrency": "1"}, [])
    first = manager.start(launch)
    deadline = time.monotonic() + 20
    while first.done < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    manager.cancel(first.id)
    manager.wait(first.id, 20)
    assert first.status == "cancelled" and first.run_id is None
    answered = server.stats()["calls"]
    assert 3 <= answered < first.todo
    second = manager.start(launch)
    manager.wait(second.id, 30)
    assert second.status == "done", second.error
    # The resumed job called only what the cancelled one had not finished.
    assert second.todo <= first.todo - 3
    assert server.stats()["calls"] == first.todo
    assert [r.run_id for r in list_runs(runs_dir_override=tmp_path / "runs")] == [second.run_id]


def test_rgb_run_dry_run_with_endpoint_option(run_cli, scripted_server, _isolated_home) -> None:
    server = scripted_server()
    write_endpoints(_isolated_home, server.url)
    code, out, err = run_cli("rgb", "run", "--endpoint", "scripted", "--noise-rates", "0",
                             "--limit", "1", "--dry-run")
    assert code == 0, err
    assert "calls to make" in out and server.stats()["calls"] == 0
    code, _, err = run_cli("rgb", "run", "--endpoint", "nope", "--dry-run")
    assert code == 2 and "unknown endpoint 'nope'" in err


def test_judge_model_stays_on_the_endpoint(run_cli, scripted_server, _isolated_home,
                                           tmp_path: Path) -> None:
    from ragmeter.runs._records import list_runs

    server = scripted_server(reply=lambda body: "Yes, insufficient information.")
    write_endpoints(_isolated_home, server.url)
    code, _, err = run_cli("rgb", "run", "--endpoint", "scripted", "--noise-rates", "0",
                           "--limit", "1", "--judge", "--judge-model", "judge-x", "--no-plot",
                           "--out", str(tmp_path / "out"))
    assert code == 0, err
    (record,) = list_runs()
    assert record.result["judge"]["backend"] == "openai"
    assert record.result["judge"]["model"] == "judge-x"
    assert record.backends[0]["base_url"] == server.url


def test_judge_card_and_degenerate_alarm_are_shown(tmp_path: Path) -> None:
    from ragmeter.judges._card import check_degenerate, judge_card
    from tests.reports import cases

    alarm = check_degenerate(["yes"] * 20, judge="openai:judge-x", what="rubric grades")
    assert alarm is not None
    card = judge_card({"backend": "openai", "model": "judge-x"})
    result = {**cases.RUBRIC, "alarms": [alarm], "judges": [card]}
    run_id = cases.family_record(tmp_path / "runs", "rubric", result).run_id
    server = start_server(tmp_path)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            row = client.get("/").text
            assert "degenerate judge" in row and "en weighted" in row
            page = client.get(f"/runs/{run_id}").text
            assert "treat them as unmeasured" in page
            assert "judge-x" in page and "unvalidated" in page
    finally:
        server.stop()


def test_view_command_serves_and_prints_its_url(tmp_path: Path, _isolated_home) -> None:
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    write_records(_isolated_home / "runs")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "ragmeter", "view", "--port", "0",
                             "--token", "tok-1"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "serving on http://127.0.0.1:" in line, line
        url = line.split("serving on ", 1)[1].split()[0]
        assert url.endswith("/?token=tok-1")
        base = url.split("?")[0]
        assert httpx.get(base, timeout=60).status_code == 401
        r = httpx.get(base, headers={"Authorization": "Bearer tok-1"}, timeout=60)
        assert r.status_code == 200 and "multilingual" in r.text
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_token_is_generated_for_any_other_address() -> None:
    from ragmeter.view.security import Security

    sec, generated = Security.for_bind("0.0.0.0", 8000, None)
    assert generated and sec.token and len(sec.token) >= 24
    sec, generated = Security.for_bind("127.0.0.1", 8000, None)
    assert not generated and sec.token is None
    sec, generated = Security.for_bind("192.168.1.5", 8000, "given")
    assert not generated and sec.token == "given"
    assert sec.allowed_hosts() == {"192.168.1.5", "192.168.1.5:8000"}


def test_data_files_only_from_the_configured_folders(tmp_path: Path) -> None:
    from ragmeter.view.jobs import list_data_files, resolve_data

    folder = tmp_path / "data"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "en.json").write_text("{}\n")
    (tmp_path / "outside.json").write_text("{}\n")
    (folder / "link.json").symlink_to(tmp_path / "outside.json")
    assert list_data_files([folder]) == ["sub/en.json"]  # the link points outside
    assert resolve_data("sub/en.json", [folder]) == str((folder / "sub" / "en.json").resolve())
    for bad in ("../outside.json", str(tmp_path / "outside.json"), "link.json", "missing.json"):
        with pytest.raises(ConfigError, match="not in a configured data folder"):
            resolve_data(bad, [folder])
