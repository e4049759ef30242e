"""Throughput of ``--engine ray`` with 1 and 2 workers on a local two-node Ray cluster.

    python benchmarks/bench_ray.py [--items 400] [--rounds 25000] [--batch-size 16]

Each item costs a fixed amount of CPU in the backend (``--rounds`` chained SHA-256 of 64 bytes,
deterministic, no sleeping), so the rows/s ratio measures how the work spreads over actors,
not how long a server waits.  The backend is :class:`CpuBackend` below, registered through
:func:`ragmeter.llm.registry.register_backend` like any plugin; each Ray actor builds it once.

Prints rows/s of one process (``--engine local``), of Ray with 1 worker and with 2 workers
(each on a fresh store, actor start-up included), and the 2-worker/1-worker ratio.  The
cluster has two nodes of one CPU each on 127.0.0.1 (the loopback settings of ../shared/RAY.md
are set here, for this benchmark only).  Needs ``pip install 'ragmeter[ray]'``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


class CpuBackend:
    """A deterministic backend whose every call costs ``rounds`` SHA-256 rounds of CPU."""

    name = "cpu-bench"

    def __init__(self, model: str | None = None, rounds: int = 25000) -> None:
        self.rounds = int(rounds)

    def identity(self) -> dict[str, Any]:
        return {"backend": self.name, "model": f"sha256x{self.rounds}"}

    async def complete(self, request: Any) -> Any:
        from ragmeter.llm.base import Response, Usage

        digest = request.messages[-1].content.encode("utf-8")
        for _ in range(self.rounds):
            digest = hashlib.sha256(digest).digest()
        return Response(text=digest.hex()[:16], usage=Usage(1, 1), finish_reason="stop")

    async def aclose(self) -> None:
        return None


class _FirstResultClock:
    """Wraps an engine to note when its first result streams back (actor start-up ends)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.name = engine.name
        self.first: float | None = None

    def run(self, todo: Any, config: Any, identity: Any) -> Any:
        for item in self.engine.run(todo, config, identity):
            if self.first is None:
                self.first = time.perf_counter()
            yield item


def _timed_run(n: int, rounds: int, engine: Any, store_dir: str
               ) -> tuple[float, float, list[str]]:
    """(seconds in all, seconds from the first result to the end, outputs)."""
    from ragmeter.llm.base import Request
    from ragmeter.llm.registry import backend_recipe
    from ragmeter.runner import RunnerConfig, run_requests
    from ragmeter.store import Store

    requests = [Request.chat(f"r{i}", [{"role": "user", "content": f"item {i}"}])
                for i in range(n)]
    backend = backend_recipe("cpu-bench", rounds=rounds).build()
    store = Store(Path(store_dir) / f"{time.monotonic_ns()}.sqlite")
    clock = _FirstResultClock(engine) if engine is not None else None
    start = time.perf_counter()
    outcomes = run_requests(requests, backend, store,
                            RunnerConfig(progress=False, record_run=False, engine=clock))
    end = time.perf_counter()
    assert all(o.ok for o in outcomes), [o.reason for o in outcomes if not o.ok][:3]
    steady = end - (clock.first if clock is not None and clock.first is not None else start)
    return end - start, steady, [o.response.text for o in outcomes if o.response is not None]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=25000, help="SHA-256 rounds per item")
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()

    # Test settings for a loopback-only machine (../shared/RAY.md), before Ray is imported.
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO)])
    sys.path[:0] = [str(REPO / "src"), str(REPO)]
    import ray
    from ray.cluster_utils import Cluster

    from ragmeter.engine import RayOptions, make_engine
    from ragmeter.llm.registry import backend_recipe, register_backend

    register_backend("cpu-bench", "benchmarks.bench_ray:CpuBackend",
                     description="CPU-bound deterministic benchmark backend")
    recipe = backend_recipe("cpu-bench", rounds=args.rounds)
    print(f"{args.items} items, {args.rounds} SHA-256 rounds each, batch {args.batch_size}; "
          f"{os.cpu_count()} cores on this machine, load average "
          f"{os.getloadavg()[0]:.1f} (other processes share the cores)", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        seconds, _, reference = _timed_run(args.items, args.rounds, None, tmp)
        print(f"one process (--engine local): {args.items / seconds:8.1f} rows/s "
              f"({seconds:.2f} s)", flush=True)
        cluster = Cluster(initialize_head=True,
                          head_node_args={"num_cpus": 1, "include_dashboard": False})
        cluster.add_node(num_cpus=1)
        ray.init(address=cluster.address)
        rates = {}
        try:
            for workers in (1, 2):
                engine = make_engine("ray", recipe, RayOptions(
                    address=cluster.address, workers=workers, batch_size=args.batch_size))
                seconds, steady, texts = _timed_run(args.items, args.rounds, engine, tmp)
                assert texts == reference, "ray results differ from one process"
                rates[workers] = (args.items / seconds, (args.items - args.batch_size) / steady)
                print(f"ray, {workers} worker{'s' if workers > 1 else ' '}:             "
                      f"{rates[workers][0]:8.1f} rows/s ({seconds:.2f} s with actor start-up; "
                      f"{rates[workers][1]:.1f} rows/s after the first batch); outputs "
                      "identical to one process", flush=True)
        finally:
            ray.shutdown()
            cluster.shutdown()
    print(f"2 workers / 1 worker: {rates[2][0] / rates[1][0]:.2f}x overall, "
          f"{rates[2][1] / rates[1][1]:.2f}x after the first batch")


if __name__ == "__main__":
    main()
