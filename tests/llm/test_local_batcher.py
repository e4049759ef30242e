"""The local model's request batcher (llm/local_batch.py) with a stand-in for the model:
callers that give up, and a queue that must keep draining.  Fast; no model."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future

import pytest

from ragmeter.backends._local._batch import RequestBatcher, fewest_padded_batches
from ragmeter.backends._types import Request, Response, Usage


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


def _recording(seen: list[list[str]]):
    def run_batch(requests: Sequence[Request]) -> list[Response | BaseException]:
        seen.append([r.id for r in requests])
        return _answer(requests)
    return run_batch


def _length_of(lengths: dict[str, int]):
    measured: list[str] = []

    def measure(request: Request) -> int:
        measured.append(request.id)
        return lengths[request.id]
    return measure, measured


def test_batches_group_requests_of_similar_length_with_the_oldest_first() -> None:
    # arrival order mixes short and long prompts (the demo: 50-token no-document prompts
    # among 400-token Chinese ones); each batch holds the oldest waiting request
    lengths = {"a": 200, "b": 50, "c": 400, "d": 210, "e": 45, "f": 390, "g": 205, "h": 60,
               "i": 395}
    seen: list[list[str]] = []
    measure, measured = _length_of(lengths)
    batcher = RequestBatcher(_recording(seen), 3, 0.0, measure=measure)
    futures = [batcher.submit(_req(rid))[0] for rid in lengths]
    batcher.drain()
    # sorted: e45 b50 h60 | a200 g205 d210 | f390 i395 c400 (no padding to speak of); in
    # arrival order each batch holds the oldest request left: a, then b, then c
    assert seen == [["a", "d", "g"], ["b", "e", "h"], ["c", "f", "i"]]
    assert [f.result().text for f in futures] == [f"answer {rid}" for rid in lengths]
    assert sorted(measured) == sorted(lengths)  # each request measured once
    assert batcher._lengths == {}


@pytest.mark.parametrize(("lengths", "size", "expected"), [
    # the fewest batches (2), then the least padding: 2*50 + 3*210 beats 3*200 + 2*210
    ([45, 50, 200, 205, 210], 3, [[45, 50], [200, 205, 210]]),
    # a short prompt alone rather than padded to 100 in a batch of two
    ([10, 100, 100, 100], 3, [[10], [100, 100, 100]]),
    # the fewest batches first: 3 prompts in batches of 3 are one batch, padding and all
    ([10, 100, 400], 3, [[10, 100, 400]]),
    ([7], 4, [[7]]),
    ([], 4, []),
])
def test_fewest_padded_batches(lengths: list[int], size: int, expected: list[list[int]]) -> None:
    assert [[lengths[i] for i in r] for r in fewest_padded_batches(lengths, size)] == expected


def test_fewest_padded_batches_on_many_lengths_cuts_runs_from_the_shortest() -> None:
    lengths = list(range(1000))
    batches = fewest_padded_batches(lengths, 8)
    assert len(batches) == 125 and batches[0] == range(0, 8) and batches[-1] == range(992, 1000)


def test_without_measure_or_with_room_for_all_batches_keep_arrival_order() -> None:
    seen: list[list[str]] = []
    batcher = RequestBatcher(_recording(seen), 2, 0.0)
    for rid in "abc":
        batcher.submit(_req(rid))
    batcher.drain()
    assert seen == [["a", "b"], ["c"]]
    seen.clear()
    measure, measured = _length_of({"x": 9, "y": 1})
    batcher = RequestBatcher(_recording(seen), 4, 0.0, measure=measure)
    for rid in "xy":
        batcher.submit(_req(rid))
    batcher.drain()
    assert seen == [["x", "y"]] and measured == []  # nothing to choose: nothing measured


def test_a_failing_measure_falls_back_to_arrival_order() -> None:
    def measure(request: Request) -> int:
        raise RuntimeError("the model did not load")

    seen: list[list[str]] = []
    batcher = RequestBatcher(_recording(seen), 2, 0.0, measure=measure)
    futures = [batcher.submit(_req(rid))[0] for rid in "abc"]
    batcher.drain()
    assert seen == [["a", "b"], ["c"]] and all(f.done() for f in futures)
