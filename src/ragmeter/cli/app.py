"""``ragmeter app run``: a thin door onto :func:`ragmeter.app.run`."""

from __future__ import annotations

import json
from typing import Any

import click

from ragmeter.cli.options import field_option, input_file, json_out_option, output_file
from ragmeter.cli.report import record_options, save_result

__all__ = ["group"]


@click.group(name="app")
def group() -> None:
    """Run your own RAG application on a test set and keep its answers and contexts."""


def _template(value: str | None) -> Any:
    """``--template`` as JSON text, or ``@FILE`` holding it."""
    if value is None:
        return None
    if value.startswith("@"):
        from pathlib import Path

        path = Path(value[1:])
        try:
            return path.read_text(encoding="utf-8")
        except OSError as exc:
            raise click.BadParameter(f"cannot read {path} ({exc.strerror or exc}).",
                                     param_hint="--template") from None
    return value


def _headers(values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for v in values:
        name, sep, value = v.partition(":")
        if not sep or not name.strip():
            raise click.BadParameter(f"{v!r} is not 'Name: value'.", param_hint="--header")
        out[name.strip()] = value.strip()
    return out


def _params(values: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for v in values:
        name, sep, raw = v.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"{v!r} is not KEY=VALUE.", param_hint="--param")
        try:
            out[name.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[name.strip()] = raw
    return out


@group.command(name="run")
@click.argument("test_set", metavar="TEST_SET", type=input_file())
@click.option("--out", "out", required=True, type=output_file(),
              help="Write one row per test-set row here, as JSON Lines (in order, "
                   "atomically): id, question, reference, response, retrieved_contexts, "
                   "retrieved_ids, status, reason, latency_ms ... (docs/app.md).")
@click.option("--url", default=None, metavar="URL",
              help="The application is an HTTP JSON endpoint at URL (with --template and the "
                   "--*-path options).")
@click.option("--base-url", "base_url", default=None, metavar="URL",
              help="The application is an OpenAI-compatible chat endpoint "
                   "(BASE_URL/chat/completions; with --model).")
@click.option("--function", "function", default=None, metavar="MODULE:FUNCTION",
              help="The application is a Python function (sync or async) taking the question "
                   "and returning the answer, (answer, contexts[, ids]) or a dict.")
@click.option("--template", default=None, metavar="JSON|@FILE",
              help="With --url: the request body, JSON with placeholders {question}, {id}, "
                   "{reference} or any column of the test set [default: "
                   '{"question": "{question}"}].')
@click.option("--method", default="POST", show_default=True,
              type=click.Choice(["POST", "GET", "PUT"], case_sensitive=False),
              help="With --url: the HTTP method (GET sends the template's fields as the query "
                   "string).")
@click.option("--header", "headers", multiple=True, metavar="'NAME: VALUE'",
              help="A header sent with every call (repeatable); ${ENV} in the value is read "
                   "from the environment (quote it: secrets never reach the command line).")
@click.option("--model", default=None, metavar="NAME",
              help="With --base-url: the model field of the chat request.")
@click.option("--system", default=None, metavar="TEXT",
              help="With --base-url: a system message sent before the question.")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE",
              help="With --base-url: a sampling parameter of the chat request (repeatable; "
                   "VALUE read as JSON, e.g. --param temperature=0).")
@click.option("--answer-path", "answer", default=None, metavar="PATH",
              help="Field path of the answer in the reply (answer, data.answer, "
                   "choices[0].message.content; $ for a plain-text reply) [default: answer, "
                   "response, output, result or text; chat: choices[0].message.content].")
@click.option("--contexts-path", "contexts", default=None, metavar="PATH",
              help="Field path of the retrieved contexts (a list of texts, or of objects with "
                   "text/content/page_content), e.g. sources[*].text [default: contexts, "
                   "retrieved_contexts, documents, context or sources when present].")
@click.option("--ids-path", "ids", default=None, metavar="PATH",
              help="Field path of the retrieved document ids, e.g. sources[*].id [default: "
                   "retrieved_ids or ids, else the ids of context objects].")
@click.option("--name", default=None, metavar="LABEL",
              help="The application's label: the output's system column [default: the URL, "
                   "the model or module:function].")
@click.option("--version", "version", default=None, metavar="V",
              help="Your application's version (e.g. a git commit). It is part of the store's "
                   "key: a new version is called afresh, a re-run of the same one is answered "
                   "from the store.")
@field_option
@click.option("--limit", default=None, type=click.IntRange(min=1), metavar="N",
              help="Only the first N rows of the test set.")
@click.option("--concurrency", default=4, show_default=True, type=click.IntRange(1, 1024),
              help="Calls to the application in flight at once.")
@click.option("--rpm", default=None, type=click.FloatRange(min=0, min_open=True), metavar="N",
              help="At most N calls a minute.")
@click.option("--max-retries", "max_retries", default=3, show_default=True,
              type=click.IntRange(0, 100),
              help="Retries of a call on 429, 5xx, timeouts and connection errors; then the "
                   "row is unscored with its reason.")
@click.option("--timeout", default=60.0, show_default=True,
              type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Give up on one attempt after this long (then retry). A sync Python "
                   "function cannot be interrupted and has none.")
@click.option("--store", default=None, type=input_file(), metavar="PATH",
              help="SQLite store of calls [default: store.sqlite in the per-user data folder, "
                   "or in $RAGMETER_HOME].")
@click.option("--replay", is_flag=True,
              help="Use stored replies only; fail if a row was never answered.")
@click.option("--dry-run", "dry_run", is_flag=True,
              help="Say how many rows would be sent and how many are answered in the store, "
                   "then exit without calling anything.")
@json_out_option
@record_options
def run(test_set: str, out: str, url: str | None, base_url: str | None,
        function: str | None, template: str | None, method: str, headers: tuple[str, ...],
        model: str | None, system: str | None, params: tuple[str, ...], answer: str | None,
        contexts: str | None, ids: str | None, name: str | None, version: str | None,
        fields: tuple[str, ...], limit: int | None, concurrency: int, rpm: float | None,
        max_retries: int, timeout: float, store: str | None, replay: bool, dry_run: bool,
        json_out: str | None, no_record: bool, runs_dir: str | None) -> None:
    """Send every row of TEST_SET to your RAG application and keep what comes back.

    TEST_SET is any question file (rubric build's output, a built-in sample, your rows:
    question, optional id and reference). Every reply is stored before it is read: a re-run,
    or a run resumed after it was killed, calls the application only for the rows it has not
    answered. The output is read as it is by trace label, retrieval score, rubric judge,
    multilingual score and criteria judge. Exit 1 when no row was answered.

    \b
    Examples:
      ragmeter app run questions.jsonl --out answers.jsonl --url http://127.0.0.1:8000/ask \\
          --template '{"query": "{question}"}' --contexts-path 'sources[*].text'
      ragmeter app run questions.jsonl --out answers.jsonl --function myapp:answer
      ragmeter app run questions.jsonl --out answers.jsonl --base-url http://127.0.0.1:8080/v1 \\
          --model my-rag
    """
    import ragmeter.app
    from ragmeter.app._report import print_app
    from ragmeter.cli.options import write_outputs
    from ragmeter.io import write_jsonl

    given = [flag for flag, value in (("--url", url), ("--base-url", base_url),
                                      ("--function", function)) if value]
    if len(given) != 1:
        raise click.UsageError("give the application with exactly one of --url (an HTTP JSON "
                               "endpoint), --base-url (an OpenAI-compatible chat endpoint) or "
                               "--function (a Python function)"
                               + (f"; got {' and '.join(given)}." if given else "."))
    misplaced = [flag for flag, value, kinds in (
        ("--template", template, ("--url",)), ("--model", model, ("--base-url",)),
        ("--system", system, ("--base-url",)), ("--param", params, ("--base-url",)),
        ("--header", headers, ("--url", "--base-url"))) if value and given[0] not in kinds]
    if misplaced:
        raise click.UsageError(f"{misplaced[0]} does not apply to {given[0]}.")
    paths = {"answer": answer, "contexts": contexts, "ids": ids, "name": name,
             "version": version}
    if url:
        target: Any = ragmeter.app.http(url, template=_template(template), method=method,
                                        headers=_headers(headers), **paths)
    elif base_url:
        target = ragmeter.app.chat(base_url, model, system=system, params=_params(params),
                                   headers=_headers(headers), **paths)
    else:
        assert function is not None
        target = ragmeter.app.function(function, **paths)
    calls = ragmeter.app.AppCalls(concurrency=concurrency, rpm=rpm, max_retries=max_retries,
                                  timeout=timeout)
    from ragmeter import RunOptions

    options = RunOptions(store=store, replay=replay, dry_run=dry_run)
    try:
        result = ragmeter.app.run(test_set, target, calls=calls, run=options,
                                  fields=fields, limit=limit)
    except ragmeter.app.AppFailedError as err:
        # No row answered: show what happened, keep --json and the run record, then one line
        # with the cause (exit 1); the output file is not written.
        if err.result is None:
            raise
        from ragmeter.app._verbs import failure

        print_app(err.result.summary)
        write_outputs(err.result, json_out, None)
        save_result(err.result, no_record=no_record, runs_dir=runs_dir)
        cause, fix = failure(err.result.items, err.result.summary["target"], flags=True)
        raise ragmeter.app.AppFailedError(cause, fix, err.result) from None
    if result.summary.get("dry_run"):
        click.echo(result.dry_run_text)  # type: ignore[attr-defined]
        return
    print_app(result.summary)
    n = write_jsonl(out, result.iter_items())
    click.echo(f"wrote {n} rows to {out}", err=True)
    write_outputs(result, json_out, None)
    save_result(result, no_record=no_record, runs_dir=runs_dir)
