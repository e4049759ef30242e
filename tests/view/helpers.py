"""Shared setup of the view tests: a store of run records, an endpoints file, a server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragmeter.view.app import ViewSettings
from ragmeter.view.security import Security
from ragmeter.view.server import ServerThread
from tests.reports import cases


def write_records(runs: Path) -> dict[str, str]:
    """Four run records (two comparable multilingual runs, an RGB run, a hostile one)."""
    a = cases.multilingual_record(runs, ci=True, paired=True)
    b = cases.multilingual_record(runs, baseline="retrieve")
    rgb = cases.family_record(runs, "rgb", cases.RGB_RUN, cases.RGB_ITEMS)
    hostile = cases.hostile_record(runs)
    return {"ml_a": a.run_id, "ml_b": b.run_id, "rgb": rgb.run_id, "hostile": hostile.run_id}


def write_endpoints(home: Path, url: str, name: str = "scripted") -> None:
    (home / "endpoints.toml").write_text(
        f'[endpoints.{name}]\nbase_url = "{url}"\nmodel = "scripted-model"\n'
        'api_key_env = "RAGMETER_TEST_SECRET_KEY"\n', encoding="utf-8")


def start_server(root: Path, *, token: str | None = None, host: str = "127.0.0.1",
                 data_dirs: list[Path] | None = None, max_jobs: int = 2) -> ServerThread:
    settings = ViewSettings(runs_dir=str(root / "runs"), store_path=str(root / "store.sqlite"),
                            data_dirs=data_dirs or [],
                            security=Security(host=host, port=0, token=token), list_ttl_s=0.0,
                            max_jobs=max_jobs)
    return ServerThread(settings).start()


def jobs_of(server: ServerThread) -> Any:
    """The app's :class:`~ragmeter.view.jobs.JobManager` (the Starlette app inside the
    security middleware keeps it in its state)."""
    return server.server.config.app.app.state.jobs
