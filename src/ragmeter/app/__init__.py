"""Run your own RAG application on a test set and keep what comes back: its answer, the
contexts it retrieved and their ids, for every row, in a file every family reads.

The façade: the verb (``ragmeter.app.run(test_set, target, **options)``), the target values
(:func:`http`, :func:`chat`, :func:`function`), the call options and the family's error."""

from __future__ import annotations

from ragmeter.app._errors import AppFailedError
from ragmeter.app._types import AppCalls, ChatApp, FunctionApp, HttpApp
from ragmeter.app._verbs import (
    arun,
    chat,
    function,
    http,
    run,
)

__all__ = [
    "AppCalls",
    "AppFailedError",
    "ChatApp",
    "FunctionApp",
    "HttpApp",
    "arun",
    "chat",
    "function",
    "http",
    "run",
]
