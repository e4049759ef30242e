"""The run verbs the web app can launch, one :class:`~ragmeter._verb._form.VerbSpec` each.

Each spec's ``call`` is the public function its CLI command calls (``ragmeter.rgb.run``,
...) with the same options, so a launch from the page and a command in a shell cannot differ.
Defaults are the CLI's, except where a form needs a smaller first run (``rgb run``'s noise
rates); the docs say which.  Families on the one-spine layout write their forms in
``<family>/_form.py`` (``FORMS``; TRACe's ``trace run``).
"""

from __future__ import annotations

from typing import Any

from ragmeter._verb._form import LIMIT, TABLE_SUFFIXES
from ragmeter.errors import ConfigError
from ragmeter.view.forms import Field, VerbSpec

__all__ = ["SPECS", "spec_of", "RGB_LANGUAGES"]

RGB_LANGUAGES = {"en": ("rgb_en.jsonl", "rgb_en_int.jsonl", "rgb_en_fact.jsonl"),
                 "zh": ("rgb_zh.jsonl",)}
TABLES = TABLE_SUFFIXES


def _rgb_run(args: dict[str, Any], common: dict[str, Any]) -> Any:
    import ragmeter.rgb
    from ragmeter.io._samples import sample_path

    data, lang = args.pop(""), args.pop("lang")
    files = [data] if data else [str(sample_path(n)) for n in RGB_LANGUAGES[lang]]
    return ragmeter.rgb.run(files, lang=lang if data else None, **args, **common)


def _rgb_judge(args: dict[str, Any], common: dict[str, Any]) -> Any:
    import ragmeter.rgb

    return ragmeter.rgb.judge(args.pop(""), **args, **common)




def _multilingual_judge(args: dict[str, Any], common: dict[str, Any]) -> Any:
    import ragmeter.multilingual

    return ragmeter.multilingual.judge(args.pop(""), **args, **common)


def _generate(args: dict[str, Any], common: dict[str, Any]) -> Any:
    from ragmeter._verb._generate import generate

    return generate(args.pop(""), **args, **common)


def _check_rgb_run(values: dict[str, Any]) -> None:
    if values.get("passage_num") is not None and values["passage_num"] > 50:
        raise ConfigError("view: rgb run: passage count must be between 1 and 50.")


_HERE: tuple[VerbSpec, ...] = (
    VerbSpec(
        "rgb-run", "rgb run", "rgb", ("ragmeter", "rgb", "run"), call=_rgb_run,
        about="Generate answers on RGB data at each noise rate and score them (the paper's "
              "noise-robustness, rejection, integration and counterfactual tables).",
        phases=("answers", "judge"), check=_check_rgb_run,
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
        "rgb-judge", "rgb judge", "rgb", ("ragmeter", "rgb", "judge"), call=_rgb_judge,
        about="Judge predictions you already have: Rej* on default data (predictions at "
              "noise 1.0), ED* and CR* on _fact data, as rgb run judges them.",
        phases=("judge",),
        fields=(
            Field("predictions", "predictions", "file", required=True, suffixes=TABLES,
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
    """The forms each family writes beside its verbs (``<family>/_form.py``: ``FORMS``), then
    the ones still written here (a family's own form replaces one here of the same key)."""
    from ragmeter._families import FAMILIES, family_part

    specs = {s.key: s for s in _HERE}
    for name in FAMILIES:
        for spec in family_part(name, "_form", "FORMS") or ():
            specs[spec.key] = spec
    return specs


SPECS: dict[str, VerbSpec] = _all_specs()


def spec_of(key: str) -> VerbSpec:
    try:
        return SPECS[key]
    except KeyError:
        raise ConfigError(f"view: no launch form {key!r}; there are "
                          f"{', '.join(SPECS)}.") from None
