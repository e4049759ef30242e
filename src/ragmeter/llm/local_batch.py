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
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future

from ragmeter.llm.base import Request, Response, canonical_json

__all__ = ["RequestBatcher", "batch_key"]


def batch_key(request: Request) -> str | None:
    """Requests with equal keys may share a batch; None: this request runs alone."""
    if request.choices is not None:
        return "choices"
    params = request.output_params()
    if float(params.get("temperature") or 0.0) > 0:
        return None  # sampling: a batch would change the random stream
    return "generate:" + canonical_json(params)


class RequestBatcher:
    """A queue of requests drained in batches by one worker (the model thread).

    ``run_batch(requests)`` returns one Response or exception per request, in order.
    ``submit`` is called from any thread; ``drain`` runs on the model thread until the queue
    is empty.
    """

    def __init__(self, run_batch: Callable[[Sequence[Request]], list[Response | BaseException]],
                 batch_size: int, wait_s: float) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.run_batch = run_batch
        self.batch_size = int(batch_size)
        self.wait_s = max(0.0, float(wait_s))
        self._pending: list[tuple[Request, Future[Response]]] = []
        self._cond = threading.Condition()
        self._draining = False
        self.batch_sizes: list[int] = []  # sizes run so far (benchmarks and tests read it)

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
                    group = [(request, future) for request, future in self._take_group()
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

    def _take_group(self) -> list[tuple[Request, Future[Response]]]:
        first = self._pending[0]
        key = batch_key(first[0])
        if key is None:
            return [self._pending.pop(0)]
        group: list[tuple[Request, Future[Response]]] = []
        rest: list[tuple[Request, Future[Response]]] = []
        for entry in self._pending:
            if len(group) < self.batch_size and batch_key(entry[0]) == key:
                group.append(entry)
            else:
                rest.append(entry)
        self._pending = rest
        return group

