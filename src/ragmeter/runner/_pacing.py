"""The runner's pacing and display: the requests/tokens-per-minute token bucket and the
progress bar (rate, ETA, tokens, failures).  Private to :mod:`ragmeter.runner._run`.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragmeter.runner._types import RunnerConfig, RunStats


# ---------------------------------------------------------------- limits


class _TokenBucket:
    """A token bucket refilled at ``per_minute / 60`` per second, holding up to ten seconds'
    worth.  A take larger than the bucket waits for a full bucket and leaves a debt."""

    def __init__(self, per_minute: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, per_minute / 6.0)
        self.level = self.capacity
        self.stamp = time.monotonic()
        self.lock = asyncio.Lock()

    def _refill(self) -> None:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    async def take(self, amount: float) -> None:
        async with self.lock:
            need = min(amount, self.capacity)
            while True:
                self._refill()
                if self.level >= need:
                    self.level -= amount
                    return
                await asyncio.sleep((need - self.level) / self.rate)

    def adjust(self, delta: float) -> None:
        """Correct an estimate once the real count is known (positive: more was used)."""
        self._refill()
        self.level = min(self.capacity, self.level - delta)


# ---------------------------------------------------------------- progress


class _Progress:
    def __init__(self, config: RunnerConfig, total: int, stats: RunStats) -> None:
        self.stats = stats
        self.bar: Any = None
        self.task: Any = None
        self.callback = config.on_progress
        self.total = total
        self.done = 0
        if self.callback is not None:
            self.callback(stats, 0, total)
        if not config.progress or total == 0:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        from ragmeter._util._console import console

        self.bar = Progress(
            TextColumn("{task.description}", style="bold", markup=False), BarColumn(),
            MofNCompleteColumn(), TaskProgressColumn(),
            TextColumn("{task.fields[rate]}", markup=False), TimeElapsedColumn(),
            TextColumn("ETA", markup=False), TimeRemainingColumn(),
            TextColumn("{task.fields[info]}", markup=False),
            console=console(stderr=True), transient=False, refresh_per_second=4)
        self.start = time.monotonic()
        self.bar.start()
        self.task = self.bar.add_task(config.description, total=total, rate="", info="")

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self.callback is not None:
            self.callback(self.stats, self.done, self.total)
        if self.bar is None:
            return
        s = self.stats
        elapsed = max(1e-6, time.monotonic() - self.start)
        info = f"tok {s.prompt_tokens}+{s.completion_tokens}"
        if s.cost_usd is not None:
            info += f" ${s.cost_usd:.4f}"
        if s.cached:
            info += f" cached {s.cached}"
        if s.retries:
            info += f" retries {s.retries}"
        if s.unscored:
            info += f" unscored {s.unscored}"
        self.bar.update(self.task, advance=n, rate=f"{s.calls / elapsed:.1f} calls/s", info=info)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
