"""Time from ``ragmeter view`` to a usable page on a store of many run records (issue 17).

Writes N run records (default 1,000: alternately an RGB run of the built-in sample's shape
with 32 items and a multilingual score of the built-in sample with 36 items, each with real
result documents) into a fresh ``RAGMETER_HOME``, then starts ``python -m ragmeter view --port
0`` as a new process and measures, from the moment the process is spawned:

* ready: the server prints its URL (imports + bind);
* usable: the first ``GET /`` answered 200 with the run list (the whole list read through
  ``ragmeter.runs._records.list_runs``), and then a second ``GET /`` (served from the list kept in
  memory) and ``GET /runs/<newest>`` twice (the first renders the report's plots, the second is
  served from the rendered pages kept in memory), and ``GET /launch`` (the rgb run form).

``--compare SRC`` runs every round twice, interleaved (alternating which goes first), once
with this checkout's ``src`` and once with SRC (e.g. another worktree's ``src``) on
``PYTHONPATH``, and prints the ratios, so both sides are timed under the same load.

    python benchmarks/bench_view.py [--runs 1000] [--rounds 3] [--compare ../main/src]
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
    from ragmeter.io._samples import sample_path
    from ragmeter.multilingual._score import score_file
    from ragmeter.multilingual._scorer import MultilingualConfig
    from ragmeter.runs._records import record_run

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


def _round(home: Path, src: str | None = None) -> dict[str, float]:
    env = {**os.environ, "RAGMETER_HOME": str(home)}
    if src is not None:
        env["PYTHONPATH"] = src
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
        from ragmeter.runs._records import list_runs

        newest = list_runs(runs_dir_override=home / "runs")[-1].run_id
        t = time.perf_counter()
        _get(f"{url}/runs/{newest}")
        run_page = time.perf_counter() - t
        t = time.perf_counter()
        _get(f"{url}/runs/{newest}")
        run_page_again = time.perf_counter() - t
        t = time.perf_counter()
        status, _ = _get(f"{url}/launch")
        assert status == 200
        launch_form = time.perf_counter() - t
    finally:
        proc.terminate()
        proc.wait(10)
    return {"ready_s": ready, "usable_s": usable, "list_again_s": again, "run_page_s": run_page,
            "run_again_s": run_page_again, "launch_form_s": launch_form}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--compare", default=None, metavar="SRC",
                        help="another src folder to time interleaved with this checkout's")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="ragmeter-view-bench-"))
    os.environ["RAGMETER_HOME"] = str(home)
    t = time.perf_counter()
    _write_records(home, args.runs)
    size = sum(p.stat().st_size for p in (home / "runs").iterdir())
    print(f"wrote {args.runs} run records ({size / 1e6:.1f} MB) in "
          f"{time.perf_counter() - t:.1f} s; load average {os.getloadavg()[0]:.2f}")
    ours = str(Path(__file__).resolve().parents[1] / "src")
    sides = {"this": ours} if args.compare is None else {"this": ours, "other": args.compare}
    rounds: dict[str, list[dict[str, float]]] = {k: [] for k in sides}
    for k in range(args.rounds):
        order = list(sides) if k % 2 == 0 else list(reversed(list(sides)))
        for side in order:
            rounds[side].append(_round(home, sides[side]))
    for side, done in rounds.items():
        print(f"{side} ({sides[side]}):")
        for key in done[0]:
            values = [r[key] for r in done]
            print(f"  {key:>13}: median {statistics.median(values):.2f} s  "
                  f"(rounds: {', '.join(f'{v:.2f}' for v in values)})")
    if args.compare is not None:
        for key in rounds["this"][0]:
            ratios = [a[key] / b[key] for a, b in zip(rounds["this"], rounds["other"],
                                                      strict=True) if b[key] > 0]
            print(f"ratio this/other {key:>13}: median {statistics.median(ratios):.2f}")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
