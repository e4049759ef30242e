"""Gathering concurrent requests to the local model into batches.

The runner keeps up to ``--concurrency`` calls in flight; each lands here.  The model thread
takes the oldest waiting request and every other waiting request that can share its forward
pass, up to ``batch_size``, after waiting at most ``wait_s`` for the batch to fill:

* choice-scoring requests batch with each other (one left-padded forward pass);
* greedy generation requests batch when their output parameters are equal (one left-padded
  ``model.generate``);
* anything else (sampling, or a runtime without batched forms) runs alone.

Greedy outputs equal one-at-a-time outputs and choice probabilities agree within 1e-4
(``tests/llm/test_local_batch.py`` on the real model); padding changes the float arithmetic,
so they are not bit-identical, and batching stays opt-in (``batch_size`` 1 is the default).

When more requests wait than fit in one batch and the batcher is given ``measure`` (the
local backend gives each request's prompt length in tokens), a batch is made of requests of
similar length: the waiting requests that may share a batch are sorted by length and split
into the fewest batches with the least padding (:func:`fewest_padded_batches`), and the batch
holding the oldest request is taken.  A left-padded batch computes every row at its longest
prompt's length, so mixing 50-token prompts with 400-token ones wasted most of a batch (the
demo in file order: 16% of its prompt tokens were padding).  The oldest request is always in
the batch taken, so none waits for ever; without ``measure`` (or with room for every waiting
request) batches are taken in arrival order.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future

from ragmeter.backends._types import Request, Response, canonical_json

__all__ = ["RequestBatcher", "batch_key", "fewest_padded_batches"]


def batch_key(request: Request) -> str | None:
    """Requests with equal keys may share a batch; None: this request runs alone."""
    if request.choices is not None:
        return "choices"
    params = request.output_params()
    if float(params.get("temperature") or 0.0) > 0:
        return None  # sampling: a batch would change the random stream
    return "generate:" + canonical_json(params)


def fewest_padded_batches(lengths: Sequence[int], batch_size: int) -> list[range]:
    """Split ``lengths`` (sorted ascending) into consecutive batches of at most ``batch_size``:
    the fewest batches there can be, and among such splits one with the fewest padded tokens
    (a batch costs ``len(batch) * max(batch)``).  Returns index ranges, shortest first.

    Fewest batches first: each batch also pays for its decoding steps, which on a small CPU
    model cost more than the padding of merging short prompts into a batch of longer ones.
    Dynamic programming over (prefix, batches); more than ``_EXACT_LIMIT`` lengths are cut
    into runs of ``batch_size`` from the shortest instead.
    """
    n = len(lengths)
    if n == 0:
        return []
    count = -(-n // batch_size)
    if n > _EXACT_LIMIT:
        return [range(i, min(i + batch_size, n)) for i in range(0, n, batch_size)]
    inf = float("inf")
    # best[g][j]: least padded tokens for the first j lengths in g batches; cut[g][j]: start
    # of the last batch
    best = [[inf] * (n + 1) for _ in range(count + 1)]
    cut = [[0] * (n + 1) for _ in range(count + 1)]
    best[0][0] = 0
    for g in range(1, count + 1):
        for j in range(g, min(n, g * batch_size) + 1):
            for i in range(max(g - 1, j - batch_size), j):
                cost = best[g - 1][i] + (j - i) * lengths[j - 1]
                if cost < best[g][j]:
                    best[g][j], cut[g][j] = cost, i
    out: list[range] = []
    j = n
    for g in range(count, 0, -1):
        out.append(range(cut[g][j], j))
        j = cut[g][j]
    return out[::-1]


_EXACT_LIMIT = 512  # lengths split exactly by fewest_padded_batches (n * n/B * B steps)


class RequestBatcher:
    """A queue of requests drained in batches by one worker (the model thread).

    ``run_batch(requests)`` returns one Response or exception per request, in order.
    ``submit`` is called from any thread; ``drain`` runs on the model thread until the queue
    is empty.
    """

    def __init__(self, run_batch: Callable[[Sequence[Request]], list[Response | BaseException]],
                 batch_size: int, wait_s: float,
                 measure: Callable[[Request], int] | None = None) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.run_batch = run_batch
        self.measure = measure  # a request's length (prompt tokens), called on the model thread
        self.batch_size = int(batch_size)
        self.wait_s = max(0.0, float(wait_s))
        self._pending: list[tuple[Request, Future[Response]]] = []
        self._cond = threading.Condition()
        self._draining = False
        self.batch_sizes: list[int] = []  # sizes run so far (benchmarks and tests read it)
        self._lengths: dict[int, tuple[Request, int]] = {}  # id -> (request, measured length)

    def submit(self, request: Request) -> tuple[Future[Response], bool]:
        """Queue ``request``; returns its future and whether the caller must start a drain."""
        future: Future[Response] = Future()
        with self._cond:
            self._pending.append((request, future))
            start = not self._draining
            self._draining = True
            self._cond.notify_all()
        return future, start

    def drain(self) -> None:
        """Run batches until nothing is waiting (on the model thread).

        A request whose caller gave up (its future cancelled) before its batch starts is
        dropped; once a batch starts its futures can no longer be cancelled, so every answer
        reaches its future.  (Setting a result on a cancelled future raised
        ``InvalidStateError`` here, which ended the drain with ``_draining`` still set: every
        later request then waited forever.)
        """
        try:
            while True:
                with self._cond:
                    deadline = time.monotonic() + self.wait_s
                    while len(self._pending) < self.batch_size:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            break
                        self._cond.wait(left)
                    if not self._pending:
                        self._draining = False
                        return
                    waiting = list(self._pending)
                # chosen outside the lock: measuring may tokenize (or load the model), and
                # callers keep submitting meanwhile; only this thread takes from the queue
                chosen = self._choose(waiting)
                with self._cond:
                    taken = {id(entry) for entry in chosen}
                    self._pending = [e for e in self._pending if id(e) not in taken]
                for request, _ in chosen:
                    self._lengths.pop(id(request), None)
                group = [(request, future) for request, future in chosen
                         if future.set_running_or_notify_cancel()]
                if not group:
                    continue
                self.batch_sizes.append(len(group))
                try:
                    outcomes = self.run_batch([request for request, _ in group])
                except BaseException as exc:  # noqa: BLE001 - handed to every waiting caller
                    outcomes = [exc] * len(group)
                for (_, future), outcome in zip(group, outcomes, strict=True):
                    if isinstance(outcome, BaseException):
                        future.set_exception(outcome)
                    else:
                        future.set_result(outcome)
        except BaseException:
            with self._cond:  # never leave the queue without a drainer
                self._draining = False
            raise

    def _choose(self, waiting: Sequence[tuple[Request, Future[Response]]]
                ) -> list[tuple[Request, Future[Response]]]:
        """The next batch among ``waiting`` (oldest first), in arrival order: the oldest
        request and the others that may share its batch (see the module docstring)."""
        key = batch_key(waiting[0][0])
        if key is None:
            return [waiting[0]]
        same = [entry for entry in waiting if batch_key(entry[0]) == key]
        if len(same) <= self.batch_size or self.measure is None:
            return same[:self.batch_size]
        try:
            lengths = [self._length(entry[0], self.measure) for entry in same]
        except Exception:  # noqa: BLE001 - the batch itself reports the problem
            return same[:self.batch_size]
        order = sorted(range(len(same)), key=lambda i: (lengths[i], i))
        for group in fewest_padded_batches([lengths[i] for i in order], self.batch_size):
            members = [order[k] for k in group]
            if 0 in members:  # the oldest request's batch
                return [same[i] for i in sorted(members)]
        raise AssertionError("every request is in one batch")  # pragma: no cover

    def _length(self, request: Request, measure: Callable[[Request], int]) -> int:
        known = self._lengths.get(id(request))
        if known is None or known[0] is not request:
            known = (request, int(measure(request)))
            self._lengths[id(request)] = known
        return known[1]
