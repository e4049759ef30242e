"""The store's bulk lookup around its chunk boundary (``Store.get_many`` asks SQLite for
``LOOKUP_CHUNK`` keys a query): no key is skipped, so a resumed run pays for nothing twice."""

from __future__ import annotations

from typing import Any

import pytest

from ragmeter.backends._types import BaseBackend, Request, Response, Usage
from ragmeter.runner._run import RunnerConfig, estimate_requests, run_requests
from ragmeter.runner._store import LOOKUP_CHUNK, Store

IDENTITY = {"backend": "counting", "model": "m"}


class Counting(BaseBackend):
    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def identity(self) -> dict[str, Any]:
        return dict(IDENTITY)

    async def complete(self, request: Request) -> Response:
        self.calls += 1
        return Response(f"answer {request.id}", Usage(2, 1))


def requests(n: int) -> list[Request]:
    return [Request.chat(f"q{i}", [{"role": "user", "content": f"question {i}"}])
            for i in range(n)]


@pytest.mark.parametrize("n", [LOOKUP_CHUNK - 1, LOOKUP_CHUNK, LOOKUP_CHUNK + 1,
                               2 * LOOKUP_CHUNK, 2 * LOOKUP_CHUNK + 1])
def test_get_many_finds_every_key_across_chunks(tmp_path, n):
    store = Store(tmp_path / "s.sqlite")
    reqs = requests(n)
    keys = [r.cache_key(IDENTITY) for r in reqs]
    for key, r in zip(keys, reqs, strict=True):
        store.put(key, r, IDENTITY, Response(f"answer {r.id}"))
    found = store.get_many(keys + ["v1:absent"])
    assert set(found) == set(keys)
    assert [found[k].text for k in keys] == [f"answer {r.id}" for r in reqs]


def test_a_rerun_of_1001_stored_calls_makes_none(tmp_path):
    """1,001 = two full chunks and one key more: every response is found on the re-run."""
    assert LOOKUP_CHUNK == 500  # the boundary this test straddles
    path = tmp_path / "calls.sqlite"
    config = RunnerConfig(concurrency=16, progress=False)
    first = Counting()
    out = run_requests(requests(1001), first, Store(path), config)
    assert first.calls == 1001 and all(o.ok for o in out)
    again = Counting()
    store = Store(path)
    assert estimate_requests(requests(1001), again, store).calls == 0
    out = run_requests(requests(1001), again, store, config)
    assert again.calls == 0
    assert all(o.cached for o in out)
    assert [o.response.text for o in out] == [f"answer q{i}" for i in range(1001)]
