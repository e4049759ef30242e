"""What a hostile page costs ``ragmeter view`` (issue 29.1): memory under a large cross-origin
POST, and time per unknown run id.

Starts ``python -m ragmeter view`` as its own process (its memory is its own) over a fresh
``RAGMETER_HOME`` holding N copies of a small run record, then:

* **POST**: a page served from another origin (a second HTTP server on 127.0.0.1, another
  port) is opened in headless Debian Chromium and POSTs ``--mib`` MiB to the app with
  ``fetch(..., {mode: "no-cors"})``; the app's resident memory (VmRSS) before and after and
  its peak (VmHWM) are read from ``/proc``;
* **misses**: ``GET /runs/x<i>`` (unknown ids) and ``GET /jobs`` (for scale) over one
  keep-alive connection, mean milliseconds each.

``--src SRC`` serves another checkout's ``src`` (e.g. ``../main/src``) to measure it the same
way.  Needs playwright and /usr/bin/chromium for the POST part (skipped without them).

    python benchmarks/bench_view_hostile.py [--records 600] [--mib 200] [--src ../main/src]
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"


def _memory(pid: int) -> dict[str, float]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            out[line.split(":")[0]] = int(line.split()[1]) / 1024
    return out


def _write_records(runs: Path, n: int) -> None:
    from ragmeter.io._samples import sample_path
    from ragmeter.reliability._scorer import ReliabilityConfig, score_file
    from ragmeter.runs._records import record_run

    path = sample_path("reliability_annotations.csv")
    res = score_file(path, ReliabilityConfig(qc=("qc_maria",)))
    first = record_run("reliability", res.to_json(), [], inputs=[path], command=["bench"],
                       runs_dir_override=runs)
    doc = json.loads(Path(first.path or "").read_text(encoding="utf-8"))
    for i in range(1, n):
        run_id = f"{first.run_id[:-6]}{i:06d}"
        (runs / f"{run_id}.json").write_text(json.dumps({**doc, "run_id": run_id}),
                                              encoding="utf-8")
    old = time.time() - 60
    os.utime(runs, (old, old))


def _post(url: str, mib: int) -> str | None:
    """Open a page of another origin that POSTs ``mib`` MiB to the app; None when done."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return "playwright is not installed"
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing"
    folder = Path(tempfile.mkdtemp())
    (folder / "index.html").write_text(f"""<!doctype html><body><script>
(async () => {{
  const big = new Uint8Array({mib} * 1024 * 1024).fill(97);
  await fetch("{url}/launch/rgb-run/start", {{method: "POST", mode: "no-cors",
    headers: {{"Content-Type": "application/x-www-form-urlencoded"}}, body: big}}).catch(e => 0);
  document.body.dataset.done = "1";
}})();
</script></body>""", encoding="utf-8")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, directory=str(folder), **kw)

        def log_message(self, *args: Any) -> None:
            pass

    evil = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM,
                                        args=["--headless", "--no-sandbox"])
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{evil.server_address[1]}/index.html",
                      wait_until="commit", timeout=120_000)
            page.wait_for_selector("body[data-done]", state="attached", timeout=300_000)
            browser.close()
    finally:
        evil.shutdown()
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=600)
    parser.add_argument("--mib", type=int, default=200)
    parser.add_argument("--misses", type=int, default=30)
    parser.add_argument("--src", default=None, help="serve this checkout's src instead")
    args = parser.parse_args()
    import httpx

    home = Path(tempfile.mkdtemp())
    (home / "runs").mkdir()
    _write_records(home / "runs", args.records)
    env = {**os.environ, "RAGMETER_HOME": str(home)}
    if args.src:
        env["PYTHONPATH"] = str(Path(args.src).resolve())
    proc = subprocess.Popen([sys.executable, "-m", "ragmeter", "view", "--port", "0",
                             "--runs-dir", str(home / "runs")], env=env,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        url = line.split("serving on ", 1)[1].split()[0].rstrip("/")
        with httpx.Client(base_url=url, timeout=300) as client:
            client.get("/")
            client.get("/launch")  # imports done before measuring memory
            before = _memory(proc.pid)
            started = time.monotonic()
            skipped = _post(url, args.mib)
            took = time.monotonic() - started
            after = _memory(proc.pid)
            if skipped:
                print(f"POST: skipped ({skipped})")
            else:
                print(f"POST {args.mib} MiB from another origin (Chromium, no-cors): RSS "
                      f"{before['VmRSS']:.0f} -> {after['VmRSS']:.0f} MiB, peak "
                      f"{before['VmHWM']:.0f} -> {after['VmHWM']:.0f} MiB, {took:.1f} s")

            def per(path: str) -> float:
                t = time.monotonic()
                for i in range(args.misses):
                    client.get(path.format(i=i))
                return (time.monotonic() - t) / args.misses * 1000

            jobs = per("/jobs")
            miss = per("/runs/x{i}")
            print(f"{args.records} records: GET /runs/<unknown> {miss:.1f} ms "
                  f"(GET /jobs, for scale: {jobs:.1f} ms)")
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
