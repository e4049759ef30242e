"""``ragmeter.generate(requests)``: send requests to a model, one response row each (cached).

The function behind ``ragmeter generate REQUESTS --out RESPONSES``, the generic batch command
the suites build on.

A request row is ``{"id", "messages": [{"role", "content"}, ...]}`` or ``{"id", "system",
"prompt"}``, with optional ``params`` (sampling parameters), ``choices`` (continuations to score)
and ``repeat`` (an index that makes otherwise identical requests distinct samples).

A response row is ``{"id", "text", "status": "ok"|"unscored", "reason", "usage", "latency_ms",
"cached"}``, plus ``choice_probs`` and ``choice_method`` when choices were asked, and
``detail`` for an unscored row.  Rows follow the input order; the file is written atomically.
A malformed request row is an error naming its line; a failed model call is an unscored row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragmeter._verb._context import async_variant
from ragmeter.backends._types import Message, Request
from ragmeter.io import Row, absent_error

__all__ = ["generate", "agenerate", "request_from_row", "response_row", "read_requests"]

COMPONENT = "generate"
ROLES = ("system", "user", "assistant")


def _text(row: Row, name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise row.error(f"is {type(value).__name__}, expected text.", component=COMPONENT,
                        field=name, fix="give a string.")
    return value


def request_from_row(row: Row) -> Request:
    """Build a :class:`Request` from one request row; InputError naming the line otherwise."""
    data = row.data
    if "id" not in data or data["id"] is None or str(data["id"]).strip() == "":
        raise absent_error(row, "id", component=COMPONENT, fix='give every request a unique "id".')
    if isinstance(data["id"], (dict, list, bool)):
        raise row.error("is not a string or number.", component=COMPONENT, field="id",
                        fix='give a string such as "q17".')
    rid = str(data["id"])
    messages: list[Message] = []
    if "messages" in data:
        raw = data["messages"]
        if not isinstance(raw, list) or not raw:
            raise row.error("is not a non-empty list.", component=COMPONENT, field="messages",
                            fix='write [{"role": "user", "content": "..."}].')
        for i, m in enumerate(raw, 1):
            if not isinstance(m, Mapping) or "role" not in m or "content" not in m:
                raise row.error(f"message {i} is not an object with role and content.",
                                component=COMPONENT, field="messages",
                                fix='write {"role": "user", "content": "..."}.')
            if m["role"] not in ROLES:
                raise row.error(f"message {i} has role {m['role']!r}.", component=COMPONENT,
                                field="messages", fix=f"use one of: {', '.join(ROLES)}.")
            messages.append(Message(str(m["role"]), _text(row, "messages", m["content"])))
    elif "prompt" in data:
        if data.get("system") not in (None, ""):
            messages.append(Message("system", _text(row, "system", data["system"])))
        messages.append(Message("user", _text(row, "prompt", data["prompt"])))
    else:
        found = ", ".join(sorted(map(str, data))) or "none"
        raise row.error(f'has neither "messages" nor "prompt". Found fields: {found}.',
                        component=COMPONENT, field="messages",
                        fix='give "messages": [{"role", "content"}...] or "prompt" (and '
                            'optional "system").')
    params = data.get("params") or {}
    if not isinstance(params, Mapping):
        raise row.error(f"is {type(params).__name__}, expected an object.", component=COMPONENT,
                        field="params", fix='write e.g. {"temperature": 0, "max_tokens": 64}.')
    choices = data.get("choices")
    if choices is not None:
        if (not isinstance(choices, list) or not choices
                or not all(isinstance(c, str) and c for c in choices)
                or len(set(choices)) != len(choices)):
            raise row.error(f"is {choices!r}, expected a list of distinct non-empty strings.",
                            component=COMPONENT, field="choices", fix='write ["yes", "no"].')
    repeat = data.get("repeat", 0)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 0:
        raise row.error(f"is {repeat!r}, expected a whole number >= 0.", component=COMPONENT,
                        field="repeat", fix="give 0, 1, 2, ...")
    return Request.chat(rid, messages, params=params, choices=choices, repeat=repeat)


def response_row(outcome: Any) -> dict[str, Any]:
    """The output row of one :class:`~ragmeter.runner._run.Outcome`."""
    request = outcome.request
    resp = outcome.response
    row: dict[str, Any] = {
        "id": request.id,
        "text": resp.text if resp is not None else None,
        "status": outcome.status,
        "reason": outcome.reason,
        "usage": resp.usage.to_dict() if resp is not None else None,
        "latency_ms": round(resp.latency_ms, 3) if resp is not None else None,
        "cached": outcome.cached,
    }
    if request.choices is not None:
        row["choice_probs"] = resp.choice_probs if resp is not None else None
        row["choice_method"] = resp.choice_method if resp is not None else None
    if outcome.status != "ok":
        row["detail"] = outcome.detail
    return row


def read_requests(data: Any) -> list[Request]:
    """Request rows (a path, list of dicts, DataFrame or Arrow table) as :class:`Request`s;
    a malformed row or a repeated id is an InputError naming its place."""
    from ragmeter.io import iter_rows

    requests: list[Request] = []
    seen: dict[str, int] = {}
    for row in iter_rows(data, component=COMPONENT):
        request = request_from_row(row)
        if request.id in seen:
            raise row.error(f"repeats id {request.id!r} (first on {row.unit} "
                            f"{seen[request.id]}).", component=COMPONENT, field="id",
                            fix='give every request a unique "id" (use "repeat" for samples).')
        seen[request.id] = row.number
        requests.append(request)
    return requests


def _signature(backend: Any) -> str:
    """No metric, but the responses have a source: the model that wrote them (issue 25)."""
    from ragmeter.judges._card import model_id
    from ragmeter.signature import Signature

    return Signature.make(COMPONENT, "responses-1", {"model": model_id(backend)}).render()


def generate(data: Any, *, backend: Any = None, store: Any = None, replay: bool = False,
             dry_run: bool = False, progress: bool | None = None,
             on_progress: Any = None) -> Any:
    """Send every request to ``backend`` (default: the offline local model) through the
    runner and the store; a :class:`~ragmeter.result.Result` whose items are the response rows
    in input order (failed calls: ``status`` "unscored" with a ``reason``).

    ``summary`` holds the coverage, the call counters (calls, cached, tokens, cost) and the
    store's path.  Completed calls are stored, so a second call makes none.
    """
    from ragmeter._verb._context import model_context
    from ragmeter.runner._run import RunStats, run_requests

    requests = read_requests(data)
    backend_obj, the_store, config = model_context(backend, store, replay=replay,
                                                   progress=progress, description="generate",
                                                   on_progress=on_progress)
    if dry_run:
        from ragmeter._verb._context import dry_run_result
        from ragmeter.runner._run import estimate_requests

        return dry_run_result(COMPONENT, "generate",
                              estimate_requests(requests, backend_obj, the_store, config),
                              signature=_signature(backend_obj))
    stats = RunStats()
    # nothing that only the summary needs is imported before the first call (issue 26.5)
    outcomes = run_requests(requests, backend_obj, the_store, config, stats)
    from ragmeter._verb._context import input_record
    from ragmeter._verb._failure import check_run
    from ragmeter.result import Result

    signature = _signature(backend_obj)
    rows = [response_row(o) for o in outcomes]
    ok = sum(1 for o in outcomes if o.ok)
    summary = {"family": COMPONENT, "verb": "generate", "signature": signature,
               "store": str(the_store.path),
               "coverage": {"rows": len(rows), "scored": ok, "unscored": len(rows) - ok,
                            "reasons": dict(stats.reasons)},
               "stats": stats.to_dict()}
    from ragmeter.judges._spend import spend, usage_of

    # the same spend block as every judged verb: cached responses at their original cost
    summary["spend"] = spend(usage_of(outcomes), config.price_prompt_per_mtok,
                             config.price_completion_per_mtok)
    identity = backend_obj.identity()
    return check_run(Result(COMPONENT, "generate", summary, items=rows,
                            inputs=[input_record(data, len(rows))], backends=[identity],
                            models=[str(identity.get("model", ""))],
                            engine=config.engine_name), "generate")


agenerate = async_variant(generate)
