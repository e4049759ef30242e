"""``--engine ray`` on a real two-node local Ray cluster (``ray.cluster_utils.Cluster``), against
the scripted OpenAI-compatible server on 127.0.0.1:

- the same outcomes as one process, cached items served by the driver and never sent;
- an actor process SIGKILLed mid-run: Ray restarts it, retries its batch, the run completes;
- the driver SIGKILLed mid-run: a second run calls the server for none of the stored items.

The loopback settings (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` etc., ../shared/RAY.md) are set
in the fixture only: they are test settings, not product settings.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip(
    "ray", reason="ray is not installed (pip install 'ragmeter[ray]'; CI gets it from the "
                  "test extra)")

from ragmeter.backends._registry import backend_recipe  # noqa: E402
from ragmeter.runner._run import Outcome, RunnerConfig, RunStats, run_requests  # noqa: E402
from ragmeter.runner._store import Store  # noqa: E402
from ragmeter.runner.engines import RayOptions, make_engine  # noqa: E402
from tests.engine.local_cluster import loopback_cluster  # noqa: E402
from tests.engine.ray_driver import requests  # noqa: E402

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SRC = Path(__import__("ragmeter").__file__).resolve().parents[1]
WORKER_TITLE = b"MapWorker(MapBatches(BackendWorker))"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A head node and one worker node, one CPU each, on 127.0.0.1; this process connected."""
    marker = uuid.uuid4().hex
    # RAGMETER_RAY_TEST lets a test find this cluster's workers
    with loopback_cluster(RAGMETER_RAY_TEST=marker) as c:
        c.marker = marker
        yield c


def _worker_pids(marker: str) -> list[int]:
    """Pids of this cluster's pool actors (found by process title and the fixture's marker)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            title = Path(f"/proc/{entry}/cmdline").read_bytes()
            env = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if WORKER_TITLE in title and f"RAGMETER_RAY_TEST={marker}".encode() in env:
            pids.append(int(entry))
    return pids


def _engine(cluster: Any, url: str, **options: Any) -> tuple[Any, Any]:
    recipe = backend_recipe("openai", model="scripted", base_url=url)
    options = {"workers": 2, "batch_size": 4, **options}
    return recipe, make_engine("ray", recipe, RayOptions(address=cluster.address, **options))


def _essence(outcomes: list[Outcome]) -> list[tuple[Any, ...]]:
    """What must be identical to one process (latency is measured, so it differs)."""
    return [(o.request.id, o.status, o.reason,
             o.response.text if o.response else None,
             o.response.choice_probs if o.response else None,
             o.response.usage if o.response else None) for o in outcomes]


def test_same_outcomes_as_one_process_and_cache_served_by_driver(
        cluster: Any, scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server()
    reqs = requests(24)
    reqs = reqs + reqs[:4]  # repeated requests are called once
    recipe, engine = _engine(cluster, server.url)
    one_process = run_requests(reqs, recipe.build(), None, RunnerConfig(progress=False))

    store = Store(tmp_path / "s.sqlite")
    run_requests(reqs[:8], recipe.build(), store, RunnerConfig(progress=False))  # pre-stored
    server.reset_counts()
    stats = RunStats()
    on_ray = run_requests(reqs, recipe.build(), store,
                          RunnerConfig(progress=False, engine=engine), stats)

    assert _essence(on_ray) == _essence(one_process)
    assert [o.request.id for o in on_ray] == [r.id for r in reqs]  # input order
    assert server.calls == 24 - 8  # only the misses went to the cluster, each once
    assert sorted(server.answered) == sorted(f"question {i}" for i in range(8, 24))
    assert [o.cached for o in on_ray[:8]] == [True] * 8 and not any(o.cached for o in on_ray[8:24])
    assert (stats.calls, stats.ok, stats.cached) == (16, 16, 12)  # cached: 8 + 4 repeats
    assert len(store.keys()) == 24  # every result stored on the driver
    engines = [json.loads(r["config_json"])["engine"] for r in store.runs()]
    assert engines == ["local", "ray"]  # the store's run log records the engine


def test_worker_killed_mid_run_still_completes(cluster: Any, scripted_server: Any,
                                                tmp_path: Path) -> None:
    server = scripted_server(latency=0.05)
    reqs = requests(40)
    recipe, engine = _engine(cluster, server.url, batch_size=2)
    killed: list[int] = []

    def kill_one_worker() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            if server.calls >= 6:
                pids = _worker_pids(cluster.marker)
                if pids:
                    os.kill(pids[0], signal.SIGKILL)
                    killed.append(pids[0])
                    return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_one_worker, daemon=True)
    killer.start()
    outcomes = run_requests(reqs, recipe.build(), Store(tmp_path / "s.sqlite"),
                            RunnerConfig(progress=False, engine=engine))
    killer.join(5)
    assert killed, "no pool actor was found to kill"
    assert server.calls < 40 + 40  # the lost batch is called again, not the whole run
    assert [o.status for o in outcomes] == ["ok"] * 40
    expected = run_requests(reqs, recipe.build(), None, RunnerConfig(progress=False))
    assert _essence(outcomes) == _essence(expected)


def test_driver_killed_resumes_without_repeating_stored_items(
        cluster: Any, scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server(latency=0.05)
    n = 60
    reqs = requests(n)
    store_path = tmp_path / "s.sqlite"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(REPO)])}
    driver = subprocess.Popen(
        [sys.executable, "-m", "tests.engine.ray_driver", cluster.address, server.url,
         str(store_path), str(n)], cwd=REPO, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if store_path.exists() and len(Store(store_path).keys()) >= 8:
                break
            assert driver.poll() is None, driver.stderr.read().decode()[-2000:]  # type: ignore[union-attr]
            time.sleep(0.05)
        driver.send_signal(signal.SIGKILL)
    finally:
        driver.kill()
        driver.wait(10)
    # The killed driver's actors die with its job; wait for them before counting calls.
    deadline = time.monotonic() + 30
    while _worker_pids(cluster.marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    stored = len(Store(store_path).keys())
    assert 8 <= stored < n, f"the driver was not killed mid-run ({stored} of {n} stored)"
    first_run_answers = list(server.answered)

    server.reset_counts()
    recipe, engine = _engine(cluster, server.url, batch_size=2)
    stats = RunStats()
    outcomes = run_requests(reqs, recipe.build(), Store(store_path),
                            RunnerConfig(progress=False, engine=engine), stats)
    assert [o.status for o in outcomes] == ["ok"] * n
    assert stats.cached == stored
    second = list(server.answered)
    assert len(set(second)) == n - stored  # every missing item called, no stored one
    # each once, but for the batch in flight on an actor that Ray finds briefly unreachable
    # and retries ("actor temporarily unavailable: Socket closed": 1 and 2 batches in two
    # whole-suite runs on a loaded 2-core machine): at most one batch of 2 per actor
    assert len(second) - len(set(second)) <= 2 * 2
    stored_texts = {f"question {o.request.id[1:]}" for o in outcomes if o.cached}
    assert not stored_texts & set(second)  # no stored item was called again
    assert stored_texts <= set(first_run_answers)
    expected = run_requests(reqs, recipe.build(), None, RunnerConfig(progress=False))
    assert _essence(outcomes) == _essence(expected)


def test_cli_engine_ray_same_rows_and_signature(cluster: Any, scripted_server: Any,
                                                tmp_path: Path, run_cli: Any) -> None:
    server = scripted_server(reply=lambda body: "Feedback: fine. [RESULT] 4")
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({
        "id": f"a{i}", "question": f"What is {i}?", "reference": f"{i}",
        "response": f"It is {i}."}) + "\n" for i in range(12)), encoding="utf-8")
    rows = {}
    for engine in ("local", "ray"):
        out = tmp_path / f"{engine}.jsonl"
        code, _, err = run_cli(
            "rubric", "judge", answers, "--out", out, "--scoring", "generate",
            "--backend", "openai", "--base-url", server.url, "--model", "judge-x",
            "--store", tmp_path / f"{engine}.sqlite",
            "--engine", engine, "--ray-address", cluster.address, "--ray-batch-size", "3",
            "--ray-workers", "1")
        assert code == 0, err
        rows[engine] = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows["ray"]) == 12
    assert rows["ray"] == rows["local"]
    runs = Path(os.environ["RAGMETER_HOME"]) / "runs"  # the isolated home of tests/conftest.py
    records = [json.loads(p.read_text()) for p in sorted(runs.glob("*.json"))]
    signatures = sorted(r["signature"] for r in records)
    assert signatures[1] == signatures[0] + "|engine:ray"


def test_each_actor_computes_with_the_cpus_it_reserved(cluster: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """--ray-cpus-per-worker 1: the backend is built with threads=1 and the actor's
    OMP/BLAS pools are limited to 1 (else every actor would use all of a node's cores)."""
    from ragmeter.backends import _registry as registry

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))  # restored after
    registry.register_backend("threads-probe", "tests.engine.ray_driver:ThreadsProbe")
    recipe = backend_recipe("threads-probe")
    engine = make_engine("ray", recipe, RayOptions(address=cluster.address, workers=2,
                                                   num_cpus=1, batch_size=2))
    outcomes = run_requests(requests(6), recipe.build(), None,
                            RunnerConfig(progress=False, engine=engine))
    texts = {o.response.text for o in outcomes if o.response is not None}
    assert len(texts) == 1, texts
    (text,) = texts
    assert text.startswith("threads=1 omp=1 blas="), text
    assert text.split("blas=")[1] in ("[]", "[1]"), text
