"""The code base stays lint-clean (ruff) and type-clean (mypy), as configured in pyproject.toml."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TIMEOUT_S = 90


def _run_tool(module: str, *args: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed in this environment "
                    f"(install the test extra: pip install -e '.[all,test]')")
    cmd = [sys.executable, "-m", module, *args]
    try:
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{' '.join(cmd[1:])} took longer than {TIMEOUT_S} s:\n"
                    f"{exc.stdout or ''}{exc.stderr or ''}")
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd[1:])} exited with {proc.returncode}:\n"
                    f"{proc.stdout}{proc.stderr}", pytrace=False)


@pytest.mark.slow
def test_ruff_clean() -> None:
    _run_tool("ruff", "check", "src", "tests", "benchmarks")


@pytest.mark.slow
def test_mypy_clean() -> None:
    _run_tool("mypy", "src")
