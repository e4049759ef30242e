"""Failure is visible (issue 25 item 5), decided once for every verb that calls a model.

A run *failed as a whole* when every model call it made failed (its ``summary["spend"]``
counts calls: none answered, none from the store, some failed), or when it kept nothing (its
coverage has rows and none scored).  :func:`check_run` then raises
:class:`~ragmeter.errors.RunFailedError` carrying the Result, with the cause in one line (the
most common reason and an example of it) and a hint in Python words and in flags; the CLI
prints the flags' version and exits 1 (``ragmeter.cli.main``).  A run that failed in part is
returned as it is; :func:`partial_note` is the line the command line prints beside the
coverage (the count of unscored items, the most common reason, an example).

Reasons are the runner's codes for failed calls (``ragmeter.errors.BackendError.reason``:
``connection``, ``timeout``, ``http_<status>``, ``bad_request``, ``bad_response``,
``context_length``, ``local_error``, ...), possibly prefixed by a family's step
(``generation_failed:connection``), or a family's own reason for an unusable reply.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["check_run", "run_failure", "partial_note", "call_failure", "hint"]

_CALL_REASONS = {"connection", "timeout", "bad_request", "bad_response", "context_length",
                 "local_error", "backend_error", "stopped", "replay_miss"}

# reason (or its prefix) -> (fix in Python words, fix in flags)
_HINTS: tuple[tuple[str, str, str], ...] = (
    ("connection", "the endpoint could not be reached: check the backend's base_url= and that "
                   "the server is up",
     "the endpoint could not be reached: check --base-url (or --endpoint) and that the "
     "server is up"),
    ("timeout", "the endpoint did not answer in time: raise the backend's timeout= or lower "
                "its concurrency=",
     "the endpoint did not answer in time: raise --timeout or lower --concurrency"),
    ("http_401", "the endpoint refused the key: check api_key= (or RAGMETER_API_KEY / "
                 "OPENAI_API_KEY)",
     "the endpoint refused the key: set RAGMETER_API_KEY or OPENAI_API_KEY (or the "
     "endpoint's key in endpoints.toml)"),
    ("http_403", "the endpoint refused the key: check api_key= (or RAGMETER_API_KEY / "
                 "OPENAI_API_KEY)",
     "the endpoint refused the key: set RAGMETER_API_KEY or OPENAI_API_KEY (or the "
     "endpoint's key in endpoints.toml)"),
    ("http_404", "the endpoint knows no such model or path: check model= and base_url= (it "
                 "usually ends in /v1)",
     "the endpoint knows no such model or path: check --model and --base-url (it usually "
     "ends in /v1)"),
    ("http_429", "the endpoint rate-limits these calls: lower concurrency=, set rpm=, or try "
                 "later",
     "the endpoint rate-limits these calls: lower --concurrency, set --rpm, or try later"),
    ("http_5", "the endpoint failed on its side: try again later",
     "the endpoint failed on its side: try again later"),
    ("bad_response", "the endpoint's replies are not OpenAI chat completions: check base_url= "
                     "(it usually ends in /v1)",
     "the endpoint's replies are not OpenAI chat completions: check --base-url (it usually "
     "ends in /v1)"),
    ("context_length", "the prompts are longer than the model's context: use a model with a "
                       "longer one",
     "the prompts are longer than the model's context: use a model with a longer one "
     "(--model)"),
    ("bad_request", "the endpoint refused the requests: check model= and the endpoint's "
                    "options",
     "the endpoint refused the requests: check --model and the endpoint's options"),
    ("local_error", "the offline model failed: `ragmeter models` shows its install",
     "the offline model failed: `ragmeter models` shows its install"),
)
_DEFAULT_HINT = ("check the backend (its base_url, model and key)",
                 "check --backend, --model, --base-url and the key")
_UNUSABLE = ("none of the model's replies could be used (the result's items give each reason "
             "and detail); a larger model, or another scoring or strategy, may help",
             "none of the model's replies could be used (the items give each reason and "
             "detail); try a larger model (--model) or another --scoring/--strategy")


def call_failure(reason: str) -> bool:
    """True when ``reason`` says a model call failed (not that its reply was unusable)."""
    code = reason.rsplit(":", 1)[-1]
    return code in _CALL_REASONS or code.startswith("http_")


def hint(reason: str) -> tuple[str, str]:
    """How to fix a failed call with this reason: (Python words, flags)."""
    code = reason.rsplit(":", 1)[-1]
    for prefix, python, flags in _HINTS:
        if code.startswith(prefix):
            return python, flags
    return _DEFAULT_HINT


def _top(reasons: Mapping[str, int]) -> tuple[str, int] | None:
    if not reasons:
        return None
    return max(reasons.items(), key=lambda kv: (kv[1], kv[0]))


def _example(items: Iterable[Mapping[str, Any]], reason: str, limit: int = 2000) -> str | None:
    """The detail of the first item unscored for ``reason`` (``detail`` beside ``reason``, or
    ``<x>_detail`` beside ``<x>_reason``, at the top of the item or one level down)."""
    for n, item in enumerate(items):
        if n >= limit:
            return None
        for d in (item, *(v for v in item.values() if isinstance(v, Mapping))):
            for key, value in d.items():
                if key.endswith("reason") and value == reason:
                    detail = d.get(key[:-len("reason")] + "detail")
                    if isinstance(detail, str) and detail.strip():
                        return " ".join(detail.split())[:200]
    return None


def _spend_counts(summary: Mapping[str, Any]) -> tuple[int, int, int] | None:
    """(answered calls, calls from the store, failed calls) of the run's spend."""
    spend = summary.get("spend")
    if not isinstance(spend, Mapping):
        return None
    cached = spend.get("cached")

    def count(value: Any) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    return (count(spend.get("calls")),
            count(cached.get("calls")) if isinstance(cached, Mapping) else 0,
            count(spend.get("failed_calls")))


def run_failure(result: Any) -> tuple[str, str, str] | None:
    """``(cause, fix in Python words, fix in flags)`` when ``result``'s run failed as a whole
    (every model call failed, or nothing was kept), else None.  Pure: reads the summary, the
    coverage and, for an example of the reason, the first unscored items."""
    summary = result.summary
    if summary.get("dry_run"):
        return None
    cov = result.coverage
    reasons: Mapping[str, int] = cov.get("reasons") or {}
    top = _top(reasons)
    spend = _spend_counts(summary)
    every_call_failed = spend is not None and spend[2] > 0 and spend[0] == spend[1] == 0
    nothing_kept = cov.get("rows", 0) > 0 and cov.get("scored", 0) == 0
    if not (every_call_failed or nothing_kept):
        return None
    example = _example(result.iter_items(), top[0]) if top else None
    why = ""
    if top:
        why = f" (most often {top[0]}: {top[1]}" + (f"; e.g. {example}" if example else "") + ")"
    if every_call_failed:
        assert spend is not None
        python, flags = hint(top[0]) if top else _DEFAULT_HINT
        calls = f"all {spend[2]} of its model calls" if spend[2] > 1 else "its model call"
        return f"{calls} failed{why}", python, flags
    python, flags = (hint(top[0]) if top and call_failure(top[0]) else _UNUSABLE)
    cause = f"it kept nothing: none of its {cov['rows']} item(s) could be scored{why}"
    return cause, python, flags


def check_run(result: Any, component: str) -> Any:
    """``result``, or :class:`~ragmeter.errors.RunFailedError` (carrying it) when its run
    failed as a whole.  Every verb that calls a model returns through this."""
    found = run_failure(result)
    if found is None:
        return result
    from ragmeter.errors import RunFailedError

    cause, python, flags = found
    raise RunFailedError(component, cause, python, result, cli_fix=flags)


def partial_note(result: Any) -> str | None:
    """The line beside the coverage of a run that failed in part: how many items are
    unscored, the most common reason and an example; None when every item was scored."""
    if result.summary.get("dry_run"):
        return None
    from ragmeter.result import coverage_text

    cov = result.coverage
    if not cov.get("unscored"):
        return None
    top = _top(cov.get("reasons") or {})
    example = _example(result.iter_items(), top[0]) if top else None
    text = f"coverage {coverage_text(cov)}"
    if example:
        text += f"; e.g. {example}"
    if top and call_failure(top[0]):
        text += " (run again to retry the failed calls: the others are stored)"
    return text
