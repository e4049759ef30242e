"""How fast the local model loads and how much memory it takes, as whole processes (issue 14).

Each measurement is a new Python process, timed from outside (start-up and imports included):

* ``load``: create ``LocalBackend()`` and load the default model from the converted cache
  (warm: the GGUF was converted before), then one greedy generation of up to 32 tokens; the
  process reports load seconds, the peak RSS (``VmHWM``) after the load and after the
  generation, and the generation seconds.  Targets: load < 3 s, peak RSS < 700 MiB.
* ``demo`` (``--demo``): ``ragmeter demo`` with a fresh ``RAGMETER_HOME`` (no converted model,
  no store: cold, the GGUF is converted on the way), then again in the same home (warm).
  Targets: cold < 60 s, warm < 5 s.

``--baseline SRC`` runs the same processes with another checkout's sources first on
``PYTHONPATH`` (e.g. the previous implementation: ``--baseline /path/to/old/src``), round by
round interleaved with this checkout, so a busy machine slows both alike; medians are
compared.  ``--forwards numpy,torch`` runs this checkout once per forward pass of the local
model (``RAGMETER_LOCAL_FORWARD``: ``numpy``, the default, ``torch`` or ``transformers``), the
same way interleaved.  The 1-minute load average is printed beside every timing.

    python benchmarks/bench_load.py [--rounds 3] [--baseline SRC] [--forwards numpy,torch]
                                    [--demo] [--threads N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "src"

LOAD_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
from ragmeter.backends._local._backend import LocalBackend
from ragmeter.backends._types import Request
threads = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] != "0" else None
backend = LocalBackend(threads=threads)  # auto: numpy, or $RAGMETER_LOCAL_FORWARD
backend.load()
t1 = time.perf_counter()

def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024.0

after_load = hwm()
request = Request.chat("g", [{"role": "user", "content": "What is the capital of France?"}],
                       params={"max_tokens": 32, "temperature": 0})
text = backend.complete_sync(request).text
t2 = time.perf_counter()
print(json.dumps({"load_s": t1 - t0, "gen_s": t2 - t1, "hwm_load_mib": after_load,
                  "hwm_gen_mib": hwm(), "runtime": type(backend._runtime).__name__,
                  "text": text}))
"""


def loadavg() -> float:
    return os.getloadavg()[0]


Side = tuple[Path, dict[str, str]]  # (src folder first on PYTHONPATH, extra environment)


def run(cmd: list[str], side: Side, home: Path, timeout: float = 1800
        ) -> tuple[float, str, float]:
    """Run ``cmd`` with the side's src first on PYTHONPATH and its environment; (wall
    seconds, stdout, load average)."""
    src, extra = side
    env = dict(os.environ, PYTHONPATH=str(src), RAGMETER_HOME=str(home), **extra)
    env.pop("CI", None)
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-3000:]}")
    return wall, done.stdout, loadavg()


def bench_load(args: argparse.Namespace, sides: dict[str, Side]) -> None:
    home = Path(tempfile.mkdtemp(prefix="ragmeter-bench-load-"))
    cmd = [sys.executable, "-c", LOAD_SCRIPT, str(args.threads or 0)]
    wall, _, la = run(cmd, (HERE, {}), home)  # converts the GGUF once (not counted)
    print(f"conversion + first load (this checkout): {wall:.1f} s  [load avg {la:.1f}]")
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    for r in range(args.rounds):
        for name, side in sides.items():
            wall, out, la = run(cmd, side, home)
            row = json.loads(out.strip().splitlines()[-1])
            row.update(wall_s=wall, loadavg=la)
            rows[name].append(row)
            print(f"round {r + 1} {name:>9}: process {wall:5.2f} s  load {row['load_s']:5.2f} s"
                  f"  peak RSS after load {row['hwm_load_mib']:6.0f} MiB, after generation "
                  f"{row['hwm_gen_mib']:6.0f} MiB  generation {row['gen_s']:5.2f} s  "
                  f"({row['runtime']})  [load avg {la:.1f}]", flush=True)
    print("medians (targets: load < 3 s, peak RSS < 700 MiB):")
    for name, got in rows.items():
        med = {k: statistics.median(x[k] for x in got)
               for k in ("wall_s", "load_s", "hwm_gen_mib", "gen_s", "loadavg")}
        print(f"  {name:>9}: process {med['wall_s']:.2f} s, load {med['load_s']:.2f} s, peak RSS "
              f"{med['hwm_gen_mib']:.0f} MiB, generation {med['gen_s']:.2f} s "
              f"[load avg {med['loadavg']:.1f}]")
    texts = {x["text"] for got in rows.values() for x in got}
    print(f"  same generated text in every process: {len(texts) == 1}")


def bench_demo(sides: dict[str, Side]) -> None:
    print("ragmeter demo (targets: cold < 60 s, warm < 5 s):")
    for name, side in sides.items():
        home = Path(tempfile.mkdtemp(prefix="ragmeter-bench-demo-"))
        cmd = [sys.executable, "-m", "ragmeter", "demo", "--out", str(home / "out")]
        cold, _, la_cold = run(cmd, side, home)
        warm, _, la_warm = run(cmd, side, home)
        print(f"  {name:>9}: cold {cold:6.1f} s [load avg {la_cold:.1f}]  warm {warm:5.1f} s "
              f"[load avg {la_warm:.1f}]", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another checkout's src folder to compare with")
    parser.add_argument("--demo", action="store_true", help="also time ragmeter demo")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--forwards", default=None,
                        help="comma-separated forward passes to compare (numpy,torch)")
    args = parser.parse_args()
    sides: dict[str, Side] = {"this": (HERE, {})}
    if args.forwards:
        sides = {f: (HERE, {"RAGMETER_LOCAL_FORWARD": f}) for f in args.forwards.split(",")}
    if args.baseline is not None:
        sides["baseline"] = (args.baseline.resolve(), {})
    bench_load(args, sides)
    if args.demo:
        bench_demo(sides)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
