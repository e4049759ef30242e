"""asyncio helpers with no domain."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

__all__ = ["within"]

T = TypeVar("T")

_timeout = getattr(asyncio, "timeout", None)  # Python 3.11+


async def within(seconds: float | None, awaitable: Awaitable[T]) -> T:
    """``await awaitable``, raising ``asyncio.TimeoutError`` after ``seconds`` (None: no
    limit), as ``asyncio.wait_for`` does, but on Python 3.11+ in the calling task: no task is
    made and scheduled per call, so the awaited work starts at once (``asyncio.timeout``)."""
    if seconds is None:
        return await awaitable
    if _timeout is None:  # Python 3.10
        return await asyncio.wait_for(awaitable, seconds)
    async with _timeout(seconds):
        return await awaitable
