"""The local model's cold first load (the one-time GGUF conversion) as whole processes (issue 14).

Each measurement is a new Python process with a fresh ``RAGMETER_HOME`` (nothing converted):
``LocalBackend().load()``, which converts the default GGUF into the cache
and then loads the converted copy.  Timed from outside with ``/usr/bin/time`` (wall seconds and
peak RSS, start-up and imports included); the process also reports its load seconds.
``--baseline SRC`` runs the same process with another checkout's sources (e.g. the
transformers conversion: ``--baseline /path/to/old/src``), round by round interleaved with
this checkout, so a busy machine slows both alike.  After the rounds, the converted folders of
both sides are compared file by file (model.safetensors, tokenizer.json, chat_template.jinja
must be byte-identical).  The 1-minute load average is printed beside every timing.

    python benchmarks/bench_convert.py [--rounds 3] [--baseline SRC]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "src"

COLD_SCRIPT = r"""
import time
t0 = time.perf_counter()
from ragmeter.backends._local._backend import LocalBackend
backend = LocalBackend()  # auto: the numpy runtime (the transformers one on old checkouts)
backend.load()
print(f"load_s={time.perf_counter() - t0:.3f} runtime={type(backend._runtime).__name__}")
"""
SAME_FILES = ("model.safetensors", "tokenizer.json", "chat_template.jinja")


def run(src: Path, home: Path) -> tuple[float, float, str, float]:
    """(wall s, peak RSS MiB, stdout, load average) of one cold load."""
    env = dict(os.environ, PYTHONPATH=str(src), RAGMETER_HOME=str(home))
    cmd = ["/usr/bin/time", "-f", "TIME %e %M", sys.executable, "-c", COLD_SCRIPT]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {done.stderr[-3000:]}")
    line = [x for x in done.stderr.splitlines() if x.startswith("TIME ")][-1]
    wall, kib = line.split()[1:3]
    return float(wall), int(kib) / 1024.0, done.stdout.strip(), os.getloadavg()[0]


def _digests(home: Path) -> dict[str, str]:
    folders = [p for p in (home / "models").iterdir() if p.is_dir()]
    if len(folders) != 1:
        raise SystemExit(f"expected one converted folder in {home / 'models'}, got {folders}")
    return {name: hashlib.sha256((folders[0] / name).read_bytes()).hexdigest()
            for name in SAME_FILES}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another checkout's src folder to compare with")
    args = parser.parse_args()
    sides = {"this": HERE}
    if args.baseline is not None:
        sides["baseline"] = args.baseline.resolve()
    rows: dict[str, list[tuple[float, float, float]]] = {name: [] for name in sides}
    last_home: dict[str, Path] = {}
    for r in range(args.rounds):
        for name, src in sides.items():
            home = Path(tempfile.mkdtemp(prefix=f"ragmeter-bench-convert-{name}-"))
            wall, mib, out, la = run(src, home)
            rows[name].append((wall, mib, la))
            print(f"round {r + 1} {name:>9}: cold first load {wall:6.2f} s, peak RSS "
                  f"{mib:6.0f} MiB  ({out})  [load avg {la:.1f}]", flush=True)
            if name in last_home:
                shutil.rmtree(last_home[name], ignore_errors=True)
            last_home[name] = home
    print("medians:")
    for name, got in rows.items():
        print(f"  {name:>9}: {statistics.median(g[0] for g in got):6.2f} s, "
              f"{statistics.median(g[1] for g in got):6.0f} MiB "
              f"[load avg {statistics.median(g[2] for g in got):.1f}]")
    if len(sides) == 2:
        this, base = (_digests(last_home[n]) for n in sides)
        for file in SAME_FILES:
            print(f"  {file}: {'byte-identical' if this[file] == base[file] else 'DIFFERENT'}")
    for home in last_home.values():
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
