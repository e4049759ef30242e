"""The runner's shared types: :class:`RunnerConfig` (how calls are made), :class:`Outcome`
(one request's result: ``ok`` or ``unscored`` with a reason) and :class:`RunStats` (a run's
counters).  In their own module so that the runner, its engines, its pacing and every verb can
share them without importing the runner (the cycles of the old layout came from types living in
their orchestrator's module)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

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


@dataclass(frozen=True)
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

    concurrency: int = 8
    rpm: float | None = None
    tpm: float | None = None
    max_retries: int = 5
    timeout_s: float = 120.0
    replay: bool = False
    progress: bool = True
    description: str = "calls"
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    retry_after_max_s: float = 300.0
    record_run: bool = True
    lease_s: float = 30.0  # a claim lapses this long after its process stops renewing it
    claim_poll_s: float = 0.2  # how often a process waiting on another's claim looks again
    # Prices in USD per million tokens, for the running cost counter (None: not shown).
    price_prompt_per_mtok: float | None = None
    price_completion_per_mtok: float | None = None
    # Where the misses are computed: None is this process; an engine (--engine ray) gets them
    # and streams results back (ragmeter.runner.engines).  Never part of a cache key.
    engine: Engine | None = None

    @property
    def engine_name(self) -> str:
        return self.engine.name if self.engine is not None else "local"
    on_progress: Callable[[RunStats, int, int], None] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
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


@dataclass(frozen=True)
class Outcome:
    """The result of one request: ``ok`` with a response, or ``unscored`` with a reason."""

    request: Request
    status: Literal["ok", "unscored"]
    response: Response | None = None
    reason: str | None = None
    detail: str | None = None
    cached: bool = False
    attempts: int = 0
    key: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class RunStats:
    """Counters of one run (the progress bar shows them; ``last_run_stats`` keeps them)."""

    total: int = 0
    cached: int = 0
    calls: int = 0
    ok: int = 0
    unscored: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None  # of the calls made in this run (cached ones cost nothing)
    wall_s: float = 0.0
    reasons: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
