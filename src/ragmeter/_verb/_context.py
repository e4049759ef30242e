"""Plumbing shared by the public family modules (``ragmeter.multilingual`` and the others).

Private: the public names are the family functions and :class:`ragmeter.result.Result`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from ragmeter.io import FieldMap, is_path, parse_field_options, source_label

__all__ = ["field_map", "model_context", "input_record", "dry_run_result", "async_variant"]

T = TypeVar("T")


def field_map(fields: Mapping[str, str] | Iterable[str] | None, component: str,
              aliases: Mapping[str, tuple[str, ...]] | None = None) -> FieldMap:
    """``fields`` as ``{"pred_answer": "answer"}`` or CLI-style ``["pred_answer=answer"]``;
    ``aliases`` are the reader's fallback column names (:class:`ragmeter.io.FieldMap`)."""
    if not fields:
        fm = FieldMap()
    elif isinstance(fields, FieldMap):
        fm = fields
    elif isinstance(fields, Mapping):
        fm = FieldMap({str(k): str(v) for k, v in fields.items()})
    else:
        from ragmeter._verb._options import names

        fm = parse_field_options(names(fields, "fields", component), component=component)
    return fm.with_aliases(aliases) if aliases else fm


def model_context(backend: Any, store: Any, *, replay: bool = False,
                  progress: bool | None = None, description: str = "calls",
                  on_progress: Any = None) -> tuple[Any, Any, Any]:
    """``(backend object, Store, RunnerConfig)`` for a judged verb.

    ``backend`` is a :mod:`ragmeter.backends` value (None: the local model); ``store`` a
    :class:`ragmeter.runner._store.Store`, a path, or None for the default store the CLI uses.
    ``on_progress(stats, done, todo)`` is called as calls finish (the web app's live
    progress); an exception it raises stops the run, and the finished calls stay stored.
    """
    from ragmeter.backends import resolve
    from ragmeter.runner._store import Store

    choice = resolve(backend)
    the_store = store if isinstance(store, Store) else Store(store)
    from ragmeter.runner import config_for

    config = config_for(choice, replay=replay, progress=progress, description=description)
    if on_progress is not None:
        from ragmeter._util._record import replace

        config = replace(config, on_progress=on_progress)
    return choice.instance(), the_store, config


def input_record(data: Any, rows: int | None = None) -> Any:
    """What a run record says about an input: the file with its SHA-256, or a label."""
    from ragmeter.runs._records import InputFile

    if is_path(data):
        return InputFile.of(data, rows=rows)
    return InputFile(path=source_label(data), rows=rows)


def dry_run_result(family: str, verb: str, estimate: Any, **extra: Any) -> Any:
    """A :class:`Result` for ``dry_run=True``: the estimate, nothing called."""
    from ragmeter._util._record import as_dict
    from ragmeter.result import Result

    summary = {"family": family, "dry_run": True, **as_dict(estimate), **extra,
               "coverage": {"rows": estimate.requests, "scored": 0,
                            "unscored": estimate.requests, "reasons": {"dry_run": 1}}}
    result = Result(family, verb, summary, items=[])
    result.dry_run_text = estimate.render()  # type: ignore[attr-defined]
    return result


def offline_dry_run(family: str, verb: str, rows: int, text: str, **fields: Any) -> Any:
    """A :class:`Result` for ``dry_run=True`` of a verb that calls no model (a detector, a
    fitted judge): ``rows`` would be scored locally, 0 requests; ``text`` is what it prints."""
    from ragmeter.result import Result

    result = Result(family, verb, {
        "family": family, "dry_run": True, **fields, "requests": 0,
        "coverage": {"rows": rows, "scored": 0, "unscored": rows,
                     "reasons": {"dry_run": 1}}}, items=[])
    result.dry_run_text = text  # type: ignore[attr-defined]
    return result


def async_variant(func: Callable[..., T]) -> Callable[..., Any]:
    """The ``a``-prefixed form of a judged verb: awaitable, runs the verb in a worker thread
    so the caller's event loop stays responsive (model calls inside use their own loop)."""

    @functools.wraps(func)
    async def wrapper(*args: Any, **kwargs: Any) -> T:
        import asyncio

        return await asyncio.to_thread(func, *args, **kwargs)

    wrapper.__name__ = "a" + func.__name__
    wrapper.__qualname__ = "a" + func.__qualname__
    wrapper.__doc__ = f"Async form of :func:`{func.__name__}` (same arguments, awaitable)."
    return wrapper
