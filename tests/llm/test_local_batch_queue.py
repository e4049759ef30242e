"""The request queue of the local backend's batching (no model): a caller that gave up."""

from __future__ import annotations

import threading

from ragmeter.llm.base import Request, Response, Usage
from ragmeter.llm.local_batch import RequestBatcher


def _request(i: int) -> Request:
    return Request.chat(str(i), [{"role": "user", "content": f"q {i}"}])


def test_a_cancelled_caller_neither_runs_nor_stops_the_queue():
    """The runner cancels a call that outlives its timeout; the batch already running must
    finish without error and later requests must still be answered (before the fix, setting
    the cancelled future's result killed the drain and every later request waited forever)."""
    started, release, seen = threading.Event(), threading.Event(), []

    def run_batch(requests):
        seen.append([r.id for r in requests])
        started.set()
        release.wait(5)
        return [Response(text=r.id, usage=Usage(1, 1)) for r in requests]

    batcher = RequestBatcher(run_batch, batch_size=2, wait_s=0.0)
    first, start = batcher.submit(_request(1))
    assert start
    drain = threading.Thread(target=batcher.drain)
    drain.start()
    assert started.wait(5)
    assert first.cancel()  # what asyncio's wrap_future does when the runner's timeout fires
    waiting, _ = batcher.submit(_request(2))
    assert waiting.cancel()  # cancelled before its batch: it must never run
    release.set()
    drain.join(5)
    assert not drain.is_alive() and first.cancelled() and seen == [["1"]]
    later, start = batcher.submit(_request(3))
    assert start  # the drain ended cleanly, so this caller starts a new one
    batcher.drain()
    assert later.result(5).text == "3" and seen == [["1"], ["3"]]

