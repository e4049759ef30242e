"""The web app's launch forms of RGB's model verbs, ``rgb run`` and ``rgb judge`` (``FORMS``,
collected by :mod:`ragmeter.view.verbs` through :mod:`ragmeter._families`).

Each form calls the public function its CLI command calls (``ragmeter.rgb.run``,
``ragmeter.rgb.judge``) with the same options.  Defaults are the CLI's, except ``rgb run``'s
noise rates: the form starts with a smaller first run (0, 0.4, 0.8).
"""

from __future__ import annotations

from typing import Any

from ragmeter._verb._form import LIMIT, TABLE_SUFFIXES, Field, VerbSpec
from ragmeter.errors import ConfigError

__all__ = ["FORMS", "RGB_LANGUAGES"]

# The built-in sample files of each language (the form's default data).
RGB_LANGUAGES = {"en": ("rgb_en.jsonl", "rgb_en_int.jsonl", "rgb_en_fact.jsonl"),
                 "zh": ("rgb_zh.jsonl",)}


def _run(args: dict[str, Any], common: dict[str, Any]) -> Any:
    import ragmeter.rgb
    from ragmeter.io._samples import sample_path

    data, lang = args.pop(""), args.pop("lang")
    files = [data] if data else [str(sample_path(n)) for n in RGB_LANGUAGES[lang]]
    return ragmeter.rgb.run(files, lang=lang if data else None, **args, **common)


def _judge(args: dict[str, Any], common: dict[str, Any]) -> Any:
    import ragmeter.rgb

    return ragmeter.rgb.judge(args.pop(""), **args, **common)


def _check_run(values: dict[str, Any]) -> None:
    if values.get("passage_num") is not None and values["passage_num"] > 50:
        raise ConfigError("view: rgb run: passage count must be between 1 and 50.")


FORMS: tuple[VerbSpec, ...] = (
    VerbSpec(
        "rgb-run", "rgb run", "rgb", ("ragmeter", "rgb", "run"), call=_run,
        about="Generate answers on RGB data at each noise rate and score them (the paper's "
              "noise-robustness, rejection, integration and counterfactual tables).",
        phases=("answers", "judge"), check=_check_run,
        fields=(
            Field("language", "language", "choice", "en", choices=tuple(RGB_LANGUAGES),
                  flag="--lang", arg="lang"),
            Field("data", "data", "file", arg="", flag="--data",
                  empty_label="built-in sample of the language"),
            Field("noise_rates", "noise rates", "rates", "0,0.4,0.8", flag="--noise-rates"),
            Field("passage_num", "passages", "int", "5", lo=1, hi=50, flag="--passage-num"),
            LIMIT,
            Field("temperature", "temperature", "float", "0.7", lo=0, hi=2,
                  flag="--temperature"),
            Field("max_tokens", "max tokens", "int", "256", lo=1, hi=8192,
                  flag="--max-tokens"))),
    VerbSpec(
        "rgb-judge", "rgb judge", "rgb", ("ragmeter", "rgb", "judge"), call=_judge,
        about="Judge predictions you already have: Rej* on default data (predictions at "
              "noise 1.0), ED* and CR* on _fact data, as rgb run judges them.",
        phases=("judge",),
        fields=(
            Field("predictions", "predictions", "file", required=True, suffixes=TABLE_SUFFIXES,
                  arg="", flag=None, empty_label="pick a file"),
            Field("data", "RGB data", "file", required=True, flag="--data",
                  samples=("rgb_en.jsonl", "rgb_en_fact.jsonl", "rgb_zh.jsonl"),
                  empty_label="pick a file"),
            Field("judge_method", "judge method", "choice", "auto",
                  choices=("auto", "text", "choice", "detector"), flag="--judge-method"),
            Field("noise_rate", "noise rate of the predictions", "float", lo=0, hi=1,
                  flag="--noise-rate", empty_label="1.0 default data, 0 _fact data"),
            Field("passage_num", "passages", "int", "5", lo=1, hi=50,
                  flag="--passage-num"))),
)
