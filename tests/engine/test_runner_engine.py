"""The runner's engine path without Ray: an in-process engine that yields results one by one
shows that the driver stores each as it arrives, keeps the store's claims (a key another live
run holds is not sent; a dead run's claim is taken over at once) and stops early when told."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from ragmeter.backends._types import BaseBackend, Request, Response, Usage
from ragmeter.errors import ConfigError
from ragmeter.runner._run import Outcome, RunnerConfig, RunStats, run_requests
from ragmeter.runner._store import Store


class EchoBackend(BaseBackend):
    name = "echo"

    def identity(self) -> dict[str, Any]:
        return {"backend": "echo", "model": "e1"}

    async def complete(self, request: Request) -> Response:
        raise AssertionError("the driver must not call the backend itself here")

    async def aclose(self) -> None:
        return None


class ListEngine:
    """Answers in reverse order, one at a time; records what it was sent and what the store
    held when each result was yielded (to show results are stored as they arrive)."""

    name = "list"

    def __init__(self, store: Store | None = None, choice_method: str | None = None) -> None:
        self.sent: list[str] = []
        self.stored_when_yielding: list[int] = []
        self.store = store
        self.choice_method = choice_method
        self.closed = False

    def run(self, todo: Mapping[str, Request], config: RunnerConfig,
            identity: Mapping[str, Any]) -> Iterator[tuple[str, Outcome]]:
        try:
            for key, request in reversed(list(todo.items())):
                self.sent.append(request.id)
                if self.store is not None:
                    self.stored_when_yielding.append(len(self.store.keys()))
                response = Response(text=f"answer {request.id}", usage=Usage(2, 1),
                                    choice_probs={"yes": 1.0} if request.choices else None,
                                    choice_method=self.choice_method if request.choices else None)
                yield key, Outcome(request, "ok", response=response, attempts=1, key=key)
        finally:
            self.closed = True


def _reqs(n: int, choices: tuple[str, ...] | None = None) -> list[Request]:
    return [Request.chat(f"q{i}", [{"role": "user", "content": f"question {i}"}],
                         choices=choices) for i in range(n)]


def test_results_stored_as_they_arrive_in_input_order(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite")
    engine = ListEngine(store)
    stats = RunStats()
    outcomes = run_requests(_reqs(5), EchoBackend(), store,
                            RunnerConfig(progress=False, engine=engine), stats)
    assert [o.request.id for o in outcomes] == [f"q{i}" for i in range(5)]
    assert [o.response.text for o in outcomes] == [f"answer q{i}" for i in range(5)]
    assert engine.stored_when_yielding == [0, 1, 2, 3, 4]  # each stored before the next
    assert (stats.calls, stats.ok, stats.prompt_tokens) == (5, 5, 10)
    again = ListEngine(store)
    run_requests(_reqs(5), EchoBackend(), store, RunnerConfig(progress=False, engine=again))
    assert again.sent == []  # all served by the driver from the store


def test_a_key_held_by_another_live_run_is_not_sent(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite")
    reqs = _reqs(3)
    identity = EchoBackend().identity()
    held = reqs[1].cache_key(identity)
    other = f"{socket.gethostname()}:{os.getpid()}:other"  # alive: this very process
    assert store.claim(held, other, 30.0) is True

    def other_run_answers() -> None:
        time.sleep(0.3)
        Store(tmp_path / "s.sqlite").put(held, reqs[1], identity, Response(text="theirs"))

    threading.Thread(target=other_run_answers, daemon=True).start()
    engine = ListEngine()
    outcomes = run_requests(reqs, EchoBackend(), store,
                            RunnerConfig(progress=False, engine=engine, claim_poll_s=0.05))
    assert engine.sent == ["q2", "q0"]
    assert outcomes[1].response.text == "theirs" and outcomes[1].cached


def test_a_dead_runs_claim_is_taken_over_at_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite")
    reqs = _reqs(2)
    dead = f"{socket.gethostname()}:{2 ** 22 + 12345}:killed"  # beyond pid_max: no such process
    store.claim(reqs[0].cache_key(EchoBackend().identity()), dead, 300.0)
    engine = ListEngine()
    start = time.monotonic()
    run_requests(reqs, EchoBackend(), store, RunnerConfig(progress=False, engine=engine))
    assert sorted(engine.sent) == ["q0", "q1"] and time.monotonic() - start < 5


def test_a_reply_without_logprobs_stops_the_engine_run(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite")
    engine = ListEngine(choice_method="no_logprobs")
    with pytest.raises(ConfigError, match="without the logprobs"):
        run_requests(_reqs(4, choices=("yes", "no")), EchoBackend(), store,
                     RunnerConfig(progress=False, engine=engine))
    assert engine.sent == ["q3"] and engine.closed  # nothing more sent after the first
    assert len(store.keys()) == 1  # the paid reply is kept
