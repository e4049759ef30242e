"""The web app's launch form of ``trace run`` (:data:`FORMS`): its fields, named as the CLI's
flags, and the call of :func:`ragmeter.trace.run` behind it, so a launch from the page and a
command in a shell cannot differ.  :mod:`ragmeter.view` finds it through
:mod:`ragmeter._families`."""

from __future__ import annotations

from typing import Any

from ragmeter._verb._form import LIMIT, TABLE_SUFFIXES, Field, VerbSpec

__all__ = ["FORMS"]


def _run(args: dict[str, Any], common: dict[str, Any]) -> Any:
    """``trace run``: ``args`` are the form's values under their API names (the data under
    ``""``), ``common`` the backend, store, dry run and progress every judged verb takes."""
    import ragmeter.trace

    return ragmeter.trace.run(args.pop(""), **args, **common)


FORMS: tuple[VerbSpec, ...] = (
    VerbSpec(
        "trace-run", "trace run", "trace", ("ragmeter", "trace", "run"), call=_run,
        about="Label an annotated RAGBench split with a judge (or the offline detector, no "
              "model) and validate the labels against its annotations.",
        phases=("labels",),
        fields=(
            Field("data", "annotated rows", "file", required=True, suffixes=TABLE_SUFFIXES,
                  arg="", flag=None, samples=("trace_labelled.jsonl",),
                  empty_label="pick a file"),
            Field("strategy", "strategy", "choice", "auto",
                  choices=("auto", "detector", "json", "choice", "nli"), flag="--strategy",
                  help="detector: offline fitted detector, no model call; nli: your local "
                       "NLI model; auto: nli with an NLI model, detector for the local "
                       "backend, json for endpoints"),
            Field("nli_model", "NLI model (folder or cached name)", "text", "",
                  flag="--nli-model",
                  help="a sequence-classification NLI model on this machine, never "
                       "downloaded (pip install 'ragmeter[nli]')"),
            LIMIT,
            Field("language", "language of the documents", "text", "en", flag="--language"),
            Field("max_tokens", "max tokens (json)", "int", "2048", lo=16, hi=32768,
                  flag="--max-tokens"))),
)
