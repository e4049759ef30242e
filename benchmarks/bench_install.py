"""Size of the core install: ``pip install .`` (no extras) into a fresh virtual environment.

    python benchmarks/bench_install.py [--keep DIR] [--target-mb 180]

Creates a venv in a temporary folder (or DIR), installs this checkout without extras, and
prints the size of its site-packages less the installer's own packages (pip, setuptools,
wheel, pkg_resources, _distutils_hack), with the ten largest distributions, against the
issue-14 target (core below 180 MB; DeepEval's whole install is 182 MB).  Needs the package
index (or a pip cache).  Sizes are bytes on disk of the files (``du --apparent-size``-like,
summed from ``os.stat``), in MB of 10^6 bytes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INSTALLER = ("pip", "setuptools", "wheel", "pkg-resources", "-distutils-hack")


def _size(path: Path) -> int:
    if path.is_file() or path.is_symlink():
        return path.lstat().st_size
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                continue
    return total


def _owner(entry: str) -> str:
    """A site-packages entry's distribution-ish name: ``numpy``, ``numpy.libs`` and
    ``numpy-2.1.0.dist-info`` all count as numpy."""
    name = entry.split("-")[0] if entry.endswith((".dist-info", ".egg-info")) else entry
    return name.split(".")[0].lower().replace("_", "-")


def measure(venv: Path) -> tuple[int, dict[str, int]]:
    (site,) = list((venv / "lib").glob("python*/site-packages"))
    by_owner: dict[str, int] = {}
    for entry in site.iterdir():
        owner = _owner(entry.name)
        if owner in INSTALLER or owner.startswith("__pycache__"):
            continue
        by_owner[owner] = by_owner.get(owner, 0) + _size(entry)
    return sum(by_owner.values()), by_owner


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--keep", type=Path, default=None, help="build the venv here and keep it")
    ap.add_argument("--target-mb", type=float, default=180.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        venv = args.keep or Path(tmp) / "core"
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet",
                        "--disable-pip-version-check", str(ROOT)], check=True)
        took = time.perf_counter() - start
        total, by_owner = measure(venv)
        frozen = subprocess.run([str(venv / "bin" / "pip"), "freeze", "--exclude-editable"],
                                capture_output=True, text=True, check=True).stdout.split()
    print(f"core install (pip install {ROOT.name}, no extras) in {took:.0f} s: "
          f"{len(frozen)} distributions")
    for owner, size in sorted(by_owner.items(), key=lambda kv: -kv[1])[:10]:
        print(f"  {owner:<24} {size / 1e6:7.1f} MB")
    verdict = "met" if total / 1e6 < args.target_mb else "MISSED"
    print(f"site-packages without pip/setuptools: {total / 1e6:.1f} MB "
          f"(target < {args.target_mb:.0f} MB: {verdict})")


if __name__ == "__main__":
    main()
