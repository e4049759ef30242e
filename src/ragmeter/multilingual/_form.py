"""The web app's launch form of ``multilingual judge`` (``FORMS``, collected by
:mod:`ragmeter.view` through :mod:`ragmeter._families`).  Its call is the very function the CLI
command calls, with the same options."""

from __future__ import annotations

from typing import Any

from ragmeter._verb._form import TABLE_SUFFIXES, Field, VerbSpec

__all__ = ["FORMS"]


def _judge(args: dict[str, Any], common: dict[str, Any]) -> Any:
    import ragmeter.multilingual

    return ragmeter.multilingual.judge(args.pop(""), **args, **common)


FORMS: tuple[VerbSpec, ...] = (
    VerbSpec(
        "multilingual-judge", "multilingual judge", "multilingual",
        ("ragmeter", "multilingual", "judge"), call=_judge,
        about="Add LBRAG's 0-1 semantic score to multilingual answers: ragmeter's fitted "
              "score (no model; the default) or a judge model, validated against reference "
              "scores when the data has them.",
        phases=("judge",),
        fields=(
            Field("answers", "answers", "file", required=True, suffixes=TABLE_SUFFIXES, arg="",
                  flag=None, samples=("multilingual_answers.jsonl",),
                  empty_label="pick a file"),
            Field("scoring", "scoring", "choice", "auto",
                  choices=("auto", "fitted", "choices", "generate"), flag="--scoring"),
            Field("repeats", "repeats", "int", "1", lo=1, hi=50, flag="--repeats"))),
)
