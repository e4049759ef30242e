"""``ragmeter generate REQUESTS --out RESPONSES``: the generic batch command the suites build on.

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

import click

from ragmeter.cli.backend_options import backend_options
from ragmeter.cli.options import input_file, output_file
from ragmeter.io import Row
from ragmeter.llm.base import Message, Request

__all__ = ["generate", "request_from_row", "response_row"]

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
        found = ", ".join(sorted(map(str, data))) or "none"
        raise row.error(f"is missing (required). Found fields: {found}.", component=COMPONENT,
                        field="id", fix='give every request a unique "id".')
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
    """The output row of one :class:`~ragmeter.runner.Outcome`."""
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


@click.command(name="generate")
@click.argument("requests_path", metavar="REQUESTS", type=input_file())
@click.option("--out", "out_path", required=True, type=output_file(),
              help="Write the responses here as JSON Lines (in input order, atomically).")
@backend_options
def generate(requests_path: str, out_path: str, **kwargs: Any) -> None:
    """Send a file of requests to a model and write one response row per request.

    REQUESTS holds rows {"id", "messages": [{"role", "content"}...]} or {"id", "system",
    "prompt"}, with optional "params" and "choices" (JSON Lines, JSON, CSV or Parquet).
    Failed calls become rows with "status": "unscored" and a "reason"; completed calls are
    stored, so running the command again calls nothing.

    \b
    Examples:
      ragmeter generate requests.jsonl --out responses.jsonl
      ragmeter generate requests.jsonl --out responses.jsonl --backend openai \\
          --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen2.5-7B-Instruct --concurrency 32
    """
    from ragmeter.cli.backend_options import runner_context
    from ragmeter.io import iter_rows, write_jsonl
    from ragmeter.runner import RunStats, estimate_requests, run_requests

    requests: list[Request] = []
    seen: dict[str, int] = {}
    for row in iter_rows(requests_path, component=COMPONENT):
        request = request_from_row(row)
        if request.id in seen:
            raise row.error(f"repeats id {request.id!r} (first on {row.unit} "
                            f"{seen[request.id]}).", component=COMPONENT, field="id",
                            fix='give every request a unique "id" (use "repeat" for samples).')
        seen[request.id] = row.number
        requests.append(request)

    backend, store, config, dry_run = runner_context(description="generate", **kwargs)
    if dry_run:
        click.echo(estimate_requests(requests, backend, store).render())
        return
    stats = RunStats()
    outcomes = run_requests(requests, backend, store, config, stats)
    n = write_jsonl(out_path, (response_row(o) for o in outcomes))
    ok = sum(1 for o in outcomes if o.ok)
    msg = (f"wrote {n} responses to {out_path}: {ok} ok ({stats.cached} from the store, "
           f"{stats.calls} call attempts), {n - ok} unscored")
    if stats.reasons:
        msg += " (" + ", ".join(f"{k}: {v}" for k, v in sorted(stats.reasons.items())) + ")"
    msg += f"; tokens {stats.prompt_tokens} prompt + {stats.completion_tokens} completion"
    if stats.cost_usd is not None:
        msg += f", cost ${stats.cost_usd:.4f}"
    click.echo(msg + f". Store: {store.path}", err=True)
