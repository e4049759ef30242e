"""Runner overhead against a bare shared ``openai.AsyncOpenAI`` client (issue 3).

Starts the scripted OpenAI-compatible server (tests/servers/scripted_openai.py) in a separate
process with 200 ms latency, then makes 640 chat calls at concurrency 8 and 32, once through
ragmeter (runner + openai backend + SQLite store, a fresh store per setting so nothing is
cached) and once through one shared ``openai.AsyncOpenAI`` client with an asyncio semaphore,
in the same run.  Prints wall time, the ideal bound (requests x latency / concurrency), the
ratio bound/wall, ragmeter's wall relative to the bare client, the TCP connections the server
saw, and client CPU per request.

Goal: ragmeter within 5% of the bare client at both settings, connections ~ concurrency,
< 10 ms client CPU per request.

Needs the test extra (the bare-client baseline is the ``openai`` package):
``pip install -e '.[all,test]'``; pytest is not needed.

``--whole`` measures whole processes instead (issue 26.5): ``ragmeter generate REQUESTS --out
RESPONSES --backend openai`` (a fresh ``$RAGMETER_HOME``, so a fresh store: every call is made)
against a bare script that reads the same JSON Lines, calls through one ``AsyncOpenAI`` client
and writes the answers, and against the floor (the same job with the standard library alone:
asyncio streams and hand-written HTTP/1.1, sqlite3 imported), each a new Python process timed
from outside, rounds interleaved (medians).  It prints each side's wall time, its efficiency (the physical bound, requests x
latency / concurrency, over the wall time), ragmeter's efficiency relative to the bare
client's (goal >= 0.95), and the fixed cost before the first call (from the process's start to
the first request the server sees, Python's own start-up included) and after the last answer.
Children write bytecode (``PYTHONDONTWRITEBYTECODE`` is dropped) and a warm-up round runs
first, as on an installed copy.

``--baseline-src DIR`` adds a fourth side, ``baseline``: the same ``ragmeter generate`` run
from another tree's ``src`` (e.g. ``git archive main src | tar -x -C /tmp/main``, then
``--baseline-src /tmp/main/src``), interleaved in the same rounds.

Usage: python benchmarks/bench_runner.py [--requests 640] [--latency 0.2]
       python benchmarks/bench_runner.py --whole [--rounds 5] [--concurrency 32]
                                         [--baseline-src DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "tests.servers.scripted_openai",
                             "--latency", str(latency)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.kill()
        raise RuntimeError(f"server did not start: {line!r}")
    return proc, f"http://127.0.0.1:{int(line.split()[1])}/v1"


def server_connections(url: str) -> int:
    """Connections the server has accepted so far, this query's own included (so a
    difference of two readings counts one query connection too much)."""
    with urllib.request.urlopen(url.replace("/v1", "/v1/stats")) as reply:
        return int(json.loads(reply.read())["connections"])


def prompts(tag: str, n: int) -> list[str]:
    return [f"{tag} question {i}: what is the capital of country {i}?" for i in range(n)]


def bench_bare(url: str, texts: list[str], concurrency: int) -> tuple[float, float, int]:
    import httpx
    try:
        import openai
    except ImportError:
        sys.exit("bench_runner: the baseline needs the openai package: "
                 "pip install -e '.[all,test]'")

    async def main() -> None:
        client = openai.AsyncOpenAI(
            base_url=url, api_key="unused", max_retries=0,
            http_client=httpx.AsyncClient(limits=httpx.Limits(
                max_connections=concurrency, max_keepalive_connections=concurrency)))
        sem = asyncio.Semaphore(concurrency)

        async def one(text: str) -> None:
            async with sem:
                reply = await client.chat.completions.create(
                    model="scripted", messages=[{"role": "user", "content": text}],
                    temperature=0)
                assert reply.choices[0].message.content

        await asyncio.gather(*(one(t) for t in texts))
        await client.close()

    before = server_connections(url)
    cpu, wall = time.process_time(), time.perf_counter()
    asyncio.run(main())
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, cpu, server_connections(url) - before - 1


def bench_ragmeter(url: str, texts: list[str], concurrency: int,
                   store_dir: Path) -> tuple[float, float, int]:
    from ragmeter.backends._registry import create_backend
    from ragmeter.backends._types import Request
    from ragmeter.runner._run import RunnerConfig, run_requests
    from ragmeter.runner._store import Store

    requests = [Request.chat(f"q{i}", [{"role": "user", "content": t}],
                             params={"temperature": 0}) for i, t in enumerate(texts)]
    backend = create_backend("openai", model="scripted", base_url=url,
                             max_connections=concurrency, timeout_s=60)
    store = Store(store_dir / f"bench-{concurrency}.sqlite")
    config = RunnerConfig(concurrency=concurrency, progress=False, description="bench")
    before = server_connections(url)
    cpu, wall = time.process_time(), time.perf_counter()
    outcomes = run_requests(requests, backend, store, config)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert all(o.ok and not o.cached for o in outcomes), "benchmark calls must all succeed"
    store.close()
    return wall, cpu, server_connections(url) - before - 1


BARE_SCRIPT = r"""
import asyncio, json, sys
import httpx, openai
url, concurrency, path, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
with open(path, encoding="utf-8") as fh:
    rows = [json.loads(line) for line in fh if line.strip()]

async def main():
    client = openai.AsyncOpenAI(
        base_url=url, api_key="unused", max_retries=0,
        http_client=httpx.AsyncClient(limits=httpx.Limits(
            max_connections=concurrency, max_keepalive_connections=concurrency)))
    sem = asyncio.Semaphore(concurrency)

    async def one(row):
        async with sem:
            reply = await client.chat.completions.create(
                model="scripted", messages=[{"role": "user", "content": row["prompt"]}],
                **row["params"])
            return {"id": row["id"], "text": reply.choices[0].message.content}

    answers = await asyncio.gather(*(one(row) for row in rows))
    await client.close()
    return answers

answers = asyncio.run(main())
with open(out, "w", encoding="utf-8") as fh:
    for answer in answers:
        fh.write(json.dumps(answer) + "\n")
"""


# The floor: the same job with nothing but the standard library (asyncio streams, hand-written
# HTTP/1.1 with keep-alive, one connection per concurrent request), importing sqlite3 as the
# store would.  Its fixed cost is what Python, asyncio and sqlite3 cost before any first call.
FLOOR_SCRIPT = r"""
import asyncio, json, sqlite3, sys
url, concurrency, path, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
host, _, rest = url.split("//", 1)[1].partition("/")
hostname, port = host.split(":")
with open(path, encoding="utf-8") as fh:
    rows = [json.loads(line) for line in fh if line.strip()]

async def worker(queue, answers):
    reader, writer = await asyncio.open_connection(hostname, int(port))
    while not queue.empty():
        row = queue.get_nowait()
        body = json.dumps({"model": "scripted", "messages": [
            {"role": "user", "content": row["prompt"]}], **row["params"]}).encode()
        writer.write(f"POST /{rest}/chat/completions HTTP/1.1\r\nHost: {host}\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                     f"\r\n".encode() + body)
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        reply = json.loads(await reader.readexactly(length))
        answers[row["id"]] = reply["choices"][0]["message"]["content"]
    writer.close()

async def main():
    queue, answers = asyncio.Queue(), {}
    for row in rows:
        queue.put_nowait(row)
    await asyncio.gather(*(worker(queue, answers) for _ in range(min(concurrency, len(rows)))))
    return answers

answers = asyncio.run(main())
with open(out, "w", encoding="utf-8") as fh:
    for row in rows:
        fh.write(json.dumps({"id": row["id"], "text": answers[row["id"]]}) + "\n")
"""


def _post(url: str, path: str) -> dict[str, object]:
    request = urllib.request.Request(url.replace("/v1", path), data=b"", method="POST")
    with urllib.request.urlopen(request) as reply:
        return dict(json.loads(reply.read()))


def _stats(url: str) -> dict[str, object]:
    with urllib.request.urlopen(url.replace("/v1", "/v1/stats")) as reply:
        return dict(json.loads(reply.read()))


def whole_process(side: str, url: str, requests_path: Path, concurrency: int,
                  tmp: Path, src: Path | None = None) -> tuple[float, float, float]:
    """(wall s, s before the first call, s after the last call) of one whole process
    (``src``: the ``src`` folder ragmeter runs from; this checkout's by default)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(src or REPO / "src")
    home = Path(tempfile.mkdtemp(dir=tmp))
    env["RAGMETER_HOME"] = str(home)
    out = home / "out.jsonl"
    if side in ("bare", "floor"):
        script = BARE_SCRIPT if side == "bare" else FLOOR_SCRIPT
        cmd = [sys.executable, "-c", script, url, str(concurrency), str(requests_path),
               str(out)]
    else:
        cmd = [sys.executable, "-m", "ragmeter", "generate", str(requests_path), "--out",
               str(out), "--backend", "openai", "--base-url", url, "--model", "scripted",
               "--concurrency", str(concurrency)]
    _post(url, "/v1/reset")
    start = time.time()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    end = time.time()
    if done.returncode != 0:
        raise RuntimeError(f"{side} failed: {done.stderr[-2000:]}")
    stats = _stats(url)
    lines = out.read_text(encoding="utf-8").count("\n")
    expected = requests_path.read_text(encoding="utf-8").count("\n")
    if lines != expected or stats["calls"] != expected:
        raise RuntimeError(f"{side}: {lines} answers and {stats['calls']} calls for "
                           f"{expected} requests")
    first, last = float(stats["first_call_at"]), float(stats["last_call_at"])  # type: ignore[arg-type]
    return end - start, first - start, end - last


def bench_whole(url: str, args: argparse.Namespace) -> None:
    import statistics

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        requests_path = tmp / "requests.jsonl"
        requests_path.write_text("".join(
            json.dumps({"id": f"q{i}", "prompt": text, "params": {"temperature": 0}}) + "\n"
            for i, text in enumerate(prompts("whole", args.requests))), encoding="utf-8")
        for conc in args.concurrency:
            sides: tuple[str, ...] = ("bare", "ragmeter", "floor")
            srcs = {"baseline": Path(args.baseline_src)} if args.baseline_src else {}
            sides += tuple(srcs)
            for side in sides:  # warm-up: bytecode, page cache
                whole_process(side, url, requests_path, conc, tmp, srcs.get(side))
            runs: dict[str, list[tuple[float, float, float]]] = {side: [] for side in sides}
            loads = []
            for _ in range(args.rounds):
                for side in sides:
                    runs[side].append(whole_process(side, url, requests_path, conc, tmp,
                                                    srcs.get(side)))
                loads.append(os.getloadavg()[0])
            bound = args.requests * args.latency / conc
            print(f"{args.requests} requests, latency {args.latency * 1000:.0f} ms, "
                  f"concurrency {conc}, whole processes, {args.rounds} rounds interleaved "
                  f"(medians), load average {min(loads):.1f}-{max(loads):.1f}")
            print(f"{'client':<10}{'wall s':>9}{'bound s':>9}{'efficiency':>12}{'vs bare':>9}"
                  f"{'before 1st call s':>19}{'after last s':>14}")
            eff: dict[str, float] = {}
            for side, rows in runs.items():
                wall = statistics.median(r[0] for r in rows)
                before = statistics.median(r[1] for r in rows)
                after = statistics.median(r[2] for r in rows)
                eff[side] = bound / wall
                rel = eff[side] / eff["bare"]
                print(f"{side:<10}{wall:>9.2f}{bound:>9.2f}{eff[side]:>12.3f}{rel:>9.3f}"
                      f"{before:>19.3f}{after:>14.3f}")
            print("efficiency: bound / wall (1.0 = the physical limit); vs bare: ragmeter's "
                  "efficiency / the bare client's (goal >= 0.95); floor: the same job with the "
                  "standard library alone (asyncio streams, sqlite3 imported): what Python "
                  "itself costs before a first call.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=640)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=None)
    parser.add_argument("--whole", action="store_true",
                        help="whole processes: ragmeter generate against a bare script")
    parser.add_argument("--rounds", type=int, default=5, help="--whole: rounds (default 5)")
    parser.add_argument("--baseline-src", default=None, metavar="DIR",
                        help="--whole: also run ragmeter from this src folder (side 'baseline')")
    args = parser.parse_args()
    if args.concurrency is None:
        args.concurrency = [32] if args.whole else [8, 32]
    server, url = start_server(args.latency)
    if args.whole:
        try:
            bench_whole(url, args)
        finally:
            server.terminate()
            server.wait(10)
        return
    try:
        with tempfile.TemporaryDirectory() as tmp:
            # Warm up imports and the server so that neither side pays them in its timing.
            bench_bare(url, prompts("warm-bare", 8), 8)
            bench_ragmeter(url, prompts("warm-rm", 8), 8, Path(tmp))
            print(f"{args.requests} requests, server latency {args.latency * 1000:.0f} ms, "
                  f"{os.cpu_count()} CPU cores (server and client share them)")
            print(f"{'client':<10}{'conc':>5}{'wall s':>9}{'bound s':>9}{'bound/wall':>11}"
                  f"{'vs bare':>9}{'conns':>7}{'CPU ms/req':>12}")
            for conc in args.concurrency:
                bound = args.requests * args.latency / conc
                bare = bench_bare(url, prompts(f"bare-{conc}", args.requests), conc)
                ours = bench_ragmeter(url, prompts(f"rm-{conc}", args.requests), conc,
                                      Path(tmp))
                for name, (wall, cpu, conns) in (("bare", bare), ("ragmeter", ours)):
                    rel = f"{bare[0] / wall:.3f}" if name == "ragmeter" else "1.000"
                    print(f"{name:<10}{conc:>5}{wall:>9.2f}{bound:>9.2f}{bound / wall:>11.3f}"
                          f"{rel:>9}{conns:>7}{cpu / args.requests * 1000:>12.2f}")
            print("bound/wall: 1.0 is the ideal; vs bare: bare wall / ragmeter wall "
                  "(1.0 = as fast as the bare client, goal >= 0.95).")
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
