"""Jobs launched from the web app: any launch form's verb in a background thread, with live
progress, several at a time.

A job calls the verb's public function (:meth:`ragmeter.view.forms.Launch.run`: the function
its CLI command calls, with the backend built by :func:`ragmeter.backends.from_options`, the
CLI's own translation of its options) and saves the result's run record
(:meth:`~ragmeter.result.Result.save`) with the equivalent command line.  Progress comes from
the runner's ``on_progress`` callback; cancelling makes that callback raise, which stops the
runner after the calls already finished were stored, so launching the same job again answers
them from the store (resume) and calls only the rest.

:class:`JobManager` runs at most ``max_jobs`` jobs at once (``ragmeter view --max-jobs``,
default 2) and queues the others in launch order; a queued job can be cancelled before it
starts.  Jobs live as long as the server; their results live in the store and the run records.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ragmeter.errors import ConfigError, UserError
from ragmeter.view.forms import (
    BackendChoice,
    Launch,
    backend_choices,
    list_data_files,
    resolve_data,
)

__all__ = ["Job", "JobManager", "JobCancelled", "run_job", "BackendChoice", "backend_choices",
           "resolve_data", "list_data_files", "ACTIVE", "FINISHED"]

ACTIVE = ("queued", "starting", "running")
FINISHED = ("done", "failed", "cancelled")


class JobCancelled(Exception):
    """Raised from the progress callback to stop a job's runner."""


def run_job(launch: Launch, *, store_path: str | None, runs_dir: str | None,
            on_progress: Callable[..., None]) -> str:
    """Run the launch to the end through its verb's public function and save its run record;
    returns the run id."""
    result = launch.run(store_path=store_path, on_progress=on_progress)
    return str(result.save(runs_dir, command=launch.command()).run_id)


@dataclass
class Job:
    """One launched job and its live counters (read by the progress streams)."""

    id: str
    launch: Launch
    status: str = "queued"  # queued | starting | running | done | failed | cancelled
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
    queued_at: float = field(default_factory=time.time)

    @property
    def title(self) -> str:
        return self.launch.title

    def snapshot(self) -> dict[str, Any]:
        out = {k: v for k, v in dataclasses.asdict(self).items()
               if k not in ("launch", "started", "phase_started", "cancel_requested",
                            "queued_at")}
        out["title"] = self.title
        out["elapsed_s"] = (0.0 if self.status == "queued"
                            else round(time.monotonic() - self.started, 1))
        return out


class JobManager:
    """Runs jobs in background threads, at most ``max_jobs`` at once; the rest wait in a queue
    (first launched, first started)."""

    def __init__(self, *, store_path: str | None, runs_dir: str | None, max_jobs: int = 2,
                 on_finished: Callable[[], None] = lambda: None) -> None:
        if max_jobs < 1:
            raise ConfigError("view: --max-jobs must be 1 or more.")
        self.store_path = store_path
        self.runs_dir = runs_dir
        self.max_jobs = max_jobs
        self.on_finished = on_finished
        self.jobs: dict[str, Job] = {}
        self._queue: deque[Job] = deque()
        self._lock = threading.Lock()
        self._threads: dict[str, threading.Thread] = {}
        self.version = 0  # bumped on every change of any job (the job list's stream reads it)

    def active(self) -> list[Job]:
        """Running jobs first, then the queued ones in the order they will start."""
        running = [j for j in self.jobs.values() if j.status in ("starting", "running")]
        return running + [j for j in self._queue if j.status == "queued"]

    def counts(self) -> dict[str, int]:
        out = {"running": 0, "queued": 0}
        for j in self.jobs.values():
            if j.status in ("starting", "running"):
                out["running"] += 1
            elif j.status == "queued":
                out["queued"] += 1
        return out

    def position(self, job: Job) -> int | None:
        """1 for the next queued job to start; None when it is not queued."""
        for k, queued in enumerate(self._queue, 1):
            if queued is job:
                return k
        return None

    def start(self, launch: Launch) -> Job:
        """Queue a job; it starts at once when fewer than ``max_jobs`` are running."""
        job = Job(id=uuid.uuid4().hex[:12], launch=launch)
        with self._lock:
            self.jobs[job.id] = job
            self._queue.append(job)
        self._pump()
        return job

    def _pump(self) -> None:
        starting = []
        with self._lock:
            running = sum(1 for j in self.jobs.values() if j.status in ("starting", "running"))
            while self._queue and running < self.max_jobs:
                job = self._queue.popleft()
                if job.status != "queued":
                    continue
                job.status = "starting"
                job.started = job.phase_started = time.monotonic()
                job.version += 1
                running += 1
                thread = threading.Thread(target=self._work, args=(job,),
                                          name=f"ragmeter-job-{job.id}", daemon=True)
                self._threads[job.id] = thread
                starting.append(thread)
            self.version += 1
        for thread in starting:
            thread.start()

    def cancel(self, job_id: str) -> Job | None:
        with self._lock:
            job = self.jobs.get(job_id)
            if job is not None and job.status == "queued":
                job.status = "cancelled"
                self._queue = deque(j for j in self._queue if j is not job)
            elif job is not None and job.status in ("starting", "running"):
                job.cancel_requested = True
            if job is not None:
                job.version += 1
                self.version += 1
        return job

    def wait(self, job_id: str, timeout: float | None = None) -> None:
        """Wait for a job to end (a queued job: to start, then to end)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        job = self.jobs.get(job_id)
        while job is not None and job.status == "queued":
            if deadline is not None and time.monotonic() > deadline:
                return
            time.sleep(0.02)
        thread = self._threads.get(job_id)
        if thread is not None:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def _work(self, job: Job) -> None:
        phases = iter(job.launch.spec.phases)
        passes = [0]
        counters = ("calls", "unscored", "prompt_tokens", "completion_tokens")
        before = dict.fromkeys(counters, 0)  # the finished passes' totals
        cost_before: list[float | None] = [None]
        current: list[Any] = [None]  # the runner pass's RunStats (one per pass)

        def progress(stats: Any, done: int, todo: int) -> None:
            if job.cancel_requested:
                raise JobCancelled()
            now = time.monotonic()
            if stats is not current[0]:  # a new runner pass: counters go on from the last's
                current[0] = stats
                passes[0] += 1
                job.phase = next(phases, f"pass {passes[0]}")
                job.phase_started = now
                before.update({k: getattr(job, k) for k in counters})
                cost_before[0] = job.cost_usd
            job.status = "running"
            job.done, job.todo = done, todo
            for k in counters:
                setattr(job, k, before[k] + int(getattr(stats, k) or 0))
            if stats.cost_usd is not None:
                job.cost_usd = (cost_before[0] or 0.0) + stats.cost_usd
            elapsed = now - job.phase_started
            job.eta_s = round(elapsed / done * (todo - done), 1) if done and todo else None
            job.version += 1
            self.version += 1

        job.status = "running"
        try:
            job.run_id = run_job(job.launch, store_path=self.store_path,
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
            self._pump()
