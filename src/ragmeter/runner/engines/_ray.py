"""The Ray engine: the runner's cache misses computed by Ray Data over an actor pool.

The driver (:mod:`ragmeter.runner._run`) decides what to send and writes what comes back; this
module only moves the work (Ray Data's ``map_batches`` with a callable class, as in
STYLE.md: no scheduler of our own):

- :class:`BackendWorker` builds the backend once in ``__init__`` from a picklable
  :class:`~ragmeter.backends._registry.BackendRecipe` (a local model or detector loads once per
  actor) and completes a batch in ``__call__`` with :func:`ragmeter.runner._run.arun_requests`
  (the runner's own retries, timeouts and limits; no store on the worker);
- :class:`RayEngine` turns the misses into a dataset, maps it over ``workers`` actors and yields
  each result as its batch streams back, so the driver stores it at once: a driver killed mid-run
  loses only the batches in flight, and a second run repeats none of the stored ones.

Ray Data restarts a dead actor and retries its batch (``max_restarts=-1`` and
``max_task_retries=-1`` are its defaults for actor pools), so a worker lost mid-run costs the
calls of that batch again, never an item.  ``rpm`` and ``tpm`` are divided among the workers.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ragmeter._util._record import replace
from ragmeter.backends._types import Request, canonical_json
from ragmeter.errors import ConfigError, MissingDependencyError
from ragmeter.runner.engines import (
    RayOptions,
    outcome_from_wire,
    outcome_to_wire,
    request_from_wire,
    request_to_wire,
)

if TYPE_CHECKING:
    from ragmeter.backends._registry import BackendRecipe
    from ragmeter.runner._types import Outcome, RunnerConfig

__all__ = ["RayEngine", "BackendWorker", "import_ray", "connect", "one_line", "limit_threads"]

INSTALL = "pip install 'ragmeter[ray]'"
WORKER_ERROR = "ragmeter worker on"  # marks the one line the driver shows of a worker failure


def import_ray() -> Any:
    """``ray`` with Ray Data, or :class:`MissingDependencyError` naming the extra."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as err:
        raise MissingDependencyError("Ray (for --engine ray)", INSTALL, str(err)) from None
    return ray


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def limit_threads(threads: int) -> None:
    """Make this process compute with ``threads`` intra-op threads, the CPUs its actor
    reserved (``--ray-cpus-per-worker``): the usual environment variables for libraries loaded
    later, and the thread pools of those already loaded (torch, the BLAS of numpy through
    threadpoolctl when it is installed, Arrow).  Without this, every actor on a node would use
    all of its cores, and N actors would not be N times one.

    With more than one thread, OpenMP's threads also wait passively (``OMP_WAIT_POLICY``,
    unless the node's environment sets it): spinning threads of actors that share cores with
    other processes made the local model 7-11 times slower at 2 threads than at 1 on a busy
    machine (docs/scale.md).  It takes effect when torch is first imported, which an actor
    does after this call."""
    import os
    import sys

    n = max(1, int(threads))
    for name in THREAD_VARIABLES:
        os.environ[name] = str(n)
    if n > 1:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        if torch.get_num_threads() != n:
            torch.set_num_threads(n)
    if "pyarrow" in sys.modules:
        sys.modules["pyarrow"].set_cpu_count(n)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # the variables above then cover BLAS libraries loaded from now on
        return
    threadpool_limits(limits=n)  # kept for the life of the actor (not used as a context)


class BackendWorker:
    """One actor of the pool: a backend built once, batches of requests completed per call.
    ``threads``: the CPUs the actor reserved; the backend computes with that many threads."""

    def __init__(self, recipe: BackendRecipe, config: RunnerConfig, threads: int = 1) -> None:
        self.config = config
        self.loop = asyncio.new_event_loop()  # one loop per actor: pooled connections live on
        limit_threads(threads)
        try:
            self.backend = recipe.build(threads=threads)
            self.identity = canonical_json(self.backend.identity())
            self.error = ""
        except Exception as exc:  # noqa: BLE001 - reported by __call__ as one line (below)
            import socket

            # Raised here, Ray would only say that the actor died; raised from __call__, the
            # message reaches the driver, which shows this line (e.g. a node without the model).
            self.error = (f"{WORKER_ERROR} {socket.gethostname()}: cannot build backend "
                          f"{recipe.name!r}: {type(exc).__name__}: {exc}").replace("\n", " ")

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, list[str]]:
        from ragmeter.runner._run import arun_requests

        if self.error:
            raise RuntimeError(self.error)
        requests = [request_from_wire(json.loads(doc)) for doc in batch["request"]]
        outcomes = self.loop.run_until_complete(
            arun_requests(requests, self.backend, None, self.config))
        return {"key": [str(k) for k in batch["key"]],
                "outcome": [canonical_json(outcome_to_wire(o)) for o in outcomes],
                "identity": [self.identity] * len(outcomes)}


class RayEngine:
    """Runs the misses on Ray (``--engine ray``); see the module docstring."""

    name = "ray"

    def __init__(self, recipe: BackendRecipe, options: RayOptions) -> None:
        self.recipe = recipe
        self.options = options

    def worker_config(self, config: RunnerConfig) -> RunnerConfig:
        """The runner settings a worker uses: no store, record, progress bar or engine of its
        own; rate limits shared out among the workers."""
        n = self.options.workers
        return replace(config, engine=None, progress=False, record_run=False, replay=False,
                       rpm=config.rpm / n if config.rpm else None,
                       tpm=config.tpm / n if config.tpm else None)

    def _connect(self, ray: Any) -> bool:
        """Join the cluster (or start Ray here); True when this call started the connection."""
        return connect(ray, self.options.address)

    def run(self, todo: Mapping[str, Request], config: RunnerConfig,
            identity: Mapping[str, Any]) -> Iterator[tuple[str, Outcome]]:
        if not todo:
            return
        ray = import_ray()
        started = self._connect(ray)
        try:
            yield from self._run(ray, todo, config, canonical_json(dict(identity)))
        finally:
            if started:
                ray.shutdown()

    def _run(self, ray: Any, todo: Mapping[str, Request], config: RunnerConfig,
             identity: str) -> Iterator[tuple[str, Outcome]]:
        opts = self.options
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False  # the runner's bar counts results as they arrive
        context.execution_options.preserve_order = False  # stream each batch as it finishes
        rows = [{"key": key, "request": canonical_json(request_to_wire(request))}
                for key, request in todo.items()]
        blocks = max(1, math.ceil(len(rows) / opts.batch_size))
        dataset = ray.data.from_items(rows, override_num_blocks=blocks).map_batches(
            BackendWorker,
            fn_constructor_args=(self.recipe, self.worker_config(config), opts.num_cpus),
            batch_size=opts.batch_size, compute=ray.data.ActorPoolStrategy(size=opts.workers),
            num_cpus=opts.num_cpus,
            num_gpus=opts.num_gpus or None, batch_format="numpy")
        try:
            yield from self._stream(dataset, todo, identity)
        except ray.exceptions.RayError as err:
            raise ConfigError(f"engine: the Ray run failed: {one_line(err)}. Fix: check that "
                              "every node has ragmeter, its extras and the model at the same "
                              "path (ray logs are under /tmp/ray/session_latest/logs).") from None

    def _stream(self, dataset: Any, todo: Mapping[str, Request],
                identity: str) -> Iterator[tuple[str, Outcome]]:
        for batch in dataset.iter_batches(batch_size=None, batch_format="numpy"):
            for key, doc, worker_identity in zip(batch["key"], batch["outcome"],
                                                 batch["identity"], strict=True):
                if worker_identity != identity:
                    raise ConfigError(
                        f"engine: a Ray worker built a backend with identity {worker_identity}, "
                        f"but this process has {identity}; the same request would have two "
                        "cache keys. Fix: give every node the same model file and library "
                        "versions.")
                key = str(key)
                yield key, outcome_from_wire(json.loads(doc), todo[key], key)


def connect(ray: Any, address: str | None) -> bool:
    """Join the cluster at ``address`` (or start Ray on this machine for None); True when this
    call started the connection (the caller then shuts it down)."""
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"configure_logging": True, "log_to_driver": False}
    if address:
        kwargs["address"] = address
    else:  # Ray on this machine for this run only: no dashboard to start and stop
        kwargs["include_dashboard"] = False
    try:
        ray.init(**kwargs)
    except ConnectionError as err:
        raise ConfigError(
            f"engine: cannot reach the Ray cluster at {address!r} ({err}). "
            "Fix: start it with `ray start --head` and pass the address it prints to "
            "--ray-address, or drop --ray-address to start Ray on this machine.") from None
    return True


def one_line(err: BaseException) -> str:
    """The line of a Ray error that says what went wrong: a worker's own report when there is
    one, else Ray's first line."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    for line in lines:
        if WORKER_ERROR in line:
            return line[line.index(WORKER_ERROR):]
    return lines[0] if lines else type(err).__name__
