"""The web app's launch forms of ``app run`` (:data:`FORMS`): one for an HTTP JSON endpoint, one
for an OpenAI-compatible chat endpoint, their fields named as the CLI's flags with the CLI's
defaults, calling :func:`ragmeter.app.run` as the command does.

A Python function target is not offered on the page: importing a module named in a form would
run any code the module holds.  Use the CLI or the Python API for those."""

from __future__ import annotations

from typing import Any

from ragmeter._verb._form import LIMIT, TABLE_SUFFIXES, Field, VerbSpec

__all__ = ["FORMS"]

SAMPLES = ("retrieval_contexts.jsonl",)


def _paths_and_calls() -> tuple[Field, ...]:
    return (
        Field("answer", "answer path", flag="--answer-path",
              help="e.g. answer, data.answer, choices[0].message.content ($: plain text)"),
        Field("contexts", "contexts path", flag="--contexts-path",
              help="e.g. sources[*].text (empty: the usual names)"),
        Field("ids", "ids path", flag="--ids-path", help="e.g. sources[*].id"),
        Field("name", "label", flag="--name", help="the output's system column"),
        Field("version", "app version", flag="--version",
              help="a new version is called afresh; the same one is read from the store"),
        LIMIT,
        Field("concurrency", "concurrency", "int", "4", lo=1, hi=256, flag="--concurrency"),
        Field("timeout", "timeout (s)", "float", "60", lo=0.1, hi=3600, flag="--timeout"))


def _target_options(args: dict[str, Any]) -> dict[str, Any]:
    return {k: args.pop(k) or None for k in ("answer", "contexts", "ids", "name", "version")}


def _calls(args: dict[str, Any]) -> Any:
    import ragmeter.app

    return ragmeter.app.AppCalls(concurrency=int(args.pop("concurrency") or 4),
                                 timeout=float(args.pop("timeout") or 60.0))


def _http(args: dict[str, Any], common: dict[str, Any]) -> Any:
    import ragmeter.app

    target = ragmeter.app.http(args.pop("url"), template=args.pop("template") or None,
                               **_target_options(args))
    return ragmeter.app.run(args.pop(""), target, calls=_calls(args), **args, **common)


def _chat(args: dict[str, Any], common: dict[str, Any]) -> Any:
    import ragmeter.app

    target = ragmeter.app.chat(args.pop("base_url"), args.pop("model") or None,
                               **_target_options(args))
    return ragmeter.app.run(args.pop(""), target, calls=_calls(args), **args, **common)


def _test_set() -> Field:
    return Field("test_set", "test set", "file", required=True, flag=None, arg="",
                 samples=SAMPLES, suffixes=TABLE_SUFFIXES, empty_label="pick a file")


FORMS: tuple[VerbSpec, ...] = (
    VerbSpec(
        "app-run-http", "app run (HTTP)", "app", ("ragmeter", "app", "run"), call=_http,
        about="Send every question of a test set to your RAG application's HTTP endpoint and "
              "keep its answers, contexts and ids (stored: a re-run calls nothing).",
        uses_backend=False, uses_store=True,
        fields=(_test_set(),
                Field("url", "URL", required=True, flag="--url",
                      help="e.g. http://127.0.0.1:8641/ask"),
                Field("template", "request template", default='{"question": "{question}"}',
                      flag="--template", help="JSON with {question}, {id} or any column"),
                *_paths_and_calls())),
    VerbSpec(
        "app-run-chat", "app run (chat endpoint)", "app", ("ragmeter", "app", "run"),
        call=_chat,
        about="Send every question of a test set to your RAG application's OpenAI-compatible "
              "chat endpoint and keep its answers (and contexts, when it returns them).",
        uses_backend=False, uses_store=True,
        fields=(_test_set(),
                Field("base_url", "base URL", required=True, flag="--base-url",
                      help="e.g. http://127.0.0.1:8080/v1"),
                Field("model", "model", flag="--model"),
                *_paths_and_calls())),
)
