"""The demo's model work, as whole ``ragmeter demo`` processes (issue 14, item 4).

The GGUF is converted once, into a shared folder; then, round by round and checkout by
checkout (interleaved, so a busy machine slows both alike), ``ragmeter demo`` runs in a fresh
``RAGMETER_HOME`` whose ``models/`` is that converted folder (a symbolic link) and whose store
is empty: *cold*, every RGB answer computed through the local model, the conversion left out;
then again in the same home: *warm*, every answer from the store.  Printed per process: wall
seconds, peak RSS (``/usr/bin/time`` when present) and the 1-minute load average; then the
medians.  Targets: cold < 60 s with the conversion (item 4), warm < 5 s.

    python benchmarks/bench_demo.py [--rounds 2] [--baseline OTHER/src] [--models DIR]
                                    [--with-conversion]

``--baseline SRC`` puts another checkout's ``src`` first on ``PYTHONPATH`` for the second side
(e.g. ``--baseline /work/main/src``).  ``--models DIR``: an already converted ``models``
folder to use instead of converting (the first run of this script prints where it put one).
``--with-conversion``: each cold demo starts from a home with nothing in it, so it converts the
GGUF itself (issue 26's cold demo: conversion and kernel build included).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "src"
TIME = shutil.which("time") or ("/usr/bin/time" if Path("/usr/bin/time").exists() else None)


def run_demo(src: Path, home: Path, out: Path
             ) -> tuple[float, float | None, float, float | None]:
    """One ``ragmeter demo`` process: (wall seconds, peak RSS MiB or None, load average, CPU
    seconds (user + system) or None)."""
    env = dict(os.environ, PYTHONPATH=str(src), RAGMETER_HOME=str(home))
    env.pop("CI", None)
    cmd = [sys.executable, "-m", "ragmeter", "demo", "--out", str(out)]
    rss_file = home / "rss.txt"
    if TIME is not None:
        cmd = [TIME, "-f", "%M %U %S", "-o", str(rss_file), *cmd]
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-3000:]}")
    rss = cpu = None
    if TIME is not None and rss_file.exists():
        kib, user, system = rss_file.read_text().split()[-3:]
        rss, cpu = int(kib) / 1024.0, float(user) + float(system)
    return wall, rss, os.getloadavg()[0], cpu


def converted_models(src: Path) -> Path:
    """Convert the default GGUF once (one model load) into a new home; its ``models``."""
    home = Path(tempfile.mkdtemp(prefix="ragmeter-bench-demo-models-"))
    env = dict(os.environ, PYTHONPATH=str(src), RAGMETER_HOME=str(home))
    code = "from ragmeter.backends._local._backend import LocalBackend; LocalBackend().load()"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    print(f"converted the model in {time.perf_counter() - start:.1f} s: {home / 'models'}")
    return home / "models"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another checkout's src folder to compare with")
    parser.add_argument("--models", type=Path, default=None,
                        help="an already converted models folder (else converted once here)")
    parser.add_argument("--with-conversion", action="store_true",
                        help="cold demos from an empty home: each converts the model itself")
    args = parser.parse_args()
    sides = {"this": HERE}
    if args.baseline is not None:
        sides["baseline"] = args.baseline.resolve()
    models = None
    if not args.with_conversion:
        models = args.models.resolve() if args.models else converted_models(HERE)
    rows: dict[str, list[tuple[float, float | None, float, float, float | None]]] = {
        n: [] for n in sides}
    for r in range(args.rounds):
        for name, src in sides.items():
            home = Path(tempfile.mkdtemp(prefix="ragmeter-bench-demo-"))
            if models is not None:
                (home / "models").symlink_to(models, target_is_directory=True)
            cold, rss, la_cold, cpu = run_demo(src, home, home / "out")
            warm, _, la_warm, _ = run_demo(src, home, home / "out")
            rows[name].append((cold, rss, warm, la_cold, cpu))
            print(f"round {r + 1} {name:>8}: cold {cold:6.1f} s (CPU "
                  f"{'?' if cpu is None else f'{cpu:.1f} s'}, peak RSS "
                  f"{'?' if rss is None else f'{rss:.0f} MiB'}) [load avg {la_cold:.1f}]  "
                  f"warm {warm:5.1f} s [load avg {la_warm:.1f}]", flush=True)
            shutil.rmtree(home, ignore_errors=True)
    print(f"medians (cold: {'empty home' if models is None else 'converted model'}, empty "
          "store; warm: every answer stored):")
    for name, got in rows.items():
        cpus = [g[4] for g in got if g[4] is not None]
        cpu = f"{statistics.median(cpus):.1f} s" if cpus else "?"
        print(f"  {name:>8}: cold {statistics.median(g[0] for g in got):.1f} s (CPU {cpu}), warm "
              f"{statistics.median(g[2] for g in got):.1f} s "
              f"[load avg {statistics.median(g[3] for g in got):.1f}]")
    if len(rows) == 2:
        this, base = (statistics.median(g[0] for g in got) for got in rows.values())
        print(f"  cold ratio baseline/this: {base / this:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
