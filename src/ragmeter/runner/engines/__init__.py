"""Engines: where the runner computes the calls that are not in the store.

The runner (:mod:`ragmeter.runner._run`) owns the store: it answers cached requests itself and hands
only the misses to an engine, then stores each result as it comes back.  Two engines:

- ``local`` (the default): asyncio calls from this process (``RunnerConfig.engine`` is None);
- ``ray``: the misses go to Ray Data ``map_batches`` over an actor pool; each actor builds the
  backend once from a :class:`~ragmeter.backends._registry.BackendRecipe` and completes a batch per
  call with the runner's own retry and limit policy (:mod:`ragmeter.runner.engines._ray`).

This module is light: nothing here imports Ray.  :func:`make_engine` imports it only for
``ray``, and a missing extra raises :class:`~ragmeter.errors.MissingDependencyError` with the
install line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragmeter.backends._types import Message, Request, Response
from ragmeter.errors import ConfigError, MissingDependencyError

if TYPE_CHECKING:
    from ragmeter.backends._registry import BackendRecipe
    from ragmeter.runner._types import Outcome

from ragmeter.runner._types import Engine

__all__ = ["ENGINE_NAMES", "Engine", "RayOptions", "make_engine", "request_to_wire",
           "request_from_wire", "outcome_to_wire", "outcome_from_wire"]

ENGINE_NAMES = ("local", "ray")


@dataclass(frozen=True)
class RayOptions:
    """Where and how the Ray engine runs (``--ray-address``, ``--ray-workers``,
    ``--ray-cpus-per-worker``, ``--ray-num-gpus``, ``--ray-batch-size``).  None of these enters
    a cache key.

    ``address``: an existing cluster (``HOST:PORT``, ``ray://HOST:PORT`` or ``auto``); None
    starts Ray on this machine (or joins the one ``RAY_ADDRESS`` names).  ``workers``: actors in
    the pool, each holding one backend.  ``num_cpus``: CPUs reserved per actor, and the
    intra-op threads it computes with (torch, BLAS, Arrow; see
    :func:`ragmeter.runner.engines._ray.limit_threads`).  ``num_gpus``: GPUs reserved per actor.
    ``batch_size``: requests per ``map_batches`` call.
    """

    address: str | None = None
    workers: int = 2
    num_gpus: float = 0.0
    num_cpus: int = 1
    batch_size: int = 16

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ConfigError(f"engine: --ray-workers must be at least 1, got {self.workers}.")
        if self.batch_size < 1:
            raise ConfigError(
                f"engine: --ray-batch-size must be at least 1, got {self.batch_size}.")
        if self.num_gpus < 0:
            raise ConfigError("engine: --ray-num-gpus must be 0 or more.")
        if self.num_cpus < 1 or int(self.num_cpus) != self.num_cpus:
            raise ConfigError("engine: --ray-cpus-per-worker must be a whole number, at least "
                              f"1, got {self.num_cpus}.")


def make_engine(name: str, recipe: BackendRecipe | None = None,
                options: RayOptions | None = None) -> Engine | None:
    """The engine called ``name``: None for ``local`` (the runner's own asyncio path), a
    :class:`~ragmeter.runner.engines._ray.RayEngine` for ``ray`` (needs the backend's recipe)."""
    if name == "local":
        return None
    if name != "ray":
        raise ConfigError(f"engine: unknown engine {name!r}. Known: {', '.join(ENGINE_NAMES)}.")
    if recipe is None:
        raise ConfigError("engine: --engine ray needs a backend recipe to build on each worker.")
    import importlib.util

    from ragmeter.runner.engines._ray import INSTALL, RayEngine

    if importlib.util.find_spec("ray") is None:  # fail before any work; import Ray only to run
        raise MissingDependencyError("Ray (for --engine ray)", INSTALL)
    return RayEngine(recipe, options or RayOptions())


# ---------------------------------------------------------------- the wire format
# Requests and outcomes cross to Ray workers as canonical JSON strings: plain Arrow string
# columns, and a round trip that keeps every float exactly (results identical to one process).


def request_to_wire(request: Request) -> dict[str, Any]:
    return {"id": request.id, "messages": [m.to_dict() for m in request.messages],
            "params": dict(request.params),
            "choices": list(request.choices) if request.choices is not None else None,
            "repeat": request.repeat}


def request_from_wire(doc: Mapping[str, Any]) -> Request:
    return Request(id=doc["id"], messages=tuple(Message(m["role"], m["content"])
                                                 for m in doc["messages"]),
                   params=dict(doc["params"]),
                   choices=tuple(doc["choices"]) if doc["choices"] is not None else None,
                   repeat=int(doc["repeat"]))


def outcome_to_wire(outcome: Outcome) -> dict[str, Any]:
    return {"status": outcome.status,
            "response": outcome.response.to_dict() if outcome.response is not None else None,
            "reason": outcome.reason, "detail": outcome.detail, "attempts": outcome.attempts}


def outcome_from_wire(doc: Mapping[str, Any], request: Request, key: str) -> Outcome:
    from ragmeter.runner._types import Outcome

    response = Response.from_dict(doc["response"]) if doc.get("response") is not None else None
    return Outcome(request, doc["status"], response=response, reason=doc.get("reason"),
                   detail=doc.get("detail"), attempts=int(doc.get("attempts") or 0), key=key)
