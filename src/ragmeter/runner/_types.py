"""The runner's shared types: :class:`RunnerConfig` (how calls are made), :class:`Outcome`
(one request's result: ``ok`` or ``unscored`` with a reason) and :class:`RunStats` (a run's
counters).  In their own module so that the runner, its engines, its pacing and every verb can
share them without importing the runner (the cycles of the old layout came from types living in
their orchestrator's module)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal, Protocol

from ragmeter._util._record import as_dict, record, set_field
from ragmeter.backends._types import Request, Response

__all__ = ["RunnerConfig", "Outcome", "RunStats", "Engine"]


class Engine(Protocol):
    """Computes the outcomes of requests that are not in the store."""

    name: str

    def run(self, todo: Mapping[str, Request], config: RunnerConfig,
            identity: Mapping[str, Any]) -> Iterator[tuple[str, Outcome]]:
        """Yield ``(cache key, outcome)`` for every entry of ``todo`` as each one completes, in
        any order.  ``identity`` is the driver's backend identity; an engine whose workers build
        a backend with another identity raises :class:`~ragmeter.errors.ConfigError`."""
        ...


@record(compare_exclude=("on_progress",))  # plain class, no dataclass (issue 26.5)
class RunnerConfig:
    """How the runner calls a backend.  None of these fields enters a cache key.

    ``backoff_base_s`` and ``backoff_max_s`` shape the retry delays
    (``min(max, base * 2**attempt)`` with full jitter in [0.5, 1] of it); tests make them small.
    ``retry_after_max_s`` caps how long a server's ``Retry-After`` may make one wait.
    ``on_progress``, when set, is called as ``on_progress(stats, done, todo)`` once before the
    first call and after each finished call (``todo``: calls this run must make, cache hits
    excluded); it runs on the runner's event loop, so it must be quick.  An exception it raises
    stops the run (calls in flight are cancelled; finished ones are already in the store), which
    is how the web app cancels a job.
    """

    __slots__ = ("concurrency", "rpm", "tpm", "max_retries", "timeout_s", "replay", "progress",
                 "description", "backoff_base_s", "backoff_max_s", "retry_after_max_s",
                 "record_run", "lease_s", "claim_poll_s", "price_prompt_per_mtok",
                 "price_completion_per_mtok", "engine", "on_progress")
    concurrency: int
    rpm: float | None
    tpm: float | None
    max_retries: int
    timeout_s: float
    replay: bool
    progress: bool
    description: str
    backoff_base_s: float
    backoff_max_s: float
    retry_after_max_s: float
    record_run: bool
    lease_s: float  # a claim lapses this long after its process stops renewing it
    claim_poll_s: float  # how often a process waiting on another's claim looks again
    # Prices in USD per million tokens, for the running cost counter (None: not shown).
    price_prompt_per_mtok: float | None
    price_completion_per_mtok: float | None
    # Where the misses are computed: None is this process; an engine (--engine ray) gets them
    # and streams results back (ragmeter.runner.engines).  Never part of a cache key.
    engine: Engine | None

    on_progress: Callable[[RunStats, int, int], None] | None  # not compared

    def __init__(self, concurrency: int = 8, rpm: float | None = None,
                 tpm: float | None = None, max_retries: int = 5, timeout_s: float = 120.0,
                 replay: bool = False, progress: bool = True, description: str = "calls",
                 backoff_base_s: float = 1.0, backoff_max_s: float = 60.0,
                 retry_after_max_s: float = 300.0, record_run: bool = True,
                 lease_s: float = 30.0, claim_poll_s: float = 0.2,
                 price_prompt_per_mtok: float | None = None,
                 price_completion_per_mtok: float | None = None, engine: Engine | None = None,
                 on_progress: Callable[[RunStats, int, int], None] | None = None) -> None:
        set_field(self, "concurrency", concurrency)
        set_field(self, "rpm", rpm)
        set_field(self, "tpm", tpm)
        set_field(self, "max_retries", max_retries)
        set_field(self, "timeout_s", timeout_s)
        set_field(self, "replay", replay)
        set_field(self, "progress", progress)
        set_field(self, "description", description)
        set_field(self, "backoff_base_s", backoff_base_s)
        set_field(self, "backoff_max_s", backoff_max_s)
        set_field(self, "retry_after_max_s", retry_after_max_s)
        set_field(self, "record_run", record_run)
        set_field(self, "lease_s", lease_s)
        set_field(self, "claim_poll_s", claim_poll_s)
        set_field(self, "price_prompt_per_mtok", price_prompt_per_mtok)
        set_field(self, "price_completion_per_mtok", price_completion_per_mtok)
        set_field(self, "engine", engine)
        set_field(self, "on_progress", on_progress)
        # A backstop behind the doors' own checks (the CLI's flags, ModelBackend's fields):
        # the same finite-number check (issue 29.3), so nan or inf never reaches the runner.
        from ragmeter._util import check_number

        check_number(self.concurrency, "--concurrency", lo=1, whole=True, component="runner")
        for name in ("rpm", "tpm"):
            value = getattr(self, name)
            if value is not None:
                check_number(value, f"--{name}", lo=0, lo_open=True, component="runner")
        check_number(self.max_retries, "--max-retries", lo=0, whole=True, component="runner")
        check_number(self.timeout_s, "--timeout", lo=0, lo_open=True, component="runner")
        for flag, value in (("--price-in", self.price_prompt_per_mtok),
                            ("--price-out", self.price_completion_per_mtok)):
            if value is not None:
                check_number(value, flag, lo=0, component="runner")

    @property
    def engine_name(self) -> str:
        return self.engine.name if self.engine is not None else "local"


@record()
class Outcome:
    """The result of one request: ``ok`` with a response, or ``unscored`` with a reason."""

    __slots__ = ("request", "status", "response", "reason", "detail", "cached", "attempts", "key")
    request: Request
    status: Literal["ok", "unscored"]
    response: Response | None
    reason: str | None
    detail: str | None
    cached: bool
    attempts: int
    key: str | None

    def __init__(self, request: Request, status: Literal["ok", "unscored"],
                 response: Response | None = None, reason: str | None = None,
                 detail: str | None = None, cached: bool = False, attempts: int = 0,
                 key: str | None = None) -> None:
        set_field(self, "request", request)
        set_field(self, "status", status)
        set_field(self, "response", response)
        set_field(self, "reason", reason)
        set_field(self, "detail", detail)
        set_field(self, "cached", cached)
        set_field(self, "attempts", attempts)
        set_field(self, "key", key)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@record(frozen=False)
class RunStats:
    """Counters of one run (the progress bar shows them; ``last_run_stats`` keeps them)."""

    __slots__ = ("total", "cached", "calls", "ok", "unscored", "retries", "prompt_tokens",
                 "completion_tokens", "cost_usd", "wall_s", "reasons")
    total: int
    cached: int
    calls: int
    ok: int
    unscored: int
    retries: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None  # of the calls made in this run (cached ones cost nothing)
    wall_s: float
    reasons: dict[str, int]  # default: a new empty dict

    def __init__(self, total: int = 0, cached: int = 0, calls: int = 0, ok: int = 0,
                 unscored: int = 0, retries: int = 0, prompt_tokens: int = 0,
                 completion_tokens: int = 0, cost_usd: float | None = None, wall_s: float = 0.0,
                 reasons: dict[str, int] | None = None) -> None:
        self.total = total
        self.cached = cached
        self.calls = calls
        self.ok = ok
        self.unscored = unscored
        self.retries = retries
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.cost_usd = cost_usd
        self.wall_s = wall_s
        self.reasons = {} if reasons is None else reasons

    def to_dict(self) -> dict[str, Any]:
        return as_dict(self)
