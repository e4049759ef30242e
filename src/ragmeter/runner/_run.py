"""The runner: the one stateful part of ragmeter.

It takes :class:`~ragmeter.backends._types.Request` objects and a backend and returns one
:class:`Outcome` per request, in input order.  Around the backend's I/O it adds, in this order:

1. **cache**: a request whose key (``request.cache_key(backend.identity())``) is in the
   :class:`~ragmeter.runner._store.Store` is answered from it without a call; identical requests in one
   batch are called once;
2. **replay**: with ``replay=True`` a cache miss raises :class:`~ragmeter.errors.ReplayMissError`
   before anything is called (deterministic offline re-scoring);
3. **limits**: at most ``concurrency`` calls in flight, optional requests-per-minute and
   tokens-per-minute token buckets;
4. **retries**: exponential backoff with jitter on retryable failures (429, 5xx, timeouts,
   connection errors, malformed bodies), honouring ``Retry-After``;
5. **persistence**: every successful response is committed to the store *before* it is used,
   so a run killed at any point (``kill -9``) and started again repeats no completed call;
   failures are never stored, so a later run retries them;
5b. **claims**: with a store, each call is claimed in it first (a lease of ``lease_s``
   seconds, renewed while the run lives; see :meth:`~ragmeter.runner._store.Store.claim`), so two
   processes on one store never pay for the same call: the second waits for the first's answer,
   and takes the call over if the first dies;
6. **progress**: a rich progress bar with rate, ETA, tokens and failure counts;
7. **engine**: the misses are called from this process (asyncio, the default) or handed to an
   engine (``RunnerConfig.engine``, e.g. Ray: :mod:`ragmeter.runner.engines`) whose results stream
   back and are stored here as they arrive, so steps 1 and 5 hold at any scale.

A failed call never raises and never becomes NaN: it becomes an ``unscored`` outcome whose
``reason`` is the backend's code (``timeout``, ``http_429``, ``http_500``, ``bad_response``, ...).
Policy wraps I/O (httpx's design): backends do no retries, caching or limiting themselves.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragmeter._util._aio import within
from ragmeter.backends._types import Backend, Request, Response
from ragmeter.errors import BackendError, ConfigError, ReplayMissError, UserError
from ragmeter.runner._estimate import (
    DryRunEstimate,
    _completion_budget,
    _prompt_text,
    _rough_tokens,
    approx_tokens,
    estimate_requests,
)
from ragmeter.runner._pacing import _Progress, _TokenBucket
from ragmeter.runner._store import Store
from ragmeter.runner._types import Outcome, RunnerConfig, RunStats

if TYPE_CHECKING:
    from ragmeter.runner._types import Engine

__all__ = ["RunnerConfig", "Outcome", "RunStats", "run_requests", "arun_requests",
           "DryRunEstimate", "estimate_requests", "approx_tokens", "run_sync"]


def _uniform(low: float, high: float) -> float:
    """``random.uniform``, importing :mod:`random` on the first retry or wait, not before a
    run's first call (issue 26.5)."""
    import random

    return random.uniform(low, high)


# ---------------------------------------------------------------- the run


def _stopped(request: Request, key: str) -> Outcome:
    return Outcome(request, "unscored", reason="stopped",
                   detail="not sent: the run stopped early", key=key)


class _Run:
    def __init__(self, backend: Backend, store: Store | None, config: RunnerConfig) -> None:
        self.backend = backend
        # An in-process backend (capabilities.in_process: the local model) cannot be
        # interrupted: a timed-out attempt would go on computing, its answer would be dropped
        # unstored and the retry would queue the same work again behind it.  Its calls are
        # waited for; the per-attempt timeout is for the others (a hung connection).
        self._timeout: float | None = (None if backend.capabilities.in_process
                                       else config.timeout_s)
        self.store = store
        self.config = config
        self.identity = backend.identity()
        self.sem = asyncio.Semaphore(config.concurrency)
        self.rpm = _TokenBucket(config.rpm) if config.rpm else None
        self.tpm = _TokenBucket(config.tpm) if config.tpm else None
        self.stats = RunStats()
        self.progress: _Progress | None = None
        self.stop: UserError | None = None  # set when going on would only waste paid calls
        self.halted = False  # set when the run ends with an exception: nothing more is sent
        self.slots = asyncio.Semaphore(config.concurrency)  # claims held at once
        self.owner = ""

    def _delay(self, attempt: int, err: BackendError) -> float:
        cfg = self.config
        if err.retry_after is not None and err.retry_after >= 0:
            return min(cfg.retry_after_max_s, err.retry_after) + _uniform(0, 0.1) * \
                min(1.0, cfg.backoff_base_s)
        return min(cfg.backoff_max_s, cfg.backoff_base_s * 2 ** attempt) * _uniform(0.5, 1)

    def accept(self, key: str, request: Request, response: Response) -> None:
        """Persist a successful response before it is used, and count its tokens and cost."""
        if self.store is not None:
            self.store.put(key, request, self.identity, response)
        self.stats.prompt_tokens += response.usage.prompt_tokens
        self.stats.completion_tokens += response.usage.completion_tokens
        cfg = self.config
        if cfg.price_prompt_per_mtok is not None or cfg.price_completion_per_mtok is not None:
            self.stats.cost_usd = (self.stats.cost_usd or 0.0) + (
                response.usage.prompt_tokens * (cfg.price_prompt_per_mtok or 0.0)
                + response.usage.completion_tokens * (cfg.price_completion_per_mtok or 0.0)
            ) / 1e6

    async def from_engine(self, engine: Engine, todo: dict[str, Request]) -> dict[str, Outcome]:
        """Hand the misses to ``engine``; store each result as it streams back.

        With a store, the keys are claimed first, as on the local path: a key that another live
        run holds is not sent; it is taken from the store once that run answers it, or sent in a
        later round once its claim lapses."""
        results: dict[str, Outcome] = {}
        pending = dict(todo)
        while pending:
            send = self._claim_for_engine(pending, results)
            pending = {k: r for k, r in pending.items() if k not in send and k not in results}
            if send:
                self._stream_engine(engine, send, results)
            elif pending:  # all held by other live runs: wait for their answers or a lapse
                await asyncio.sleep(self.config.claim_poll_s * _uniform(0.8, 1.2))
        missing = [k for k in todo if k not in results]
        if missing:
            raise RuntimeError(f"runner: engine {engine.name} returned no result for "
                               f"{len(missing)} of {len(todo)} requests")
        return results

    def _claim_for_engine(self, pending: dict[str, Request],
                          results: dict[str, Outcome]) -> dict[str, Request]:
        """The pending requests this run may send (all of them without a store); claims each
        in the store, and takes the answers other runs stored meanwhile into ``results``."""
        if self.store is None:
            return dict(pending)
        send = {}
        for key, request in pending.items():
            got = self.store.claim(key, self.owner, self.config.lease_s)
            if got is True:
                send[key] = request
            elif isinstance(got, Response):  # answered by another process meanwhile
                results[key] = Outcome(request, "ok", response=got, cached=True, key=key)
                self.stats.cached += 1
                self.count(results[key])
        return send

    def _stream_engine(self, engine: Engine, send: dict[str, Request],
                       results: dict[str, Outcome]) -> None:
        """Run ``send`` on the engine; store each result as it arrives (claims renewed from a
        thread meanwhile); raise the run's stop error (e.g. no logprobs) as soon as it is set."""
        renewing = (_ClaimRenewer(self.store, self.owner, self.config.lease_s)
                    if self.store is not None else None)
        stream = iter(engine.run(send, self.config, self.identity))
        try:
            for key, outcome in stream:
                if key in results or key not in send:
                    continue  # a batch retried after its results had arrived
                self.stats.calls += max(1, outcome.attempts)
                self.stats.retries += max(0, outcome.attempts - 1)
                if outcome.ok:
                    assert outcome.response is not None
                    self.accept(key, send[key], outcome.response)  # persisted before use
                    if _unusable_choices(send[key], outcome.response) and self.stop is None:
                        self.stop = self._no_logprobs_error()
                if self.store is not None:
                    self.store.release(key, self.owner)
                results[key] = outcome
                self.count(outcome)
                if self.stop is not None:
                    break
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()  # stops the engine's work when the run ends early
            if renewing is not None:
                renewing.stop()
        if self.stop is not None:
            raise self.stop

    def count(self, outcome: Outcome) -> None:
        if outcome.ok:
            self.stats.ok += 1
        else:
            self.stats.unscored += 1
            reason = outcome.reason or "unknown"
            self.stats.reasons[reason] = self.stats.reasons.get(reason, 0) + 1
        assert self.progress is not None
        self.progress.advance()

    async def call(self, key: str, request: Request) -> Outcome:
        cfg = self.config
        estimate = (_rough_tokens(_prompt_text(request)) + _completion_budget(request)
                     if self.tpm else 0)
        last: BackendError | None = None
        for attempt in range(cfg.max_retries + 1):
            if attempt:
                self.stats.retries += 1
                await asyncio.sleep(self._delay(attempt - 1, last))  # type: ignore[arg-type]
            async with self.sem:
                if self.stop is not None or self.halted:
                    return _stopped(request, key)
                if self.rpm:
                    await self.rpm.take(1)
                if self.tpm:
                    await self.tpm.take(estimate)
                if self.halted:
                    return _stopped(request, key)
                self.stats.calls += 1
                try:
                    # in this task (no task per call: the first call starts at once)
                    response = await within(self._timeout, self.backend.complete(request))
                except asyncio.TimeoutError:
                    last = BackendError("timeout", f"no answer within {cfg.timeout_s:g} s",
                                        retryable=True)
                    continue
                except BackendError as err:
                    last = err
                    if not err.retryable:
                        break
                    continue
                except (ValueError, TypeError, KeyError, RuntimeError, OSError) as exc:
                    # A backend that broke its contract: report, never lose the item.
                    last = BackendError("backend_error", f"{type(exc).__name__}: {exc}")
                    break
            if self.tpm:
                self.tpm.adjust(response.usage.total_tokens - estimate)
            self.accept(key, request, response)  # persisted before use
            if _unusable_choices(request, response) and self.stop is None:
                self.stop = self._no_logprobs_error()
            return Outcome(request, "ok", response=response, attempts=attempt + 1, key=key)
        assert last is not None
        return Outcome(request, "unscored", reason=last.reason, detail=last.detail or None,
                       attempts=attempt + 1, key=key)

    async def claimed_call(self, key: str, request: Request) -> Outcome:
        """:meth:`call` under a claim in the store: another process's live claim on the same
        key makes this one wait for its stored answer (or take over once the claim lapses)."""
        assert self.store is not None
        while True:
            async with self.slots:
                got = self.store.claim(key, self.owner, self.config.lease_s)
                if got is True:
                    try:
                        return await self.call(key, request)
                    finally:
                        self.store.release(key, self.owner)
            if isinstance(got, Response):  # answered by another process meanwhile
                return Outcome(request, "ok", response=got, cached=True, key=key)
            await asyncio.sleep(self.config.claim_poll_s * _uniform(0.8, 1.2))

    async def _renew_claims(self) -> None:
        assert self.store is not None
        while True:
            await asyncio.sleep(self.config.lease_s / 3)
            self.store.renew_claims(self.owner, self.config.lease_s)

    def _no_logprobs_error(self) -> UserError:
        kept = (f"it is stored in {self.store.path}, so nothing is paid twice"
                if self.store is not None else "no store was given, so it was not kept")
        return ConfigError(
            f"runner: the backend {self.identity.get('model')!r} at "
            f"{self.identity.get('base_url', self.identity.get('backend'))} answered a "
            f"choice-scored request without the logprobs that choice scoring needs ({kept}); "
            f"the run stopped instead of paying for more calls it cannot score. Fix: use the "
            f"text strategy (rubric judge --scoring generate, multilingual judge --scoring "
            f"generate, criteria judge --scoring generate, trace label --strategy json), or a "
            f"server that returns logprobs (vLLM, OpenAI).")

    async def run(self, requests: Sequence[Request]) -> list[Outcome]:
        start = time.monotonic()
        keys = [r.cache_key(self.identity) for r in requests]
        stored = self.store.get_many(keys) if self.store is not None else {}
        if any(_unusable_choices(r, stored[k])
               for r, k in zip(requests, keys, strict=True) if k in stored):
            raise self._no_logprobs_error()  # known from an earlier run: call nothing
        if self.config.replay:
            missing = [r for r, k in zip(requests, keys, strict=True) if k not in stored]
            if missing:
                where = f" in {self.store.path}" if self.store is not None else ""
                raise ReplayMissError(
                    f"runner: --replay was asked but {len(missing)} of {len(requests)} "
                    f"responses are not in the store{where} (first missing request id: "
                    f"{missing[0].id!r}, backend {self.identity}). Fix: run once without "
                    f"--replay to fill the store, or point --store at the store that has them.")
        self.stats.total = len(requests)
        todo: dict[str, Request] = {}
        for r, k in zip(requests, keys, strict=True):
            if k not in stored:
                todo.setdefault(k, r)
        self.progress = _Progress(self.config, len(todo), self.stats)
        results: dict[str, Outcome] = {}
        claims = self.store is not None and bool(todo)
        if claims:
            from ragmeter.runner._store import process_owner

            # 8 random hex digits, as uuid4().hex[:8] (its version bits come later), without
            # importing uuid (and platform) before the first call (issue 26.5)
            self.owner = f"{process_owner()}:{os.urandom(4).hex()}"
        if self.config.engine is not None:
            try:
                results = await self.from_engine(self.config.engine, todo)
            finally:
                self.progress.close()
                if claims:
                    assert self.store is not None
                    self.store.release_all(self.owner)
            return self.assemble(requests, keys, stored, results, start)
        renewer = asyncio.ensure_future(self._renew_claims()) if claims else None

        async def one(key: str, request: Request) -> None:
            try:
                outcome = await (self.claimed_call(key, request) if claims else
                                 self.call(key, request))
                results[key] = outcome
                if outcome.cached:
                    self.stats.cached += 1
                self.count(outcome)
            except BaseException:
                # the run ends with this exception (an on_progress callback stopped it, the
                # store is full...): no other task sends a call while they are cancelled
                self.halted = True
                raise

        tasks: list[asyncio.Future[None]] = []
        try:
            if self.backend.choice_scoring_now() is None:
                # Whether the backend scores choices is unknown (capabilities.choice_scoring
                # None, not learned yet): learn it from one call first.
                probe = next((k for k, r in todo.items() if r.choices is not None), None)
                if probe is not None:
                    await one(probe, todo[probe])
            for k, r in todo.items():
                if k not in results:
                    tasks.append(asyncio.ensure_future(one(k, r)))
                    if len(tasks) == 1:
                        # the first call goes out before the other tasks are made, which
                        # then overlaps its wait (issue 26.5); they still start in order
                        await asyncio.sleep(0)
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        finally:
            self.progress.close()
            if renewer is not None:
                renewer.cancel()
                await asyncio.gather(renewer, return_exceptions=True)
                assert self.store is not None
                self.store.release_all(self.owner)
        if self.stop is not None:
            raise self.stop
        return self.assemble(requests, keys, stored, results, start)

    def assemble(self, requests: Sequence[Request], keys: list[str],
                 stored: dict[str, Response], results: dict[str, Outcome],
                 start: float) -> list[Outcome]:
        """One outcome per request, in input order."""
        out: list[Outcome] = []
        for r, k in zip(requests, keys, strict=True):
            if k in stored:
                self.stats.cached += 1
                out.append(Outcome(r, "ok", response=stored[k], cached=True, key=k))
            else:
                first = results[k]
                out.append(first if first.request is r else Outcome(
                    r, first.status, first.response, first.reason, first.detail,
                    cached=first.ok, attempts=0, key=k))
        self.stats.wall_s = time.monotonic() - start
        return out


class _ClaimRenewer:
    """Renews an owner's claims every ``lease_s / 3`` seconds from a thread, while an engine's
    results are consumed synchronously (the event loop cannot run the renewing task then)."""

    def __init__(self, store: Store, owner: str, lease_s: float) -> None:
        import threading

        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, args=(store, owner, lease_s),
                                       name="ragmeter-claims", daemon=True)
        self.thread.start()

    def _loop(self, store: Store, owner: str, lease_s: float) -> None:
        while not self.done.wait(lease_s / 3):
            store.renew_claims(owner, lease_s)

    def stop(self) -> None:
        self.done.set()
        self.thread.join()


def _unusable_choices(request: Request, response: Response) -> bool:
    """A stored reply to a choice-scored request that came without logprobs."""
    return request.choices is not None and response.choice_method == "no_logprobs"


async def arun_requests(requests: Sequence[Request], backend: Backend, store: Store | None,
                        config: RunnerConfig, stats: RunStats | None = None) -> list[Outcome]:
    """Async form of :func:`run_requests` for callers already inside an event loop.

    ``stats``, when given, is filled with the run's counters.
    """
    run = _Run(backend, store, config)
    run_id = None
    if store is not None and config.record_run and not config.replay:
        run_id = store.start_run(config.description, {
            "backend": backend.identity(), "requests": len(requests),
            "concurrency": config.concurrency, "max_retries": config.max_retries,
            "engine": config.engine_name})
    outcomes = await run.run(requests)
    if store is not None and run_id is not None:
        store.record_items(run_id, ({
            "item_id": o.request.id, "status": o.status, "reason": o.reason,
            "detail": o.detail, "call_key": o.key, "cached": o.cached} for o in outcomes))
        store.finish_run(run_id)
    if stats is not None:
        for name, value in run.stats.to_dict().items():
            setattr(stats, name, value)
    return outcomes


def run_requests(requests: Sequence[Request], backend: Backend, store: Store | None,
                 config: RunnerConfig, stats: RunStats | None = None) -> list[Outcome]:
    """Run ``requests`` through ``backend``; one :class:`Outcome` per request, in input order.

    Never raises for model failures (they become unscored outcomes with a reason).  Raises
    :class:`~ragmeter.errors.ReplayMissError` in replay mode when a response is not stored, and
    :class:`~ragmeter.errors.ConfigError` for ``replay`` without a store.  The backend's
    ``release()`` (the ``openai`` one closes its pooled connections, which belong to this
    call's event loop; a no-op by default) is awaited at the end; the backend stays usable
    and reopens on the next call.
    """
    if config.replay and store is None:
        raise ConfigError("runner: --replay needs a store to read responses from. "
                          "Fix: drop --replay, or give --store PATH.")
    async def main() -> list[Outcome]:
        try:
            return await arun_requests(requests, backend, store, config, stats)
        finally:
            await backend.release()

    if sys.platform == "win32":  # pragma: no cover
        asyncio.set_event_loop_policy(asyncio.WindowsSelectorEventLoopPolicy())  # type: ignore[attr-defined]
    return run_sync(main)


def run_sync(make_coroutine: Any) -> Any:
    """Run ``make_coroutine()`` to completion from synchronous code.

    Inside an already running event loop (Jupyter, an async test) the coroutine runs on a
    fresh loop in a worker thread, so the synchronous API works there too; elsewhere it is
    plain ``asyncio.run``.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make_coroutine())
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="ragmeter-sync") as pool:
        return pool.submit(lambda: asyncio.run(make_coroutine())).result()
