"""Jobs launched from the web app: an ``rgb run`` in a background thread with live progress.

A launch goes through the same functions as ``ragmeter rgb run``: the backend, store and runner
come from :func:`ragmeter.backends.from_options` (the CLI's own translation of its options), the
run is :func:`ragmeter.rgb.run`, the function ``ragmeter rgb run`` calls, and the record is the
result's :meth:`~ragmeter.result.Result.save` with the equivalent command line.  Progress
comes from the runner's ``on_progress`` callback; cancelling makes that callback raise, which
stops the runner after the calls already finished were stored, so launching the same job again
answers them from the store (resume) and calls only the rest.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.errors import ConfigError, UserError

__all__ = ["RgbLaunch", "Job", "JobManager", "JobCancelled", "estimate_rgb",
           "run_rgb_job", "LANGUAGES", "BackendChoice", "backend_choices", "resolve_data",
           "list_data_files"]

LANGUAGES = {"en": ("rgb_en.jsonl", "rgb_en_int.jsonl", "rgb_en_fact.jsonl"),
             "zh": ("rgb_zh.jsonl",)}
MAX_LIMIT = 100_000


class JobCancelled(Exception):
    """Raised from the progress callback to stop a job's runner."""


@dataclass(frozen=True)
class BackendChoice:
    """One entry of the backend dropdown: ``local`` or ``endpoint:NAME`` (no key, ever)."""

    value: str
    label: str


def backend_choices() -> list[BackendChoice]:
    """The local model and every endpoint of endpoints.toml (name, model and URL only)."""
    from ragmeter.llm.endpoints import load_endpoints

    out = [BackendChoice("local", "local: offline SmolLM2-135M-Instruct (CPU)")]
    for ep in load_endpoints().values():
        out.append(BackendChoice(f"endpoint:{ep.name}", f"{ep.name}: {ep.model} at {ep.base_url}"))
    return out


@dataclass(frozen=True)
class RgbLaunch:
    """The form of an ``rgb run`` launch, validated; the same options as the CLI's flags."""

    backend: str = "local"  # local | endpoint:NAME
    language: str = "en"
    data: tuple[str, ...] = ()  # resolved data files; empty: the built-in sample of language
    noise_rates: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8)
    passage_num: int = 5
    limit: int | None = None
    temperature: float = 0.7
    max_tokens: int = 256
    concurrency: int = 8
    price_prompt: float | None = None
    price_completion: float | None = None

    def __post_init__(self) -> None:
        if self.language not in LANGUAGES:
            raise ConfigError(f"view: unknown language {self.language!r}. Fix: use en or zh.")
        if not self.noise_rates or any(not 0.0 <= r <= 1.0 for r in self.noise_rates):
            raise ConfigError("view: noise rates must be numbers in [0, 1], e.g. 0,0.4,0.8.")
        if not 1 <= self.passage_num <= 50:
            raise ConfigError("view: passage count must be between 1 and 50.")
        if self.limit is not None and not 1 <= self.limit <= MAX_LIMIT:
            raise ConfigError(f"view: sample size must be between 1 and {MAX_LIMIT}.")
        if not 1 <= self.max_tokens <= 8192 or not 0.0 <= self.temperature <= 2.0:
            raise ConfigError("view: max tokens must be 1..8192 and temperature 0..2.")
        if not 1 <= self.concurrency <= 256:
            raise ConfigError("view: concurrency must be between 1 and 256.")

    def files(self) -> list[str]:
        from ragmeter.samples import sample_path

        return list(self.data) or [str(sample_path(n)) for n in LANGUAGES[self.language]]

    def backend_kwargs(self) -> dict[str, Any]:
        """The CLI option values (``runner_context`` keys) this launch stands for."""
        out: dict[str, Any] = {"concurrency": self.concurrency,
                               "price_prompt": self.price_prompt,
                               "price_completion": self.price_completion}
        if self.backend == "local":
            out["backend"] = "local"
        elif self.backend.startswith("endpoint:"):
            out.update(backend="openai", endpoint=self.backend.split(":", 1)[1])
        else:
            raise ConfigError(f"view: unknown backend choice {self.backend!r}.")
        return out

    def command(self) -> list[str]:
        """The equivalent command line (stored in the run record)."""
        out = ["ragmeter", "rgb", "run"]
        for f in self.data:
            out += ["--data", f]
        if self.data:
            out += ["--lang", self.language]
        if self.backend.startswith("endpoint:"):
            out += ["--endpoint", self.backend.split(":", 1)[1]]
        out += ["--noise-rates", ",".join(f"{r:g}" for r in self.noise_rates),
                "--passage-num", str(self.passage_num), "--temperature", f"{self.temperature:g}",
                "--max-tokens", str(self.max_tokens)]
        if self.limit:
            out += ["--limit", str(self.limit)]
        return out

    def run_config(self) -> Any:
        from ragmeter.suites.rgb.run import RgbRunConfig

        return RgbRunConfig(noise_rates=self.noise_rates, passage_num=self.passage_num,
                            temperature=self.temperature, max_tokens=self.max_tokens,
                            limit=self.limit)


def _api_options(launch: RgbLaunch) -> dict[str, Any]:
    """The arguments of :func:`ragmeter.rgb.run` this launch stands for (the same function
    ``ragmeter rgb run`` calls)."""
    from ragmeter.backends import from_options

    return dict(lang=launch.language if launch.data else None,
                noise_rates=launch.noise_rates, passage_num=launch.passage_num,
                temperature=launch.temperature, max_tokens=launch.max_tokens,
                limit=launch.limit, backend=from_options(**launch.backend_kwargs()),
                progress=False)


def estimate_rgb(launch: RgbLaunch, store_path: str | None = None) -> Any:
    """What ``rgb run --dry-run`` prints for the answers, as the runner's
    :class:`~ragmeter.runner.DryRunEstimate` (calls, tokens, money at the given prices)."""
    import dataclasses

    import ragmeter.rgb
    from ragmeter.runner import DryRunEstimate

    summary = ragmeter.rgb.run(launch.files(), store=store_path, dry_run=True,
                               **_api_options(launch)).summary
    return DryRunEstimate(**{f.name: summary[f.name]
                             for f in dataclasses.fields(DryRunEstimate)})


def run_rgb_job(launch: RgbLaunch, *, store_path: str | None, runs_dir: str | None,
                on_progress: Callable[..., None]) -> str:
    """Run the launch to the end through :func:`ragmeter.rgb.run` and save its run record;
    returns the run id."""
    import ragmeter.rgb

    result = ragmeter.rgb.run(launch.files(), store=store_path, on_progress=on_progress,
                              **_api_options(launch))
    return str(result.save(runs_dir, command=launch.command()).run_id)


@dataclass
class Job:
    """One launched job and its live counters (read by the progress stream)."""

    id: str
    launch: RgbLaunch
    status: str = "starting"  # starting | running | done | failed | cancelled
    phase: str = ""
    done: int = 0
    todo: int = 0
    calls: int = 0
    unscored: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    started: float = field(default_factory=time.monotonic)
    phase_started: float = field(default_factory=time.monotonic)
    eta_s: float | None = None
    run_id: str | None = None
    error: str | None = None
    version: int = 0
    cancel_requested: bool = False

    def snapshot(self) -> dict[str, Any]:
        out = {k: v for k, v in dataclasses.asdict(self).items()
               if k not in ("launch", "started", "phase_started", "cancel_requested")}
        out["elapsed_s"] = round(time.monotonic() - self.started, 1)
        return out


class JobManager:
    """Starts jobs in background threads, one at a time, and keeps their state."""

    def __init__(self, *, store_path: str | None, runs_dir: str | None,
                 on_finished: Callable[[], None] = lambda: None) -> None:
        self.store_path = store_path
        self.runs_dir = runs_dir
        self.on_finished = on_finished
        self.jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._threads: dict[str, threading.Thread] = {}

    def running(self) -> Job | None:
        return next((j for j in self.jobs.values() if j.status in ("starting", "running")),
                    None)

    def start(self, launch: RgbLaunch) -> Job:
        with self._lock:
            busy = self.running()
            if busy is not None:
                raise ConfigError(f"view: job {busy.id} is still running. Fix: wait for it or "
                                  "cancel it first.")
            job = Job(id=uuid.uuid4().hex[:12], launch=launch)
            self.jobs[job.id] = job
        thread = threading.Thread(target=self._work, args=(job,), name=f"ragmeter-job-{job.id}",
                                  daemon=True)
        self._threads[job.id] = thread
        thread.start()
        return job

    def cancel(self, job_id: str) -> Job | None:
        job = self.jobs.get(job_id)
        if job is not None and job.status in ("starting", "running"):
            job.cancel_requested = True
            job.version += 1
        return job

    def wait(self, job_id: str, timeout: float | None = None) -> None:
        thread = self._threads.get(job_id)
        if thread is not None:
            thread.join(timeout)

    def _work(self, job: Job) -> None:
        phases = iter(("answers", "judge"))

        def progress(stats: Any, done: int, todo: int) -> None:
            if job.cancel_requested:
                raise JobCancelled()
            now = time.monotonic()
            if done == 0:
                job.phase = next(phases, "calls")
                job.phase_started = now
            job.status = "running"
            job.done, job.todo = done, todo
            job.calls, job.unscored = stats.calls, stats.unscored
            job.prompt_tokens, job.completion_tokens = stats.prompt_tokens, stats.completion_tokens
            job.cost_usd = stats.cost_usd
            elapsed = now - job.phase_started
            job.eta_s = round(elapsed / done * (todo - done), 1) if done and todo else None
            job.version += 1

        try:
            job.run_id = run_rgb_job(job.launch, store_path=self.store_path,
                                     runs_dir=self.runs_dir, on_progress=progress)
            job.status = "done"
        except JobCancelled:
            job.status = "cancelled"
        except UserError as err:
            job.status, job.error = "failed", str(err)
        except Exception as err:  # noqa: BLE001 - a job's crash is shown on its page, not lost
            job.status, job.error = "failed", f"{type(err).__name__}: {err}"
        finally:
            job.eta_s = None
            job.version += 1
            self.on_finished()


def resolve_data(name: str, folders: list[Path]) -> str:
    """A data file chosen in the form: must lie inside one of the configured data folders."""
    if not name:
        raise ConfigError("view: no data file given.")
    for folder in folders:
        base = folder.resolve()
        candidate = (base / name).resolve()
        if candidate.is_file() and candidate.is_relative_to(base):
            return str(candidate)
    raise ConfigError(f"view: data file {name!r} is not in a configured data folder. Fix: start "
                      "ragmeter view with --data-dir FOLDER and pick a file listed there.")


def list_data_files(folders: list[Path], limit: int = 500) -> list[str]:
    """RGB-format files (``*.json``, ``*.jsonl``) under the data folders, relative names."""
    out: list[str] = []
    for folder in folders:
        if not folder.is_dir():
            continue
        base = folder.resolve()
        for p in sorted(folder.rglob("*.json*")):
            if p.suffix in (".json", ".jsonl") and p.is_file() \
                    and p.resolve().is_relative_to(base):  # no links out of the folder
                out.append(str(p.relative_to(folder)))
                if len(out) >= limit:
                    return out
    return out
