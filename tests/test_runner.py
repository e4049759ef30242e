"""The runner with an in-test fake backend: order, retries, unscored reasons, cache, replay,
limits.  Real HTTP fault injection is in test_runner_faults.py."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmeter.backends._types import BaseBackend, Capabilities, Request, Response, Usage
from ragmeter.errors import BackendError, ConfigError, ReplayMissError
from ragmeter.runner._run import (
    RunnerConfig,
    RunStats,
    approx_tokens,
    estimate_requests,
    run_requests,
)
from ragmeter.runner._store import Store

FAST = dict(progress=False, backoff_base_s=0.001, backoff_max_s=0.01)


class FakeBackend(BaseBackend):
    """Answers ``"answer <id>"``; ``plan[id]`` lists what each attempt raises first."""

    name = "fake"

    def __init__(self, plan: dict[str, list[BaseException]] | None = None,
                 delay: float = 0.0) -> None:
        self.plan = {k: list(v) for k, v in (plan or {}).items()}
        self.delay = delay
        self.calls: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self.starts: list[float] = []

    def identity(self) -> dict[str, Any]:
        return {"backend": "fake", "model": "m1"}

    async def complete(self, request: Request) -> Response:
        self.calls[request.id] += 1
        self.starts.append(time.monotonic())
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            todo = self.plan.get(request.id)
            if todo:
                raise todo.pop(0)
            return Response(text=f"answer {request.id}", usage=Usage(3, 2), latency_ms=1.0)
        finally:
            self.in_flight -= 1

    async def aclose(self) -> None:
        pass


def reqs(n: int, prefix: str = "q") -> list[Request]:
    return [Request.chat(f"{prefix}{i}", [{"role": "user", "content": f"question {i}"}])
            for i in range(n)]


def err(reason: str, retryable: bool = True, retry_after: float | None = None) -> BackendError:
    return BackendError(reason, "scripted", retryable=retryable, retry_after=retry_after)


def test_order_is_input_order_and_all_ok(tmp_path):
    backend = FakeBackend(delay=0.001)
    requests = reqs(50)
    out = run_requests(requests, backend, Store(tmp_path / "s.sqlite"),
                       RunnerConfig(concurrency=7, **FAST))
    assert [o.request.id for o in out] == [r.id for r in requests]
    assert all(o.ok and o.response.text == f"answer {o.request.id}" for o in out)
    assert backend.max_in_flight <= 7


@pytest.mark.parametrize("failures, max_retries, status, reason, calls", [
    ([err("http_429")], 5, "ok", None, 2),
    ([err("http_500"), err("timeout"), err("bad_response")], 5, "ok", None, 4),
    ([err("http_500")] * 3, 2, "unscored", "http_500", 3),
    ([err("http_400", retryable=False)], 5, "unscored", "http_400", 1),
    ([err("connection")] * 10, 0, "unscored", "connection", 1),
])
def test_retries_then_success_or_unscored(failures, max_retries, status, reason, calls):
    backend = FakeBackend({"q0": failures})
    out = run_requests(reqs(1), backend, None, RunnerConfig(max_retries=max_retries, **FAST))
    assert out[0].status == status
    assert out[0].reason == reason
    assert backend.calls["q0"] == calls
    if status == "unscored":
        assert out[0].response is None and out[0].detail


def test_timeout_becomes_reason_timeout():
    backend = FakeBackend(delay=0.5)
    out = run_requests(reqs(1), backend, None,
                       RunnerConfig(timeout_s=0.02, max_retries=1, **FAST))
    assert (out[0].status, out[0].reason, backend.calls["q0"]) == ("unscored", "timeout", 2)


def test_an_in_process_backend_is_not_timed_out(tmp_path):
    """The local model cannot be interrupted: a timed-out attempt would go on computing, its
    answer dropped unstored, and the retry would queue the same work again.  Its slow call is
    waited for, made once and stored."""
    backend = FakeBackend(delay=0.2)
    backend.capabilities = Capabilities(in_process=True)
    store = Store(tmp_path / "s.sqlite")
    out = run_requests(reqs(1), backend, store,
                       RunnerConfig(timeout_s=0.02, max_retries=1, **FAST))
    assert (out[0].status, backend.calls["q0"]) == ("ok", 1)
    again = run_requests(reqs(1), backend, store, RunnerConfig(timeout_s=0.02, **FAST))
    assert again[0].cached and backend.calls["q0"] == 1


def test_the_local_backend_is_in_process() -> None:
    from ragmeter.backends._local._backend import LocalBackend

    assert LocalBackend.capabilities.in_process is True


def test_retry_after_is_honoured():
    backend = FakeBackend({"q0": [err("http_429", retry_after=0.2)]})
    run_requests(reqs(1), backend, None, RunnerConfig(**FAST))
    gap = backend.starts[1] - backend.starts[0]
    assert 0.2 <= gap < 0.5


def test_errors_are_not_cached_and_a_later_run_retries_them(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    backend = FakeBackend({"q1": [err("http_500")] * 2})
    first = run_requests(reqs(3), backend, store, RunnerConfig(max_retries=1, **FAST))
    assert [o.status for o in first] == ["ok", "unscored", "ok"]
    second_backend = FakeBackend()
    stats = RunStats()
    second = run_requests(reqs(3), second_backend, store, RunnerConfig(**FAST), stats)
    assert [o.status for o in second] == ["ok", "ok", "ok"]
    assert dict(second_backend.calls) == {"q1": 1}
    assert [o.cached for o in second] == [True, False, True]
    assert (stats.cached, stats.calls) == (2, 1)


def test_second_run_makes_zero_calls(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    run_requests(reqs(20), FakeBackend(), store, RunnerConfig(**FAST))
    again = FakeBackend()
    out = run_requests(reqs(20), again, store, RunnerConfig(**FAST))
    assert sum(again.calls.values()) == 0
    assert all(o.cached and o.response.text == f"answer {o.request.id}" for o in out)


def test_identical_requests_are_called_once():
    backend = FakeBackend()
    same = [Request.chat(f"id{i}", [{"role": "user", "content": "same"}]) for i in range(5)]
    out = run_requests(same, backend, None, RunnerConfig(**FAST))
    assert sum(backend.calls.values()) == 1
    assert [o.request.id for o in out] == [f"id{i}" for i in range(5)]
    assert all(o.ok for o in out)


def test_replay_miss_fails_before_any_call(tmp_path):
    backend = FakeBackend()
    with pytest.raises(ReplayMissError, match="3 of 3 responses are not in the store"):
        run_requests(reqs(3), backend, Store(tmp_path / "s.sqlite"),
                     RunnerConfig(replay=True, **FAST))
    assert sum(backend.calls.values()) == 0


def test_replay_hits_do_not_call(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    run_requests(reqs(3), FakeBackend(), store, RunnerConfig(**FAST))
    backend = FakeBackend()
    out = run_requests(reqs(3), backend, store, RunnerConfig(replay=True, **FAST))
    assert all(o.cached for o in out) and sum(backend.calls.values()) == 0


def test_replay_without_store_is_a_config_error():
    with pytest.raises(ConfigError, match="--replay needs a store"):
        run_requests(reqs(1), FakeBackend(), None, RunnerConfig(replay=True, **FAST))


@pytest.mark.parametrize("kwargs, match", [
    ({"concurrency": 0}, "concurrency"), ({"rpm": 0}, "rpm"), ({"tpm": -5}, "tpm"),
    ({"max_retries": -1}, "max-retries"), ({"timeout_s": 0}, "timeout"),
])
def test_config_validation(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        RunnerConfig(**kwargs)


def test_rpm_limit_spaces_requests():
    backend = FakeBackend()
    # 600 rpm = 10/s with a bucket of 100 (10 s worth): the first 100 pass at once, then 10/s.
    run_requests(reqs(103), backend, None, RunnerConfig(rpm=600, concurrency=50, **FAST))
    starts = sorted(backend.starts)
    # At most 100 + 10 t calls may start within t seconds of the first, so the 103rd starts
    # >= 0.3 s after it (0.05 s allowed for the bucket's clock starting before the first
    # call). Measured from starts[0], not starts[99]: under load, issuing the first 100 takes
    # long enough to refill part of the bucket, which made that form flaky.
    assert starts[-1] - starts[0] >= 0.25


def test_tpm_limit_waits():
    # Calls that take a moment, as over a network: all ten are in flight before the first
    # answer refunds what its estimate took beyond its real usage (5 tokens).
    backend = FakeBackend(delay=0.05)
    big = [Request.chat(f"b{i}", [{"role": "user", "content": f"{i} " + "x" * 400}],
                        params={"max_tokens": 10}) for i in range(10)]
    # 6000 tpm = 100 tokens/s with a bucket of 1000; each request is ~110 estimated tokens, so
    # the tenth waits about 0.9 s for the bucket to refill.
    run_requests(big, backend, None, RunnerConfig(tpm=6000, concurrency=10, **FAST))
    starts = sorted(backend.starts)
    assert 0.5 <= starts[-1] - starts[0] < 3


def test_dry_run_estimate_counts_calls_and_cached(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    run_requests(reqs(2), FakeBackend(), store, RunnerConfig(**FAST))
    requests = reqs(5) + [Request.chat("c", [{"role": "user", "content": "ok?"}],
                                       choices=("yes", "no"))]
    est = estimate_requests(requests, FakeBackend(), store)
    assert (est.requests, est.cached, est.calls) == (6, 2, 4)
    assert est.completion_tokens_max == 3 * 256 + 1
    assert est.prompt_tokens >= 4
    assert "Nothing was called" in est.render()


def test_approx_tokens_is_positive_for_text():
    assert approx_tokens("") == 0
    assert approx_tokens("hello world, this is a test") >= 1


def test_runs_and_item_results_are_recorded(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    run_requests(reqs(2), FakeBackend({"q1": [err("http_400", False)]}), store,
                 RunnerConfig(description="unit", **FAST))
    (run,) = store.runs()
    assert run["command"] == "unit" and run["status"] == "finished"
    items = list(store.iter_items(run["id"]))
    assert [(i["item_id"], i["status"], i["reason"]) for i in items] == [
        ("q0", "ok", None), ("q1", "unscored", "http_400")]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.sampled_from(["http_429", "http_500", "timeout", "bad_response",
                                          "http_400"]), max_size=4), min_size=1, max_size=12))
def test_never_loses_an_item(plans):
    """Invariant: every request comes back once, in order, ok or unscored with a reason."""
    plan = {f"q{i}": [err(r, retryable=(r != "http_400")) for r in p]
            for i, p in enumerate(plans)}
    out = run_requests(reqs(len(plans)), FakeBackend(plan), None,
                       RunnerConfig(max_retries=3, **FAST))
    assert [o.request.id for o in out] == [f"q{i}" for i in range(len(plans))]
    for o, p in zip(out, plans, strict=True):
        expect_ok = "http_400" not in p[:4] and len(p) <= 3
        assert o.ok == expect_ok
        assert o.ok or (o.reason in {"http_429", "http_500", "timeout", "bad_response",
                                     "http_400"})


def test_progress_bar_runs_and_counts(capsys):
    backend = FakeBackend({"q1": [err("http_500")], "q2": [err("http_400", False)]})
    out = run_requests(reqs(5), backend, None,
                       RunnerConfig(progress=True, description="unit calls", **{
                           k: v for k, v in FAST.items() if k != "progress"}))
    assert [o.status for o in out].count("unscored") == 1
    assert "unit calls" in capsys.readouterr().err


def test_progress_callback_counts_and_can_stop_the_run(tmp_path):
    seen: list[tuple[int, int, int]] = []

    def record(stats: RunStats, done: int, todo: int) -> None:
        seen.append((done, todo, stats.calls))

    store = Store(tmp_path / "s.sqlite")
    run_requests(reqs(6), FakeBackend(), store, RunnerConfig(concurrency=2, on_progress=record,
                                                             **FAST))
    assert seen[0] == (0, 6, 0) and [d for d, _, _ in seen] == list(range(7))
    assert seen[-1][2] == 6

    class Stop(Exception):
        pass

    def stop_after_three(stats: RunStats, done: int, todo: int) -> None:
        if done >= 3:
            raise Stop()

    backend = FakeBackend(delay=0.01)
    with pytest.raises(Stop):
        run_requests(reqs(10, "s"), backend, store,
                     RunnerConfig(concurrency=1, on_progress=stop_after_three, **FAST))
    # The finished calls are stored: running again calls only the rest.
    again = FakeBackend()
    out = run_requests(reqs(10, "s"), again, store, RunnerConfig(**FAST))
    assert all(o.ok for o in out)
    assert sum(again.calls.values()) == 10 - sum(1 for o in out if o.cached)
    assert sum(1 for o in out if o.cached) >= 3


def test_a_run_stopped_by_its_progress_callback_sends_no_further_call():
    # The callback raises once two calls are done (the web app's cancel button): the call
    # that the next task was about to send is never sent (it would be paid and lost).
    class Stop(Exception):
        pass

    def on_progress(stats, done, todo):
        if done >= 2:
            raise Stop()

    backend = FakeBackend(delay=0.01)
    with pytest.raises(Stop):
        run_requests(reqs(6), backend, None,
                     RunnerConfig(concurrency=1, on_progress=on_progress, **FAST))
    assert sum(backend.calls.values()) == 2


class _CountingBackend(FakeBackend):
    """Records how many asyncio tasks exist when each call starts, and the call order."""

    def __init__(self) -> None:
        super().__init__()
        self.tasks_at_call: list[int] = []
        self.order: list[str] = []

    async def complete(self, request: Request) -> Response:
        self.tasks_at_call.append(len(asyncio.all_tasks()))
        self.order.append(request.id)
        return await super().complete(request)


@pytest.mark.parametrize("with_store", [True, False])
def test_the_first_call_starts_before_the_other_tasks_are_made(tmp_path, with_store):
    # issue 26.5: the runner makes one task per request; the first call goes out before
    # the other 199 are made (on main it waited for all of them), and calls still start in
    # input order
    backend = _CountingBackend()
    store = Store(tmp_path / "s.sqlite") if with_store else None
    out = run_requests(reqs(200), backend, store, RunnerConfig(concurrency=1, **FAST))
    assert all(o.ok for o in out)
    assert backend.tasks_at_call[0] < 10  # the run's own, a claims renewer, the first call
    assert max(backend.tasks_at_call) > 100  # ...and the others were made after it
    assert backend.order == [f"q{i}" for i in range(200)]
