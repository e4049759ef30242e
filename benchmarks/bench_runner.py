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

Usage: python benchmarks/bench_runner.py [--requests 640] [--latency 0.2]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=640)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32])
    args = parser.parse_args()
    server, url = start_server(args.latency)
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
