"""``multilingual score`` lets OpenBLAS's idle threads sleep at once (issue 26.3: their spin at
numpy's import cost 0.05-0.1 s of CPU a process); a user's own setting wins."""

from __future__ import annotations

import os
import subprocess
import sys

CHECK = """
import os, sys
from ragmeter.cli.multilingual import _idle_blas_threads
assert "numpy" not in sys.modules
_idle_blas_threads()
print(os.environ.get("OPENBLAS_THREAD_TIMEOUT"))
"""


def _run(env: dict[str, str]) -> str:
    out = subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True,
                         text=True, check=True)
    return out.stdout.strip()


def test_set_before_numpy_is_imported() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    assert _run(env) == "4"


def test_a_users_value_wins() -> None:
    assert _run({**os.environ, "OPENBLAS_THREAD_TIMEOUT": "20"}) == "20"


def test_nothing_once_numpy_is_loaded(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import numpy  # noqa: F401

    from ragmeter.cli.multilingual import _idle_blas_threads

    monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)
    _idle_blas_threads()
    assert "OPENBLAS_THREAD_TIMEOUT" not in os.environ
