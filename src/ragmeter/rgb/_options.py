"""RGB's own option groups (issue 24): typed values a verb takes beside ``backend=`` and
``run=`` (:class:`ragmeter.RunOptions`).  Every field is named as its CLI flag and JSON key
(``--passage-num`` is ``passage_num``).  The same names are still accepted as plain keywords
(``ragmeter.rgb.score(preds, data=d, noise_rate=0, passage_num=3)``): the verbs route them into
these groups (:func:`ragmeter._verb._options.gather`)."""

from __future__ import annotations

from dataclasses import dataclass

from ragmeter.rgb._selection import DEFAULT_PASSAGE_NUM, DEFAULT_SEED

__all__ = ["SettingOptions", "GenerationOptions", "JudgeOptions"]


@dataclass(frozen=True)
class SettingOptions:
    """The setting of evalue.py beside the noise rate: ``passage_num`` documents per question
    (0: none, and no system prompt), ``correct_rate`` (the share of correct documents among
    the counterfactual ones, _fact data), ``seed`` (set before each instance, as evalue.py's
    ``random.seed(2333)``).  The defaults are evalue.py's."""

    passage_num: int = DEFAULT_PASSAGE_NUM
    correct_rate: float = 0.0
    seed: int = DEFAULT_SEED


@dataclass(frozen=True)
class GenerationOptions:
    """How ``rgb run`` generates its answers: ``prompts`` (RGB's config/instruction.yaml;
    None: ragmeter's own), ``temperature`` (evalue.py's 0.7), ``max_tokens`` (the completion
    limit of each answer), ``limit`` (only the first N instances of each file; noted in the
    signature)."""

    prompts: str | None = None
    temperature: float = 0.7
    max_tokens: int = 256
    limit: int | None = None


@dataclass(frozen=True)
class JudgeOptions:
    """How Rej*, ED* and CR* are judged: ``judge_prompts`` (reject/fact templates in RGB's
    layout; None: ragmeter's few-shot prompts), ``judge_method`` (``auto``, ``text``,
    ``choice`` or ``detector``: docs/rgb.md), ``judge_model`` (another model on the same
    backend; None: the backend's model), ``repeats`` (judge every item N times with distinct
    calls; the rates stay repeat 0's, ``summary["stability"]`` has the agreement)."""

    judge_prompts: str | None = None
    judge_method: str = "auto"
    judge_model: str | None = None
    repeats: int = 1
