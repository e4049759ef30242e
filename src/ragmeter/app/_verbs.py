"""``ragmeter.app.run``: send a test set to your RAG application and keep what comes back.

::

    import ragmeter
    app = ragmeter.app.http("http://127.0.0.1:8000/ask", template={"query": "{question}"},
                            answer="answer", contexts="sources[*].text", ids="sources[*].id")
    result = ragmeter.app.run("questions.jsonl", app, out="answers.jsonl")
    ragmeter.rubric.judge("answers.jsonl")           # the output is every family's input

``ragmeter app run`` calls exactly this function.  The calls go through the runner and its
store like every model call (:mod:`ragmeter.app._backends`): a re-run, or a run resumed after
``kill -9``, calls the application only for the rows it has not answered yet.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragmeter._util._redact import redact_url
from ragmeter._verb._context import async_variant, field_map, input_record
from ragmeter._verb._options import RunOptions, gather
from ragmeter.app._types import (
    CHAT_ANSWER_PATH,
    AppCalls,
    AppTarget,
    Case,
    ChatApp,
    FunctionApp,
    HttpApp,
)
from ragmeter.errors import ConfigError
from ragmeter.result import Result

__all__ = ["run", "arun", "http", "chat", "function", "as_target", "failure", "COMPONENT"]

COMPONENT = "app"


# ------------------------------------------------------------------ targets


def http(url: str, *, template: Any = None, method: str = "POST",
         headers: Mapping[str, str] | None = None, answer: str | None = None,
         contexts: str | None = None, ids: str | None = None, name: str | None = None,
         version: str | None = None) -> HttpApp:
    """An application behind an HTTP JSON endpoint (:class:`~ragmeter.app.HttpApp`).
    ``template`` may be a value or JSON text."""
    from ragmeter.app._template import parse_template

    return HttpApp(url, None if template is None else parse_template(template), method,
                   dict(headers or {}), answer, contexts, ids, name, version)


def chat(base_url: str, model: str | None = None, *, system: str | None = None,
         params: Mapping[str, Any] | None = None, headers: Mapping[str, str] | None = None,
         answer: str | None = None, contexts: str | None = None, ids: str | None = None,
         name: str | None = None, version: str | None = None) -> ChatApp:
    """An application behind an OpenAI-compatible chat endpoint (:class:`~ragmeter.app.ChatApp`)."""
    return ChatApp(base_url, model, system, dict(params or {}), dict(headers or {}), answer,
                   contexts, ids, name, version)


def function(target: str | Callable[..., Any], *, answer: str | None = None,
             contexts: str | None = None, ids: str | None = None, name: str | None = None,
             version: str | None = None) -> FunctionApp:
    """An application called in this process (:class:`~ragmeter.app.FunctionApp`): a function,
    or ``"package.module:function"``."""
    return FunctionApp(target, answer, contexts, ids, name, version)


def as_target(target: Any) -> AppTarget:
    """``target`` as a target value: an ``http://`` URL is an HTTP application with the default
    template, ``"module:function"`` or a callable a Python function."""
    if isinstance(target, (HttpApp, ChatApp, FunctionApp)):
        return target
    if isinstance(target, str) and target.startswith(("http://", "https://")):
        return HttpApp(target)
    if isinstance(target, str) and ":" in target:
        return FunctionApp(target)
    if callable(target):
        return FunctionApp(target)
    raise ConfigError(f"app: target={target!r} is not an application. Fix: give "
                      "ragmeter.app.http(URL, ...), ragmeter.app.chat(BASE_URL, MODEL), "
                      "ragmeter.app.function(FUNCTION) or 'package.module:function'.")


def label_of(target: AppTarget) -> str:
    """The application's label (the output's ``system`` column)."""
    if target.name:
        return target.name
    if isinstance(target, FunctionApp):
        from ragmeter.app._backends import function_name

        return function_name(target.function)
    if isinstance(target, ChatApp):
        return target.model or redact_url(target.base_url)
    return redact_url(target.url).split("?", 1)[0]


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def describe(target: AppTarget, paths: Any, template: Any, backend: Any = None
             ) -> dict[str, Any]:
    """What the run record and the report say about the application (no secret: URLs without
    credentials, header names only; a function's name and the hash of its source)."""
    out: dict[str, Any] = {"kind": target.kind, "name": label_of(target)}
    if isinstance(target, FunctionApp):
        from ragmeter.app._backends import function_name

        out["function"] = function_name(target.function)
        out["code_sha256"] = getattr(backend, "code", None)
    else:
        from ragmeter.app._backends import target_url

        out["url"] = redact_url(target_url(target))
        out["method"] = target.method.upper() if isinstance(target, HttpApp) else "POST"
        out["headers"] = sorted(target.headers)
        out["template"] = template
        out["template_sha256"] = _digest(template)
    if isinstance(target, ChatApp):
        out["model"] = target.model
        out["params"] = dict(target.params)
    out["version"] = target.version
    out["paths"] = paths.describe()
    return out


def _signature(target: AppTarget, described: Mapping[str, Any]) -> str:
    from ragmeter.app._metrics import METRIC_VERSION, METRICS
    from ragmeter.signature import Signature

    where = described.get("function") or f"{described.get('method')} {described.get('url')}"
    paths = described["paths"]
    return Signature.make(COMPONENT, METRIC_VERSION, {
        "target": f"{target.kind}:{where}", "version": target.version,
        "template": described.get("template_sha256"), "code": described.get("code_sha256"),
        "model": described.get("model"),
        "params": _digest(described["params"]) if described.get("params") else None,
        "answer": paths.get("answer"), "contexts": paths.get("contexts"),
        "ids": paths.get("ids"), "constants": METRICS.signature_settings()}).render()


# ------------------------------------------------------------------ requests


def _requests(target: AppTarget, cases: Sequence[Case], backend: Any,
              template: Any) -> list[Any]:
    """One runner request per test-set row; an InputError names the first row that lacks a
    field the template needs, before anything is called."""
    from ragmeter.app._backends import jsonable, payload_request
    from ragmeter.app._template import MissingPlaceholder, render
    from ragmeter.io import Row

    out = []
    for case in cases:
        if isinstance(target, FunctionApp):
            payload: dict[str, Any] = {"question": case.question}
            if backend.takes_row:
                payload["row"] = jsonable(dict(case.values))
        else:
            try:
                body = render(template, case.values)
            except MissingPlaceholder as exc:
                found = ", ".join(sorted(map(str, case.values))[:15])
                raise Row(dict(case.values), case.number, case.unit, case.path).error(
                    f"is missing, and the request template uses {{{exc.name}}}. Found fields: "
                    f"{found}.", component=COMPONENT, field=exc.name,
                    fix=f"add the field to every row, map a column to it with --field "
                        f"{exc.name}=COLUMN, or change the template.") from None
            method = target.method.upper() if isinstance(target, HttpApp) else "POST"
            payload = {"method": method, "body": jsonable(body)}
        out.append(payload_request(case.id, payload))
    return out


# ------------------------------------------------------------------ the verb


def failure(rows: Sequence[Mapping[str, Any]], described: Mapping[str, Any],
            flags: bool = False) -> tuple[str, str]:
    """``(cause, fix)`` of a run in which no row was answered; the fix names the CLI's flags
    when ``flags``, else the Python arguments."""
    reasons: dict[str, int] = {}
    for r in rows:
        reasons[str(r.get("reason"))] = reasons.get(str(r.get("reason")), 0) + 1
    first = rows[0] if rows else {}
    top = max(reasons, key=lambda k: reasons[k]) if reasons else "none"
    counts = ", ".join(f"{k} {v}" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1]))
    detail = str(first.get("detail") or "").rstrip(". ")
    cause = (f"no row of {len(rows)} was answered ({counts}); the first, {first.get('id')!r}: "
             f"{first.get('reason')}: {detail}".rstrip(": "))
    where = described.get("url") or described.get("function")
    name = {"answer": "--answer-path", "contexts": "--contexts-path", "ids": "--ids-path",
            "timeout": "--timeout"} if flags else {
        "answer": "answer=", "contexts": "contexts=", "ids": "ids=", "timeout": "timeout="}
    fixes = {
        "connection": f"start the application, or check its address ({where})",
        "timeout": f"check that the application at {where} answers, or raise {name['timeout']}",
        "not_json": f"give the answer path $ ({name['answer']}) if the application answers "
                    "plain text",
        "no_answer": f"give the field path of the answer in the reply ({name['answer']})",
        "bad_answer": f"give the field path of the answer text in the reply ({name['answer']})",
        "no_contexts": f"fix the contexts path ({name['contexts']}), or drop it",
        "no_ids": f"fix the ids path ({name['ids']}), or drop it",
        "app_error": "fix the function (the first row's error is above)",
    }
    fix = fixes.get(top) or (
        f"check the URL, the method and the request template ({where})"
        if top.startswith("http_4") else f"check the application at {where}")
    return cause, fix


def run(data: Any, target: Any, *, calls: AppCalls | None = None, run: RunOptions | None = None,
        fields: Mapping[str, str] | Sequence[str] | None = None, limit: int | None = None,
        out: str | Path | None = None, **options: Any) -> Result:
    """Send every row of the test set ``data`` to the application ``target`` and keep what
    comes back: a :class:`~ragmeter.result.Result` whose items are the output rows
    (:mod:`ragmeter.app._rows`: ``id``, ``question``, ``reference``, ``response``,
    ``retrieved_contexts``, ``retrieved_ids``, ``status``/``reason``, ``latency_ms`` ...), in
    test-set order, and whose headline is the share answered, contexts and latency.

    ``target``: :func:`http`, :func:`chat`, :func:`function`, an ``http://`` URL, a callable or
    ``"package.module:function"``.  ``calls``: :class:`AppCalls` (concurrency, rpm,
    max_retries, timeout; also as plain keywords); ``run``: :class:`ragmeter.RunOptions`
    (store, replay, dry_run, progress).  ``fields``: test-set columns to read as ``id``,
    ``question``, ``reference``, ``lang`` (``{"question": "prompt"}``); ``limit``: the first N
    rows; ``out``: write the output rows there as JSON Lines (atomically).

    Every reply is stored before it is read, so a re-run (or a resumed run) calls the
    application only for rows it has not answered.  A row that failed is unscored with its
    reason; when no row was answered, :class:`~ragmeter.app.AppFailedError` is raised (its
    ``result`` holds the rows) and ``out`` is not written.
    """
    from ragmeter.app._backends import backend_for, http_body
    from ragmeter.app._metrics import headline, measure
    from ragmeter.app._reply import ReplyPaths, read_reply
    from ragmeter.app._rows import ALIASES, output_row, read_cases
    from ragmeter.app._template import parse_template
    from ragmeter.runner._run import RunnerConfig, RunStats, estimate_requests, run_requests
    from ragmeter.runner._store import Store

    groups = gather("app.run", options, calls=(AppCalls, calls), run=(RunOptions, run))
    the_calls, opts = groups["calls"], groups["run"]
    app = as_target(target)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                              or limit < 1):
        raise ConfigError(f"app: limit={limit!r} must be a whole number of at least 1.")
    paths = ReplyPaths.of(app.answer, app.contexts, app.ids,
                          default_answer=CHAT_ANSWER_PATH if isinstance(app, ChatApp) else None)
    template = None if isinstance(app, FunctionApp) else parse_template(
        http_body(app), "the request template")
    cases = read_cases(data, field_map(fields, COMPONENT, aliases=ALIASES), limit)
    backend = backend_for(app, the_calls)
    requests = _requests(app, cases, backend, template)
    described = describe(app, paths, template, backend)
    signature = _signature(app, described)
    import sys

    config = RunnerConfig(
        concurrency=the_calls.concurrency, rpm=the_calls.rpm, max_retries=the_calls.max_retries,
        timeout_s=the_calls.timeout, replay=opts.replay,
        progress=sys.stderr.isatty() if opts.progress is None else opts.progress,
        description="app run", on_progress=opts.on_progress)
    store = opts.store if isinstance(opts.store, Store) else Store(opts.store)
    if opts.dry_run:
        return _dry_run(estimate_requests(requests, backend, store, config), described,
                        signature)
    stats = RunStats()
    outcomes = run_requests(requests, backend, store, config, stats)
    replies = [read_reply(o.response.text, paths) if o.ok and o.response is not None else None
               for o in outcomes]
    columns = [c for c, given, got in (
        ("retrieved_contexts", paths.contexts, any(r is not None and r.contexts is not None
                                                   for r in replies)),
        ("retrieved_ids", paths.ids, any(r is not None and r.ids is not None for r in replies)))
        if given is not None or got]
    from ragmeter.app._reply import Reply

    label = label_of(app)
    rows = [output_row(case, label, reply or Reply(), outcome, columns)
            for case, reply, outcome in zip(cases, replies, outcomes, strict=True)]
    answered = sum(1 for r in rows if r["status"] == "ok")
    reasons: dict[str, int] = {}
    for r in rows:
        if r["status"] != "ok":
            reasons[str(r["reason"])] = reasons.get(str(r["reason"]), 0) + 1
    summary: dict[str, Any] = {
        "family": COMPONENT, "verb": "run", "signature": signature, "system": label,
        "target": described, "rows": len(rows),
        "columns": list(rows[0]) if rows else [],
        "coverage": {"rows": len(rows), "scored": answered, "unscored": len(rows) - answered,
                     "reasons": reasons},
        **measure(rows, contexts="retrieved_contexts" in columns),
        "from_store": sum(1 for r in rows if r["cached"]),
        "stats": stats.to_dict(), "store": str(store.path)}
    result = Result(COMPONENT, "run", summary, items=rows, headline=headline(summary),
                    inputs=[input_record(data, len(rows))], backends=[backend.identity()],
                    models=[label])
    if not answered:
        from ragmeter.app._errors import AppFailedError

        cause, fix = failure(rows, described)
        raise AppFailedError(cause, fix, result)
    if out is not None:
        from ragmeter.io import write_jsonl

        write_jsonl(out, rows)
        summary["written"] = str(out)
    return result


def _dry_run(estimate: Any, described: Mapping[str, Any], signature: str) -> Result:
    """The calls a run would make, calling nothing (no tokens: an application is not billed
    by ragmeter's token count)."""
    summary = {"family": COMPONENT, "verb": "run", "dry_run": True, "signature": signature,
               "target": described, "rows": estimate.requests, "from_store": estimate.cached,
               "requests": estimate.requests, "cached": estimate.cached,
               "calls": estimate.calls,
               "coverage": {"rows": estimate.requests, "scored": 0,
                            "unscored": estimate.requests, "reasons": {"dry_run": 1}}}
    result = Result(COMPONENT, "run", summary, items=[])
    where = described.get("url") or described.get("function")
    result.dry_run_text = (  # type: ignore[attr-defined]
        f"dry run: {estimate.requests} rows for {described['name']} ({where}); "
        f"{estimate.cached} already answered in the store, {estimate.calls} calls to make. "
        "Nothing was called.")
    return result


arun = async_variant(run)
