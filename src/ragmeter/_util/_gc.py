"""Pausing Python's cyclic garbage collector around a loop that allocates much and builds no
cycle (issue 26.3)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc"]


@contextmanager
def paused_gc() -> Iterator[None]:
    """Run the block with the cyclic collector paused (reference counting still frees every
    object as it goes, so memory does not grow): a scoring loop allocates some 20 objects a
    row, none in a cycle, and with the collector on, each block of rows that is still alive
    when the next is decoded is traversed again and again, up to full collections of the whole
    heap (trace score: 7-8 against 5 us a row, measured).  Restores the collector's state."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
