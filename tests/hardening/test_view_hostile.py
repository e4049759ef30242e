"""``ragmeter view`` against a hostile user (issue 29, items 1, 4 and 5).

* **Bodies** (29.1): the security middleware is the only reader of request bodies; a request
  from another origin, not a form, or declaring more than ``MAX_BODY_BYTES`` is refused before
  a byte of its body is read; a chunked body is cut off at the limit; the CSRF token is checked
  on what was read, before the app runs.  Pinned at the ASGI level (what ``receive`` was asked
  for) and in a real server: a 200 MB POST is answered 413 at once and the connection closed.
* **Negative lookups** (29.1): an unknown run id is answered without re-reading the records
  unless the runs folder changed.
* **Empty token** (29.4): refused at start on any address, from Python and from the CLI; the
  Host check applies to a wildcard bind too.
* **Secrets** (29.5): a key in an ``endpoints.toml`` ``base_url`` (userinfo, query, path
  segment) is on no page and in no stored file.
* **Browser**: a page served from another origin (a second server on 127.0.0.1) POSTs large
  bodies with ``mode: "no-cors"`` and loads hundreds of ``<img src=/runs/xN>``; the app, in its
  own process, stays within a memory bound and keeps answering.
"""

from __future__ import annotations

import asyncio
import http.server
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ragmeter.view.security import FORM_KEY, MAX_BODY_BYTES, Security, SecurityMiddleware
from tests.conftest import REPO

pytest.importorskip("starlette")
httpx = pytest.importorskip("httpx")

CSRF = "c" * 43


# ------------------------------------------------------------------ the bounded reader (ASGI)


class _Body:
    """An ASGI ``receive`` that serves ``total`` bytes in chunks and counts what was asked."""

    def __init__(self, total: int, chunk: int = 64 * 1024) -> None:
        self.total, self.chunk, self.sent, self.calls = total, chunk, 0, 0

    async def __call__(self) -> dict[str, Any]:
        self.calls += 1
        n = min(self.chunk, self.total - self.sent)
        self.sent += n
        return {"type": "http.request", "body": b"a" * n, "more_body": self.sent < self.total}


def _call(headers: dict[str, str], body: _Body | bytes, method: str = "POST"
          ) -> tuple[int | None, dict[str, str], list[dict[str, Any]]]:
    """Send one request through the middleware around an app that records what it got."""
    seen: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append({"form": scope.get(FORM_KEY), "rest": await receive()})
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    if isinstance(body, bytes):
        data = body

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": data, "more_body": False}
    else:
        receive = body  # type: ignore[assignment]
    out: dict[str, Any] = {"status": None, "headers": {}}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            out["status"] = message["status"]
            out["headers"] = {k.decode(): v.decode() for k, v in message["headers"]}

    scope = {"type": "http", "method": method, "scheme": "http", "path": "/launch/x/start",
             "query_string": b"", "headers": [(k.lower().encode(), v.encode())
                                              for k, v in {"host": "127.0.0.1:8000",
                                                           **headers}.items()]}
    middleware = SecurityMiddleware(app, Security(host="127.0.0.1", port=8000, csrf=CSRF))
    asyncio.run(middleware(scope, receive, send))
    return out["status"], out["headers"], seen


FORM = {"content-type": "application/x-www-form-urlencoded"}


@pytest.mark.parametrize(("headers", "status"), [
    ({**FORM, "origin": "http://127.0.0.1:9999"}, 403),  # another origin: another port
    ({**FORM, "origin": "null"}, 403),  # a sandboxed frame or a data: page
    ({**FORM, "sec-fetch-site": "same-site"}, 403),
    ({**FORM, "sec-fetch-site": "cross-site"}, 403),
    ({"content-type": "text/plain"}, 415),  # what a no-cors fetch sends by default
    ({"content-type": "multipart/form-data; boundary=x"}, 415),
    ({**FORM, "content-length": str(200 * 2 ** 20)}, 413),
    ({**FORM, "content-length": "12x"}, 413),
])
def test_refused_before_a_byte_of_the_body_is_read(headers: dict[str, str], status: int) -> None:
    body = _Body(200 * 2 ** 20)
    got, response_headers, seen = _call(headers, body)
    assert got == status
    assert body.calls == 0 and body.sent == 0  # the body was never asked for
    assert not seen  # nor did the app run
    assert response_headers.get("connection") == "close"  # the rest is never read either


def test_a_chunked_body_is_cut_off_at_the_limit() -> None:
    body = _Body(200 * 2 ** 20, chunk=16 * 1024)  # no Content-Length: chunked
    got, _, seen = _call(FORM, body)
    assert got == 413 and not seen
    assert body.sent <= MAX_BODY_BYTES + body.chunk  # read up to the limit, then stopped


def test_the_csrf_token_is_checked_before_the_app_runs() -> None:
    got, _, seen = _call(FORM, b"csrf=forged&x=1")
    assert got == 403 and not seen
    got, _, seen = _call(FORM, b"x=1")
    assert got == 403 and not seen
    got, _, seen = _call({**FORM, "origin": "http://127.0.0.1:8000",
                          "sec-fetch-site": "same-origin"}, f"csrf={CSRF}&x=1".encode())
    assert got == 200
    assert seen[0]["form"] == {"csrf": CSRF, "x": "1"}  # handed over, already parsed
    assert seen[0]["rest"] == {"type": "http.request", "body": b"", "more_body": False}


def test_a_get_with_a_body_is_refused_and_too_many_fields_too() -> None:
    got, _, seen = _call({"content-length": "10"}, b"0123456789", method="GET")
    assert got == 413 and not seen
    many = "&".join(f"f{i}=1" for i in range(5000)).encode()
    got, _, seen = _call(FORM, b"csrf=" + CSRF.encode() + b"&" + many)
    assert got == 413 and not seen


def _serve(root: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    """``ragmeter view`` in its own process (its memory is its own); returns it and its URL."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + str(REPO),
           "RAGMETER_HOME": str(root / "home")}
    proc = subprocess.Popen([sys.executable, "-m", "ragmeter", "view", "--port", "0",
                             "--runs-dir", str(root / "runs"), *extra], env=env,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert "serving on http://127.0.0.1:" in line, line
    return proc, line.split("serving on ", 1)[1].split()[0].rstrip("/")


def _memory_mib(pid: int) -> dict[str, float]:
    """The process's resident memory now (VmRSS) and its peak (VmHWM), in MiB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            out[line.split(":")[0]] = int(line.split()[1]) / 1024
    return out


@pytest.fixture(scope="module")
def app_process(tmp_path_factory: pytest.TempPathFactory):
    from tests.view.helpers import write_records

    root = tmp_path_factory.mktemp("hostile-view")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAGMETER_HOME", str(root / "home"))
        ids = write_records(root / "runs")
    proc, url = _serve(root)
    try:
        httpx.get(url + "/launch", timeout=60)  # imports done before any measurement
        yield proc, url, ids
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_a_200_mb_post_is_answered_at_once_and_never_held(app_process) -> None:
    proc, url, _ = app_process
    host, port = url.removeprefix("http://").split(":")
    before = _memory_mib(proc.pid)
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(f"POST /launch/rgb-run/start HTTP/1.1\r\nHost: {host}:{port}\r\n"
                     "Content-Type: application/x-www-form-urlencoded\r\n"
                     f"Content-Length: {200 * 2 ** 20}\r\n\r\n".encode() + b"a" * 2 ** 20)
        reply = sock.recv(4096).decode("latin-1")
        assert reply.startswith("HTTP/1.1 413"), reply[:200]
        sent = 2 ** 20
        try:  # the server closed the connection: the rest of the body cannot be sent
            for _ in range(199):
                sock.sendall(b"a" * 2 ** 20)
                sent += 2 ** 20
        except OSError:
            pass
    assert sent < 200 * 2 ** 20
    assert time.monotonic() - started < 10
    after = _memory_mib(proc.pid)
    assert after["VmHWM"] - before["VmHWM"] < 20, (before, after)
    assert httpx.get(url + "/", timeout=30).status_code == 200


def test_unknown_run_ids_do_not_reread_the_records(tmp_path: Path, monkeypatch) -> None:
    import ragmeter.view.listing as listing
    from tests.reports import cases

    runs = tmp_path / "runs"
    cases.reliability_record(runs)
    old = time.time() - 60
    os.utime(runs, (old, old))  # the folder last changed a minute ago
    reads = []
    real = listing.list_runs
    monkeypatch.setattr(listing, "list_runs", lambda **kw: reads.append(1) or real(**kw))
    index = listing.RunIndex(runs, ttl_s=3600)
    assert len(index.rows()) == 1 and len(reads) == 1
    assert not any(index.known(f"x{i}") for i in range(500))
    assert len(reads) == 1  # 500 misses, no re-read: the folder did not change
    new = cases.multilingual_record(runs)  # a record written since: the folder changes
    assert index.known(new.run_id) and len(reads) == 2
    assert index.known(new.run_id) and len(reads) == 2


def test_unknown_run_pages_stay_cheap_on_the_real_server(app_process) -> None:
    _, url, ids = app_process
    with httpx.Client(base_url=url, timeout=30) as client:
        assert client.get(f"/runs/{ids['ml_a']}").status_code == 200
        started = time.monotonic()
        for i in range(200):
            assert client.get(f"/runs/x{i}").status_code == 404
        took = time.monotonic() - started
    assert took < 20, took  # each miss is a stat of the folder, not a read of every record


# ------------------------------------------------------------------ tokens and hosts


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "::", "127.0.0.1"])
@pytest.mark.parametrize("token", ["", "  "])
def test_an_empty_token_is_refused_at_start(host: str, token: str) -> None:
    from ragmeter.errors import ConfigError

    with pytest.raises(ConfigError, match="empty token protects nothing"):
        Security.for_bind(host, 8000, token)
    with pytest.raises(ConfigError, match="token="):
        Security(host=host, token=token)


def test_the_cli_refuses_an_empty_token_with_its_flag(run_cli) -> None:
    code, out, err = run_cli("view", "--host", "0.0.0.0", "--token", "")
    assert code == 2
    assert "--token" in err and "empty token protects nothing" in err
    assert "Traceback" not in err and "token=" not in err


@pytest.mark.parametrize(("header", "ok"), [
    ("127.0.0.1:8000", True), ("localhost:8000", True), ("[::1]:8000", True),
    ("192.168.1.5:8000", True), ("10.0.0.7", True), ("[fe80::1]:8000", True),
    ("evil.example:8000", False), ("evil.example", False), ("192.168.1.5:8001", False),
    ("127.0.0.1.nip.io:8000", False), ("", False), (None, False),
])
def test_the_host_check_applies_to_a_wildcard_bind(header: str | None, ok: bool) -> None:
    sec, generated = Security.for_bind("0.0.0.0", 8000, None)
    assert generated and sec.token
    assert sec.host_ok(header) is ok
    assert sec.host_ok(f"{socket.gethostname()}:8000")


# ------------------------------------------------------------------ secrets


@pytest.mark.parametrize(("url", "kept"), [
    # a key in a path segment: replaced by *** and a fingerprint
    ("https://h/sk-proj-abcdefghijklmnop1234/v1", "https://h/***"),
    ("https://h/key/hunter2xyz/v1", "https://h/key/***"),
    ("https://gw.example/v1/0123456789abcdef0123456789abcdef/openai", "https://gw.example/v1/***"),
    ("https://h/v1/gsk_abcdefghijklmnopqrstu/chat", "https://h/v1/***"),
    # no key: unchanged, so the store's keys of these endpoints do not change
    ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
    ("https://x.openai.azure.com/openai/deployments/gpt-4o-mini-2024-07-18",
     "https://x.openai.azure.com/openai/deployments/gpt-4o-mini-2024-07-18"),
    ("https://h/v1/models/meta-llama/Llama-3.1-70B-Instruct-Turbo",
     "https://h/v1/models/meta-llama/Llama-3.1-70B-Instruct-Turbo"),
])
def test_a_key_in_a_url_path_segment_is_redacted(url: str, kept: str) -> None:
    from ragmeter._util._redact import redact_text, redact_url

    shown = redact_url(url)
    assert shown.startswith(kept)
    for secret in ("abcdefghijklmnop1234", "hunter2xyz", "0123456789abcdef", "gsk_"):
        assert secret not in shown and secret not in redact_text(f"failed ({url}): refused")
    assert redact_url(shown) == shown  # redacting twice changes nothing


def test_two_keys_stay_two_endpoints() -> None:
    from ragmeter._util._redact import redact_url

    a = redact_url("https://h/sk-aaaaaaaaaaaaaaaaaaaa/v1")
    b = redact_url("https://h/sk-bbbbbbbbbbbbbbbbbbbb/v1")
    assert a != b  # the fingerprint: no two deployments share one store entry


SECRET_URLS = {
    "userinfo": "http://user:sk-secret-userinfo-1234@127.0.0.1:{port}/v1",
    "query": "http://127.0.0.1:{port}/v1?api_key=sk-secret-query-1234",
    "path": "http://127.0.0.1:{port}/sk-secret-path-0123456789abcd/v1",
}


def test_no_key_in_an_endpoint_url_is_on_any_page_or_stored(tmp_path: Path, scripted_server,
                                                            _isolated_home) -> None:
    import re

    from tests.view.helpers import jobs_of, start_server

    server = scripted_server()
    lines = []
    for name, url in SECRET_URLS.items():
        lines.append(f'[endpoints.{name}]\nbase_url = "{url.format(port=server.port)}"\n'
                     'model = "scripted"\n')
    (_isolated_home / "endpoints.toml").write_text("\n".join(lines), encoding="utf-8")
    app = start_server(tmp_path, data_dirs=[])
    pages = []
    try:
        with httpx.Client(base_url=app.url, timeout=120) as client:
            launch = client.get("/launch/rgb-run")
            pages.append(launch.text)
            csrf = re.search(r'name="csrf" value="([^"]+)"', launch.text)
            assert csrf
            for name in SECRET_URLS:
                form = {"csrf": csrf[1], "backend": f"endpoint:{name}", "language": "en",
                        "noise_rates": "0", "limit": "1"}
                estimate = client.post("/launch/rgb-run/estimate", data=form)
                assert estimate.status_code == 200, estimate.text[:500]
                pages.append(estimate.text)
                started = client.post("/launch/rgb-run/start", data=form,
                                      follow_redirects=True)
                pages.append(started.text)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and any(
                    j.status not in ("done", "failed", "cancelled")
                    for j in jobs_of(app).jobs.values()):
                time.sleep(0.2)
            pages.append(client.get("/jobs").text)
            for job_id in list(jobs_of(app).jobs):
                pages.append(client.get(f"/jobs/{job_id}").text)
            listing = client.get("/?refresh=1").text
            pages.append(listing)
            for run_id in re.findall(r'href="/runs/([^"]+)"', listing):
                pages.append(client.get(f"/runs/{run_id}").text)
    finally:
        app.stop()
    assert any("endpoint:path" in p for p in pages)
    for text in pages:
        assert "sk-secret" not in text
    stored = [p for p in [*tmp_path.rglob("*"), *_isolated_home.rglob("*")]
              if p.is_file() and p.name != "endpoints.toml"]
    # the query string is no path the endpoint knows: every call of that run failed (404),
    # which fails the job visibly (issue 25.5), with no key in its message either
    jobs = list(jobs_of(app).jobs.values())
    assert [j.status for j in jobs] == ["done", "failed", "done"]
    assert "http_404" in (jobs[1].error or "") and "sk-secret" not in (jobs[1].error or "")
    assert len(list((tmp_path / "runs").glob("*.json"))) == 2  # one record per finished run
    assert (tmp_path / "store.sqlite").is_file()  # the calls, with their redacted identity
    assert server.calls >= 3
    for path in stored:
        assert b"sk-secret" not in path.read_bytes(), path


# ------------------------------------------------------------------ in a browser


@pytest.mark.browser
def test_a_page_from_another_origin_cannot_exhaust_the_app(app_process, tmp_path: Path) -> None:
    from tests.reports.test_browser import ARGS, CHROMIUM

    if os.environ.get("CI"):
        import playwright.sync_api as playwright
    else:
        playwright = pytest.importorskip("playwright.sync_api")
        if not Path(CHROMIUM).exists():
            pytest.skip("Debian's chromium is not installed")
    proc, url, _ = app_process
    posts, mib, images = 4, 50, 300
    page_html = f"""<!doctype html><body>attacker<script>
(async () => {{
  const big = new Uint8Array({mib} * 1024 * 1024).fill(97);
  const form = {{"Content-Type": "application/x-www-form-urlencoded"}};
  const sent = [];
  for (let i = 0; i < {posts}; i++) {{
    sent.push(fetch("{url}/launch/rgb-run/start", {{method: "POST", mode: "no-cors",
      headers: form, body: big}}).catch(e => null));
  }}
  for (let i = 0; i < {images}; i++) {{
    const img = document.createElement("img"); img.src = "{url}/runs/x" + i;
    document.body.appendChild(img);
  }}
  await Promise.all(sent);
  document.body.dataset.done = "1";
}})();
</script></body>"""
    (tmp_path / "index.html").write_text(page_html, encoding="utf-8")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, directory=str(tmp_path), **kw)

        def log_message(self, *args: Any) -> None:
            pass

    evil = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)  # another origin: a port
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    before = _memory_mib(proc.pid)
    try:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            try:
                page = browser.new_page()
                page.goto(f"http://127.0.0.1:{evil.server_address[1]}/index.html")
                page.wait_for_selector("body[data-done]", timeout=120_000)
                page.wait_for_load_state("load", timeout=60_000)  # every image asked for
                # the app answers meanwhile
                r = httpx.get(url + "/", timeout=10)
                assert r.status_code == 200
            finally:
                browser.close()
    finally:
        evil.shutdown()
    after = _memory_mib(proc.pid)
    # 200 MB were POSTed: the peak grew by less than a tenth of that (it read 0 bytes of them)
    assert after["VmHWM"] - before["VmHWM"] < 20, (before, after)
    assert httpx.get(url + "/jobs", timeout=10).status_code == 200
