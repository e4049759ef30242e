"""Throughput of ``--engine ray`` as workers and CPUs per worker grow, on a local Ray cluster.

    python benchmarks/bench_ray.py [--workload cpu|local|parquet] [--items N]
                                   [--configs 1x1,2x1,1x2] [--repeats 3]

A configuration ``WxC`` is W actors of C CPUs each (``--ray-workers W --ray-cpus-per-worker
C``): each actor reserves C CPUs and computes with C intra-op threads (torch, BLAS, Arrow), so
``2x1`` against ``1x1`` shows how throughput grows with workers, and ``1x2`` against ``2x1``
compares the same two CPUs spent as threads or as workers.  The configurations run in
interleaved rounds (the order rotates each round, so a busy machine slows all of them alike);
the load average is printed with every run, and the medians and their ratios at the end.

Workloads (each checks that every configuration gives the outputs of one process):

- ``cpu``: a backend whose every call costs ``--rounds`` chained SHA-256 rounds (pure
  Python, one thread whatever C is): the engine's own overhead and spread;
- ``local``: the local model (SmolLM2-135M) scoring yes/no choices on short claims, the
  calls of ``trace label --strategy choice``; each actor loads the model once.  Needs
  ``ragmeter[local]`` and the model (the first run converts it into ``$RAGMETER_HOME``);
- ``parquet``: ``multilingual score FOLDER --engine ray`` on ``--items`` generated rows in 8
  Parquet files (bench_scoring.py's rows), one row group of 5,000 rows per work item.
- ``trace-detector``: ``trace label --strategy detector --engine ray`` (the lexical
  detector) on ``--items`` RAGBench rows (every split under ``--data``, repeated with each
  copy's question marked so that no two rows share a stored label), ``--batch-size`` rows per
  chunk, each run on a fresh store; then the same rows again on the last run's store (every
  row served by the driver, nothing sent: ``stored``).

Rows/s are given in all (actor start-up included) and after the first result (the steady
rate, start-up excluded), with the cores that steady rate keeps busy at the CPU time one item
costs in one process: on a machine whose other processes leave this one less than a core per
worker, more workers cannot add throughput, and that number shows it.  The cluster is two nodes of 2 CPUs each on 127.0.0.1 (the
loopback settings of ../shared/RAY.md are set here, for this benchmark only); CPUs are what
Ray reserves, so on a machine with fewer free cores than reserved CPUs the actors share them.
Needs ``pip install 'ragmeter[ray]'``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragmeter.backends._types import BaseBackend

REPO = Path(__file__).resolve().parents[1]


class CpuBackend(BaseBackend):
    """A deterministic backend whose every call costs ``rounds`` SHA-256 rounds of CPU."""

    name = "cpu-bench"

    def __init__(self, model: str | None = None, rounds: int = 25000) -> None:
        self.rounds = int(rounds)

    def identity(self) -> dict[str, Any]:
        return {"backend": self.name, "model": f"sha256x{self.rounds}"}

    async def complete(self, request: Any) -> Any:
        from ragmeter.backends._types import Response, Usage

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


CPU_PER_ITEM = 0.0  # CPU seconds one item costs in one process (set by its run)
LAST_STORE: Path | None = None  # trace-detector: the store of the last run
CLAIMS = ("river", "capital", "museum", "king", "mountain", "treaty", "song", "team")


def _requests(workload: str, n: int) -> list[Any]:
    from ragmeter.backends._types import Request

    if workload == "cpu":
        return [Request.chat(f"r{i}", [{"role": "user", "content": f"item {i}"}])
                for i in range(n)]
    out = []
    for i in range(n):
        a, b = CLAIMS[i % 8], CLAIMS[(i * 3 + 1) % 8]
        text = (f"Document: The {a} number {i} lies near the old {b} of the north. "
                f"Claim: the {a} number {i} is near the {CLAIMS[(i + i // 8) % 8]}. "
                "Is the claim supported by the document? Answer yes or no.")
        out.append(Request.chat(f"r{i}", [{"role": "user", "content": text}],
                                choices=("yes", "no")))
    return out


def _model_run(workload: str, recipe: Any, n: int, engine: Any, store_dir: str,
               threads: int) -> tuple[float, float, list[Any]]:
    """(seconds in all, seconds from the first result to the end, outputs) of ``n``
    requests through the runner (``engine`` None: this process with ``threads`` threads)."""
    from ragmeter.runner._run import RunnerConfig, run_requests
    from ragmeter.runner._store import Store

    backend = recipe.build(threads=threads)
    if engine is None and hasattr(backend, "load"):
        backend.load()  # one process: time the calls (its CPU per item is the yardstick)
    store = Store(Path(store_dir) / f"{time.monotonic_ns()}.sqlite")
    clock = _FirstResultClock(engine) if engine is not None else None
    cpu = time.process_time()
    start = time.perf_counter()
    outcomes = run_requests(_requests(workload, n), backend, store,
                            RunnerConfig(progress=False, record_run=False, engine=clock,
                                         concurrency=1))
    end = time.perf_counter()
    global CPU_PER_ITEM
    if engine is None:
        CPU_PER_ITEM = (time.process_time() - cpu) / n
    assert all(o.ok for o in outcomes), [o.reason for o in outcomes if not o.ok][:3]
    first = clock.first if clock is not None and clock.first is not None else start
    outputs = [o.response.choice_probs if workload == "local" else o.response.text
               for o in outcomes if o.response is not None]
    return end - start, end - first, outputs


def _parquet_data(folder: Path, rows: int) -> Path:
    """``rows`` generated answer rows (bench_scoring.py's generator) in 8 Parquet files."""
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_scoring import generate

    jsonl = folder / "rows.jsonl"
    generate(jsonl, rows)
    table = pj.read_json(jsonl)
    data = folder / "parquet"
    data.mkdir()
    step = -(-table.num_rows // 8)
    for k in range(8):
        pq.write_table(table.slice(k * step, step), data / f"part-{k}.parquet",
                       row_group_size=5000)
    return data


def _parquet_run(data: Path, address: str | None, workers: int, cpus: int
                 ) -> tuple[float, float, Any]:
    """(seconds in all, seconds from the first streamed batch, summary) of one score."""
    import ragmeter.multilingual
    from ragmeter.multilingual import _distributed as distributed

    first: list[float] = []
    take = distributed._Feed.take

    def timed_take(self: Any, *args: Any) -> None:  # notes when the first batch arrives
        if not first:
            first.append(time.perf_counter())
        take(self, *args)

    distributed._Feed.take = timed_take  # type: ignore[method-assign]
    start = time.perf_counter()
    try:
        if address is None:
            result = ragmeter.multilingual.score(data.parent / "whole.parquet", keep_text=False)
        else:
            result = ragmeter.multilingual.score(
                data, engine="ray", ray_address=address, ray_workers=workers,
                ray_cpus_per_worker=cpus, keep_text=False)
    finally:
        distributed._Feed.take = take  # type: ignore[method-assign]
    end = time.perf_counter()
    summary = {k: v for k, v in result.summary.items() if k != "signature"}
    return end - start, end - (first[0] if first else start), summary


DETECTOR_COLUMNS = ("id", "question", "documents", "response", "documents_sentences",
                    "response_sentences")


def _detector_data(folder: Path, source: Path, rows: int) -> Path:
    """``rows`` RAGBench rows from every Parquet file under ``source`` as one Parquet file;
    the k-th repeat of a row has ``(copy k)`` after its question and id, so no two rows
    share a label key (a stored row would be served, not computed)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    base: list[dict[str, Any]] = []
    for f in sorted(source.rglob("*.parquet")):
        base += pq.read_table(f, columns=list(DETECTOR_COLUMNS)).to_pylist()
    if not base:
        raise SystemExit(f"no RAGBench Parquet files under {source} (--data)")
    out = []
    for i in range(rows):
        row, copy = dict(base[i % len(base)]), i // len(base)
        if copy:
            row["id"] = f"{row['id']} (copy {copy})"
            row["question"] = f"{row['question']} (copy {copy})"
        out.append(row)
    path = folder / "ragbench_rows.parquet"
    pq.write_table(pa.Table.from_pylist(out), path)
    return path


def _detector_run(data: Path, opts: Any, store: Path) -> tuple[float, float, Any]:
    """(seconds in all, seconds from the first labelled row, (rows, headline)) of one
    ``trace label``
    with the lexical detector: this process for ``opts`` None, else on Ray."""
    import ragmeter
    import ragmeter.trace
    from ragmeter.trace import _distributed as distributed

    first: list[float] = []
    on_ray = distributed.detector_rows_on_ray

    def timed(*args: Any, **kwargs: Any) -> Any:  # notes when the first row comes back
        for row in on_ray(*args, **kwargs):
            if not first:
                first.append(time.perf_counter())
            yield row

    backend = None
    if opts is not None:
        backend = ragmeter.backends.local(
            engine="ray", ray_address=opts.address, ray_workers=opts.workers,
            ray_cpus_per_worker=opts.num_cpus, ray_batch_size=opts.batch_size)
    distributed.detector_rows_on_ray = timed  # type: ignore[assignment]
    start = time.perf_counter()
    try:
        result = ragmeter.trace.label(data, strategy="detector", store=store,
                                      backend=backend)
    finally:
        distributed.detector_rows_on_ray = on_ray  # type: ignore[assignment]
    end = time.perf_counter()
    global LAST_RAY
    LAST_RAY = result.summary.get("ray")
    # the rows and the headline (metrics, CIs, coverage) are what must equal one process's
    return end - start, end - (first[0] if first else start), (result.items,
                                                               result.summary["headline"])


LAST_RAY: Any = None  # the last Ray run's counts (rows sent, served from the store)


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=("cpu", "local", "parquet", "trace-detector"),
                        default="cpu")
    parser.add_argument("--items", type=int, default=None,
                        help="requests (cpu: 400, local: 48) or rows (parquet: 200000, "
                             "trace-detector: 20000)")
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "ragbench",
                        help="trace-detector: the RAGBench Parquet files")
    parser.add_argument("--rounds", type=int, default=25000,
                        help="cpu: SHA-256 rounds per item")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="requests per batch sent to an actor (cpu 16, local 4), rows "
                             "per chunk (trace-detector 256)")
    parser.add_argument("--configs", default="1x1,2x1,1x2",
                        help="WORKERSxCPUS configurations, comma-separated")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds")
    args = parser.parse_args()
    items = args.items or {"cpu": 400, "local": 48, "parquet": 200000,
                           "trace-detector": 20000}[args.workload]
    batch = args.batch_size or {"cpu": 16, "local": 4, "parquet": 1,
                                "trace-detector": 256}[args.workload]
    configs = [tuple(int(x) for x in c.split("x")) for c in args.configs.split(",")]

    # Test settings for a loopback-only machine (../shared/RAY.md), before Ray is imported.
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO)])
    sys.path[:0] = [str(REPO / "src"), str(REPO)]
    import ray
    from ray.cluster_utils import Cluster

    from ragmeter.backends._registry import backend_recipe, register_backend
    from ragmeter.runner.engines import RayOptions, make_engine

    register_backend("cpu-bench", "benchmarks.bench_ray:CpuBackend",
                     description="CPU-bound deterministic benchmark backend")
    recipe = (backend_recipe("cpu-bench", rounds=args.rounds) if args.workload == "cpu"
              else backend_recipe("local"))
    rows_kind = args.workload in ("parquet", "trace-detector")
    print(f"workload {args.workload}: {items} {'rows' if rows_kind else 'items'}"
          f", batch {batch}; {os.cpu_count()} cores on this machine; load average {_load()} "
          "(1/5/15 min; other processes share the cores)", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        run: Callable[[RayOptions | None, int], tuple[float, float, Any]]
        if args.workload == "parquet":
            import pyarrow.parquet as pq

            data = _parquet_data(Path(tmp), items)
            pq.write_table(pq.ParquetDataset(data).read(), data.parent / "whole.parquet")

            def run(opts: RayOptions | None, threads: int) -> tuple[float, float, Any]:
                if opts is None:
                    return _parquet_run(data, None, 1, 1)
                return _parquet_run(data, opts.address, opts.workers, opts.num_cpus)
        elif args.workload == "trace-detector":
            rows_file = _detector_data(Path(tmp), args.data, items)

            def run(opts: RayOptions | None, threads: int) -> tuple[float, float, Any]:
                global LAST_STORE
                LAST_STORE = Path(tmp) / f"{time.monotonic_ns()}.sqlite"
                return _detector_run(rows_file, opts, LAST_STORE)
        else:
            def run(opts: RayOptions | None, threads: int) -> tuple[float, float, Any]:
                engine = make_engine("ray", recipe, opts) if opts is not None else None
                return _model_run(args.workload, recipe, items, engine, tmp, threads)

        cpu = time.process_time()
        seconds, _, reference = run(None, 1)
        cpu_per_item = CPU_PER_ITEM or (time.process_time() - cpu) / items
        print(f"one process{', 1 thread' if args.workload == 'local' else ''}: "
              f"{items / seconds:9.1f} rows/s ({seconds:.2f} s, {cpu_per_item * 1000:.2f} CPU "
              f"ms per {'row' if rows_kind else 'item'}); load {_load()}",
              flush=True)
        cluster = Cluster(initialize_head=True,
                          head_node_args={"num_cpus": 2, "include_dashboard": False})
        cluster.add_node(num_cpus=2)
        ray.init(address=cluster.address)
        rates: dict[tuple[int, ...], list[tuple[float, float]]] = {c: [] for c in configs}
        mismatches = 0
        try:
            for r in range(args.repeats):
                for workers, cpus in configs[r % len(configs):] + configs[:r % len(configs)]:
                    opts = RayOptions(address=cluster.address, workers=workers,
                                      num_cpus=cpus, batch_size=batch)
                    seconds, steady, outputs = run(opts, cpus)
                    same = outputs == reference
                    mismatches += not same
                    steady_items = items - (batch * 5000 if args.workload == "parquet"
                                            else batch)
                    rates[(workers, cpus)].append((items / seconds,
                                                   max(steady_items, 1) / steady))
                    print(f"round {r + 1} ray {workers}x{cpus}: {items / seconds:9.1f} rows/s "
                          f"({seconds:.2f} s), {rates[(workers, cpus)][-1][1]:.1f} rows/s "
                          f"after the first result "
                          f"(~{rates[(workers, cpus)][-1][1] * cpu_per_item:.2f} cores busy); "
                          "outputs "
                          f"{'identical to' if same else 'DIFFER from'} one process; "
                          f"load {_load()}", flush=True)
            if args.workload == "trace-detector" and LAST_STORE is not None:
                workers, cpus = configs[0]
                opts = RayOptions(address=cluster.address, workers=workers, num_cpus=cpus,
                                  batch_size=batch)
                seconds, _, outputs = _detector_run(rows_file, opts, LAST_STORE)
                same = outputs == reference
                mismatches += not same
                print(f"stored, ray {workers}x{cpus} on the last run's store: "
                      f"{items / seconds:9.1f} rows/s ({seconds:.2f} s; {LAST_RAY}); outputs "
                      f"{'identical to' if same else 'DIFFER from'} one process; "
                      f"load {_load()}", flush=True)
        finally:
            ray.shutdown()
            cluster.shutdown()
    med = {c: (statistics.median(x for x, _ in v), statistics.median(y for _, y in v))
           for c, v in rates.items()}
    for c, (a, b) in med.items():
        print(f"median {c[0]}x{c[1]}: {a:9.1f} rows/s in all, {b:9.1f} after the first result"
              f" (~{b * cpu_per_item:.2f} cores busy at one process's CPU per item)")
    pairs = [((2, 1), (1, 1)), ((1, 2), (1, 1)), ((2, 1), (1, 2))]
    for top, bottom in pairs:
        if top in med and bottom in med:
            print(f"{top[0]}x{top[1]} / {bottom[0]}x{bottom[1]}: "
                  f"{med[top][0] / med[bottom][0]:.2f}x in all, "
                  f"{med[top][1] / med[bottom][1]:.2f}x after the first result")
    print(f"runs whose outputs differ from one process: {mismatches}")


if __name__ == "__main__":
    main()
