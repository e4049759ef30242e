"""Time from ``ragmeter view`` to a usable page on a store of many run records (issue 17).

Writes N run records (default 1,000: alternately an RGB run of the built-in sample's shape
with 32 items and a multilingual score of the built-in sample with 36 items, each with real
result documents) into a fresh ``RAGMETER_HOME``, then starts ``python -m ragmeter view --port
0`` as a new process and measures, from the moment the process is spawned:

* ready: the server prints its URL (imports + bind);
* usable: the first ``GET /`` answered 200 with the run list (the whole list read through
  ``ragmeter.results.list_runs``), and then a second ``GET /`` (served from the list kept in
  memory) and ``GET /runs/<newest>`` twice (the first renders the report's plots, the second is
  served from the rendered pages kept in memory).

    python benchmarks/bench_view.py [--runs 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path


def _write_records(home: Path, n: int) -> None:
    from ragmeter.results import record_run
    from ragmeter.samples import sample_path
    from ragmeter.suites.multilingual import MultilingualConfig, score_file

    path = sample_path("multilingual_answers.jsonl")
    ml = score_file(path, MultilingualConfig())
    ml_doc, ml_items = ml.to_json(), list(ml.iter_items())
    rgb_doc = {
        "schema_version": 1, "family": "rgb", "kind": "run", "signature": "family:rgb|bench",
        "model": {"backend": "openai", "model": "bench"}, "prompts": "p1", "judge": None,
        "tables": {"noise_robustness": {"rgb_en": {"0.0": 0.8, "0.4": 0.6}},
                   "rejection": {"rgb_en": {"rej": 0.2, "rej_judged": None}},
                   "integration": {}, "counterfactual": {}},
        "coverage": {"total": 32, "scored": 31, "unscored": 1, "reasons": {"http_500": 1}},
        "settings": [], "notes": []}
    rgb_items = [{"dataset": "rgb_en", "setting": f"noise{k % 3}", "id": k, "status": "ok",
                  "labels": [1], "correct": k % 2, "prediction": "Canberra " * 20}
                 for k in range(32)]
    runs = home / "runs"
    for i in range(n):
        if i % 2:
            record_run("multilingual", ml_doc, ml_items, inputs=[path], runs_dir_override=runs,
                       command=["ragmeter", "multilingual", "score"])
        else:
            record_run("rgb", rgb_doc, rgb_items, runs_dir_override=runs,
                       command=["ragmeter", "rgb", "run"], models=["bench"])


def _get(url: str) -> tuple[int, int]:
    with urllib.request.urlopen(url, timeout=120) as resp:
        return resp.status, len(resp.read())


def _round(home: Path) -> dict[str, float]:
    env = {**os.environ, "RAGMETER_HOME": str(home)}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "ragmeter", "view", "--port", "0"], env=env,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = ""
        while "serving on" not in line:
            line = proc.stderr.readline()
            if not line:
                raise RuntimeError("ragmeter view exited before serving")
        ready = time.perf_counter() - start
        url = line.split("serving on ", 1)[1].split()[0].rstrip("/")
        status, size = _get(url + "/")
        assert status == 200 and size > 10_000, (status, size)
        usable = time.perf_counter() - start
        t = time.perf_counter()
        _get(url + "/")
        again = time.perf_counter() - t
        from ragmeter.results import list_runs

        newest = list_runs(runs_dir_override=home / "runs")[-1].run_id
        t = time.perf_counter()
        _get(f"{url}/runs/{newest}")
        run_page = time.perf_counter() - t
        t = time.perf_counter()
        _get(f"{url}/runs/{newest}")
        run_page_again = time.perf_counter() - t
    finally:
        proc.terminate()
        proc.wait(10)
    return {"ready_s": ready, "usable_s": usable, "list_again_s": again, "run_page_s": run_page,
            "run_again_s": run_page_again}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="ragmeter-view-bench-"))
    os.environ["RAGMETER_HOME"] = str(home)
    t = time.perf_counter()
    _write_records(home, args.runs)
    size = sum(p.stat().st_size for p in (home / "runs").iterdir())
    print(f"wrote {args.runs} run records ({size / 1e6:.1f} MB) in "
          f"{time.perf_counter() - t:.1f} s")
    rounds = [_round(home) for _ in range(args.rounds)]
    for key in rounds[0]:
        values = [r[key] for r in rounds]
        print(f"{key:>13}: median {statistics.median(values):.2f} s  "
              f"(rounds: {', '.join(f'{v:.2f}' for v in values)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
