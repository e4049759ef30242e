"""The web app's launch form of ``criteria judge`` (:data:`FORMS`): its fields, named as the
CLI's flags with the CLI's defaults, and the call of :func:`ragmeter.criteria.judge` behind
it, so a launch from the page and the command in a shell cannot differ.  :mod:`ragmeter.view`
finds it through :mod:`ragmeter._families`."""

from __future__ import annotations

from typing import Any

from ragmeter._verb._form import TABLE_SUFFIXES, Field, VerbSpec

__all__ = ["FORMS"]


def _listed(value: Any) -> list[str]:
    """A comma-separated field as the repeated flag's values."""
    return [v.strip() for v in str(value or "").split(",") if v.strip()]


def _check(values: dict[str, Any]) -> None:
    """The criteria are read and checked when the form is sent (no model is involved)."""
    from ragmeter.criteria import load_criteria

    load_criteria(_listed(values.get("criteria")))


def _judge(args: dict[str, Any], common: dict[str, Any]) -> Any:
    """``criteria judge``: the criteria and reference fields are comma-separated (as the
    repeated ``--criteria`` and ``--reference-field`` flags)."""
    import ragmeter.criteria

    criteria = _listed(args.pop("criteria"))
    refs = _listed(args.pop("reference_field"))
    return ragmeter.criteria.judge(args.pop(""), criteria=criteria,
                                   reference_field=refs or None, **args, **common)


FORMS: tuple[VerbSpec, ...] = (
    VerbSpec(
        "criteria-judge", "criteria judge", "criteria", ("ragmeter", "criteria", "judge"),
        call=_judge, check=_check,
        about="Judge every row on your own criteria (a question and a scale with an anchor "
              "per point); validate the judge against human scores with --reference-field.",
        phases=("judge",),
        fields=(
            Field("answers", "rows to judge", "file", required=True, suffixes=TABLE_SUFFIXES,
                  arg="", flag=None, samples=("criteria_answers.jsonl",),
                  empty_label="pick a file"),
            Field("criteria", "criteria", "text", "relevance,correctness,completeness",
                  required=True, flag="--criteria",
                  help="shipped names (relevance, correctness, completeness) or criteria "
                       "files, comma-separated"),
            Field("mode", "mode", "choice", "per-criterion",
                  choices=("per-criterion", "combined"), flag="--mode"),
            Field("scoring", "scoring", "choice", "auto",
                  choices=("auto", "choices", "generate"), flag="--scoring"),
            Field("repeats", "repeats", "int", "1", lo=1, hi=50, flag="--repeats"),
            Field("reference_field", "human scores", "text", flag="--reference-field",
                  help="the column of human scores, or CRITERION=COLUMN, comma-separated"),
            Field("by", "group by", "text", flag="--by"))),
)
