"""The local model's request batcher (llm/local_batch.py) with a stand-in for the model:
callers that give up, and a queue that must keep draining.  Fast; no model."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future

from ragmeter.llm.base import Request, Response, Usage
from ragmeter.llm.local_batch import RequestBatcher


def _req(rid: str) -> Request:
    return Request.chat(rid, [{"role": "user", "content": f"question {rid}"}])


def _answer(requests: Sequence[Request]) -> list[Response | BaseException]:
    return [Response(text=f"answer {r.id}", usage=Usage(1, 1), latency_ms=0.0)
            for r in requests]


def test_a_request_cancelled_before_its_batch_starts_is_not_run() -> None:
    seen: list[list[str]] = []

    def run_batch(requests: Sequence[Request]) -> list[Response | BaseException]:
        seen.append([r.id for r in requests])
        return _answer(requests)

    batcher = RequestBatcher(run_batch, 4, 0.0)
    fa, start = batcher.submit(_req("a"))
    fb, _ = batcher.submit(_req("b"))
    assert start and fb.cancel()  # b's caller gave up while it waited
    batcher.drain()
    assert seen == [["a"]] and fa.result().text == "answer a" and fb.cancelled()
    _, start = batcher.submit(_req("c"))
    assert start  # the drain ended cleanly: the next request starts a new one


def test_a_caller_giving_up_mid_batch_still_gets_its_answer_and_the_queue_drains() -> None:
    """Seen on a loaded machine (rubric run, batch of 10 reader calls > the 120 s timeout):
    the caller's cancel hit a batch already running, ``set_result`` then raised
    InvalidStateError, the drain died with ``_draining`` set and every later call hung."""
    futures: dict[str, Future[Response]] = {}

    def run_batch(requests: Sequence[Request]) -> list[Response | BaseException]:
        assert not futures["a"].cancel()  # too late: the batch has started
        return _answer(requests)

    batcher = RequestBatcher(run_batch, 2, 0.0)
    futures["a"], _ = batcher.submit(_req("a"))
    batcher.drain()
    assert futures["a"].result().text == "answer a"
    futures["b"], start = batcher.submit(_req("b"))
    assert start
    batcher.drain()
    assert futures["b"].result().text == "answer b"
