"""The engine layer without a cluster: options, the install hint, no Ray import unless asked,
and the wire format's exact round trip (what makes Ray results identical to one process)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragmeter.backends._registry import backend_recipe, create_backend
from ragmeter.backends._types import Request, Response, Usage, canonical_json
from ragmeter.errors import ConfigError, MissingDependencyError
from ragmeter.runner import config_for, engine_for
from ragmeter.runner._run import Outcome, RunnerConfig
from ragmeter.runner.engines import (
    RayOptions,
    make_engine,
    outcome_from_wire,
    outcome_to_wire,
    request_from_wire,
    request_to_wire,
)

SRC = Path(__import__("ragmeter").__file__).resolve().parents[1]


def test_local_engine_is_the_runner_itself() -> None:
    assert make_engine("local") is None
    assert RunnerConfig().engine_name == "local"


@pytest.mark.parametrize("options, message", [
    ({"workers": 0}, "--ray-workers must be at least 1"),
    ({"batch_size": 0}, "--ray-batch-size must be at least 1"),
    ({"num_gpus": -1}, "--ray-num-gpus must be 0 or more"),
    ({"num_cpus": 0}, "--ray-cpus-per-worker must be a whole number, at least 1"),
    ({"num_cpus": 1.5}, "--ray-cpus-per-worker must be a whole number, at least 1"),
])
def test_bad_ray_options(options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        RayOptions(**options)


def test_unknown_engine() -> None:
    with pytest.raises(ConfigError, match="unknown engine 'spark'"):
        make_engine("spark")


def test_missing_ray_gives_the_install_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(MissingDependencyError, match=r"pip install 'ragmeter\[ray\]'"):
        make_engine("ray", backend_recipe("openai", model="m", base_url="http://127.0.0.1:9/v1"))


def test_missing_ray_on_the_cli_is_one_line(monkeypatch: pytest.MonkeyPatch, run_cli,
                                             tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    requests = tmp_path / "r.jsonl"
    requests.write_text('{"id": "a", "prompt": "hi"}\n', encoding="utf-8")
    code, _, err = run_cli("generate", requests, "--out", tmp_path / "o.jsonl", "--backend",
                           "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                           "--engine", "ray")
    assert code == 2
    assert "pip install 'ragmeter[ray]'" in err and "Traceback" not in err


def test_nothing_imports_ray_without_engine_ray() -> None:
    code = ("import sys\n"
            "from ragmeter.cli.backend_options import runner_context\n"
            "from ragmeter.runner._run import run_requests\n"
            "import ragmeter.runner.engines\n"
            "runner_context(backend='openai', model='m', base_url='http://127.0.0.1:9/v1')\n"
            "print('ray' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(SRC), "PATH": "",
                              "RAGMETER_HOME": os.environ["RAGMETER_HOME"]}, check=True)
    assert out.stdout.strip() == "False"


def test_recipe_builds_what_create_backend_builds() -> None:
    recipe = backend_recipe("openai", model="m", base_url="http://127.0.0.1:9/v1",
                            timeout_s=3.0)
    import pickle

    again = pickle.loads(pickle.dumps(recipe))  # what a Ray worker receives
    built = again.build()
    direct = create_backend("openai", model="m", base_url="http://127.0.0.1:9/v1", timeout_s=3.0)
    assert built.identity() == direct.identity()
    with pytest.raises(ConfigError, match="takes no URL"):
        backend_recipe("local", base_url="http://127.0.0.1:9/v1")


@pytest.mark.parametrize("request_", [
    Request.chat("q1", [{"role": "system", "content": "Be brief."},
                        {"role": "user", "content": "Où est Zürich? 日本"}],
                 params={"temperature": 0.7, "seed": 3, "stop": ["\n"]}, repeat=2),
    Request.chat("q2", [{"role": "user", "content": "yes or no?"}], choices=("yes", "no")),
])
def test_wire_round_trip_is_exact(request_: Request) -> None:
    again = request_from_wire(request_to_wire(request_))
    assert again == request_
    assert again.cache_key({"backend": "x"}) == request_.cache_key({"backend": "x"})
    response = Response(text="oui", usage=Usage(5, 1), latency_ms=12.345678901234,
                        choice_probs={"yes": 0.1 + 0.2, "no": 1 / 3}, finish_reason="stop",
                        choice_method="logprobs")
    for outcome in (Outcome(request_, "ok", response=response, attempts=2, key="k"),
                    Outcome(request_, "unscored", reason="http_500", detail="boom", attempts=6,
                            key="k")):
        import json

        wire = json.loads(canonical_json(outcome_to_wire(outcome)))
        assert outcome_from_wire(wire, request_, "k") == outcome


def test_backend_worker_completes_a_batch_with_the_runner_policy(scripted_server) -> None:
    """The actor's code without Ray: it builds its backend from the recipe, retries a 500 with
    the runner's policy, and returns wire outcomes the driver decodes back exactly."""
    import json

    from ragmeter.runner.engines._ray import BackendWorker
    from tests.servers.scripted_openai import Faults

    server = scripted_server(faults=Faults(rate_500=0.3, seed=1))
    recipe = backend_recipe("openai", model="scripted", base_url=server.url)
    reqs = [Request.chat(f"q{i}", [{"role": "user", "content": f"question {i}"}])
            for i in range(6)]
    identity = recipe.build().identity()
    keys = [r.cache_key(identity) for r in reqs]
    worker = BackendWorker(recipe, RunnerConfig(progress=False, record_run=False,
                                                backoff_base_s=0.001, max_retries=8))
    out = worker({"key": keys, "request": [canonical_json(request_to_wire(r)) for r in reqs]})
    assert out["key"] == keys
    assert set(out["identity"]) == {canonical_json(identity)}
    outcomes = [outcome_from_wire(json.loads(doc), r, k)
                for doc, r, k in zip(out["outcome"], reqs, keys, strict=True)]
    assert [o.response.text for o in outcomes if o.response] == [
        f"echo: question {i}" for i in range(6)]
    assert server.outcomes["500"] > 0 and sum(o.attempts for o in outcomes) == server.calls


def test_backend_values_carry_the_engine_and_never_the_key() -> None:
    """``ragmeter.backends`` values (the Python API's ``backend=``, and what the CLI flags
    build) carry the engine; the recipe shipped to Ray workers holds no API key."""
    import importlib.util
    import pickle

    import ragmeter.backends as backends

    value = backends.openai("m", base_url="http://127.0.0.1:9/v1", api_key="sk-not-shipped",
                            engine="ray", ray_workers=3, ray_batch_size=5,
                            ray_cpus_per_worker=2)
    assert "sk-not-shipped" not in repr(pickle.dumps(value.recipe()))
    assert value.instance()._api_key == "sk-not-shipped"  # the driver's own backend has it
    assert config_for(backends.openai("m", base_url="http://127.0.0.1:9/v1")).engine is None
    if importlib.util.find_spec("ray") is None:
        with pytest.raises(MissingDependencyError):
            config_for(value)
        return
    engine = config_for(value).engine
    assert (engine.name, engine.options.workers, engine.options.batch_size,
            engine.options.num_cpus) == ("ray", 3, 5, 2)
    from_cli = backends.from_options(engine="ray", ray_cpus_per_worker=4, backend="local")
    assert engine_for(from_cli).options.num_cpus == 4


def test_recipe_build_gives_threads_to_backends_that_take_them() -> None:
    """A Ray actor builds its backend with the CPUs it reserved as ``threads``: the local
    model takes them (unless the recipe names its own), a remote backend has no such
    argument and is built as before."""
    from ragmeter.backends._registry import backend_recipe

    local = backend_recipe("local")
    try:
        assert local.build(threads=1).threads == 1  # type: ignore[attr-defined]
        assert backend_recipe("local", threads=3).build(threads=1).threads == 3  # type: ignore[attr-defined]
    except MissingDependencyError:
        pass  # no local model here; the remote case below still runs
    remote = backend_recipe("openai", model="m", base_url="http://127.0.0.1:9/v1")
    assert remote.build(threads=1).identity() == remote.build().identity()


def test_limit_threads_sets_every_pool_it_knows() -> None:
    """In a fresh process (it changes process-wide settings): the environment variables,
    torch's threads and Arrow's CPU count follow the actor's CPUs."""
    code = ("import os, sys\n"
            "import pyarrow\n"
            "try:\n    import torch\nexcept ImportError:\n    torch = None\n"
            "from ragmeter.runner.engines._ray import limit_threads, THREAD_VARIABLES\n"
            "limit_threads(1)\n"
            "assert all(os.environ[v] == '1' for v in THREAD_VARIABLES)\n"
            "assert pyarrow.cpu_count() == 1\n"
            "assert torch is None or torch.get_num_threads() == 1\n"
            "print('ok', torch is not None)\n")
    pytest.importorskip("pyarrow")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("ok")


def test_a_worker_that_cannot_build_its_backend_reports_one_line() -> None:
    """On a node without the model (here: a target that does not exist) the actor does not die
    silently: its first batch raises the line the driver turns into a ConfigError."""
    from ragmeter.backends._registry import BackendRecipe
    from ragmeter.runner.engines._ray import BackendWorker, one_line

    recipe = BackendRecipe(name="local", target="ragmeter.backends._types:NoSuchBackend")
    worker = BackendWorker(recipe, RunnerConfig(progress=False))
    with pytest.raises(RuntimeError, match="cannot build backend 'local': AttributeError") as err:
        worker({"key": ["k"], "request": ["{}"]})
    ray_text = f"Traceback (most recent call last):\n  File x\nRuntimeError: {err.value}\n\nmore"
    assert one_line(RuntimeError(ray_text)).startswith("ragmeter worker on ")
    assert one_line(RuntimeError("The actor died.\nmore")) == "The actor died."
