"""RGB answer labelling and rates, exactly as the original ``evalue.py``.

Source: chen700564/RGB @ 65ec39e (``evalue.py``: ``checkanswer``, ``predict`` and the scoring
loop at the end of ``__main__``); ``fact_evalue.py`` / ``reject_evalue.py`` for the judged
rates.  Chen et al., "Benchmarking Large Language Models in Retrieval-Augmented Generation",
AAAI 2024.

Labels of one prediction (``predict``):

* for Chinese data (the dataset name contains ``zh``) every space ``" "`` is removed first;
* if the prediction contains ``信息不足`` or ``insufficient information`` (case-sensitive, on
  the un-lowercased text) the labels are ``[-1]`` (a rejection);
* otherwise one label per answer component (``checkanswer``): a string component must occur in
  the lowercased prediction; a list component is a set of alternatives, any of which may
  occur.  1 = found, 0 = not found.  (The original docstring says "0 for positive"; the code is
  the reference and it is what is reproduced here.)
* ``factlabel`` = 1 when the prediction contains ``事实性错误`` or ``factual errors``.

Accuracy (``all_rate``) counts an item when ``noise_rate == 1 and labels[0] == -1`` or when
``0 not in labels and 1 in labels``.  For counterfactual data ``fact_check_rate`` (ED) =
factlabel items / N and ``correct_rate`` (CR) = (factlabel and ``0 not in labels``) /
factlabel items, 0 when there are none.

The lenient variant (:func:`lenient_labels`) is NOT the paper's metric: it is the flexible
matching some re-implementations use, offered opt-in and always reported apart.

The end of the module is the family's table: :data:`METRICS` (one row per number RGB reports,
with the paper's symbol as its label), :func:`setting_rates` (the numbers of one setting, the
one place the tables, the headline and the console read them from) and :func:`headline`.

Pure functions: no I/O, no model.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ragmeter import stats
from ragmeter.rgb import _refactor_metrics as refactor_rules
from ragmeter.rgb._selection import DEFAULT_PASSAGE_NUM
from ragmeter.stats._metric import Headline, Metric, MetricTable

__all__ = [
    "REJECT_MARKERS",
    "FACT_MARKERS",
    "RgbLabel",
    "clean_prediction",
    "check_answer",
    "label_prediction",
    "is_correct",
    "accuracy",
    "fact_rates",
    "FactRates",
    "judge_reject_rate",
    "judged_correct_rate",
    "LENIENT_REJECT_MARKERS",
    "LENIENT_FACT_MARKERS",
    "LENIENT_OVERLAP",
    "lenient_labels",
    "all_found",
    "judged_correct_count",
    "wilson",
    "METRIC_VERSION",
    "METRICS",
    "ROLES",
    "ROLE_METRICS",
    "TABLE_COLUMNS",
    "Rate",
    "setting_role",
    "setting_label",
    "setting_group",
    "setting_rates",
    "judged_rates",
    "metric_version",
    "headline",
]

# The scoring code these numbers reproduce: evalue.py at RGB commit 65ec39e.
METRIC_VERSION = "rgb-evalue@65ec39e"

# evalue.py, predict(): the two rejection strings and the two factual-error strings.
REJECT_MARKERS = ("信息不足", "insufficient information")
FACT_MARKERS = ("事实性错误", "factual errors")

Answer = str | Sequence[Any]


@dataclass(frozen=True)
class RgbLabel:
    """The labels of one prediction, as the original stores them."""

    labels: tuple[int, ...]
    factlabel: int
    prediction: str  # after the zh space removal (the text that was labelled)


def clean_prediction(prediction: str, remove_spaces: bool) -> str:
    """evalue.py: ``if 'zh' in dataset: prediction = prediction.replace(" ", "")``."""
    return prediction.replace(" ", "") if remove_spaces else prediction


def check_answer(prediction: str, ground_truth: Answer) -> list[int]:
    """evalue.py ``checkanswer``: one 0/1 label per answer component (1 = found).

    A string component must occur in the lowercased prediction; a list component is found
    when any of its alternatives (lowercased) occurs.  A bare string answer is one component.
    """
    pred = prediction.lower()
    components = [ground_truth] if not isinstance(ground_truth, list) else ground_truth
    labels: list[int] = []
    for comp in components:
        if isinstance(comp, list):
            found = any(str(alt).lower() in pred for alt in comp)
        else:
            found = str(comp).lower() in pred
        labels.append(int(found))
    return labels


def label_prediction(prediction: str, ground_truth: Answer, *, remove_spaces: bool) -> RgbLabel:
    """evalue.py ``predict`` after the model call: rejection check, then ``checkanswer``."""
    text = clean_prediction(prediction, remove_spaces)
    if any(m in text for m in REJECT_MARKERS):
        labels: tuple[int, ...] = (-1,)
    else:
        labels = tuple(check_answer(text, ground_truth))
    factlabel = int(any(m in text for m in FACT_MARKERS))
    return RgbLabel(labels=labels, factlabel=factlabel, prediction=text)


def all_found(labels: Sequence[int]) -> bool:
    """evalue.py's ``0 not in label and 1 in label``: every answer component found (a
    rejection, ``[-1]``, is not)."""
    return 0 not in labels and 1 in labels


def is_correct(labels: Sequence[int], noise_rate: float) -> bool:
    """evalue.py scoring loop: rejection at noise 1.0, or every component found.

    Note that at noise rate 1.0 an answer containing every component also counts, as in the
    original (``elif 0 not in label and 1 in label``).
    """
    if noise_rate == 1 and len(labels) > 0 and labels[0] == -1:
        return True
    return all_found(labels)


def accuracy(all_labels: Sequence[Sequence[int]], noise_rate: float) -> tuple[float | None, int]:
    """``all_rate`` = correct items / items; returns (rate, tt).  None when there are no items
    (the original divides by zero)."""
    tt = sum(1 for labels in all_labels if is_correct(labels, noise_rate))
    return (tt / len(all_labels) if all_labels else None), tt


@dataclass(frozen=True)
class FactRates:
    fact_check_rate: float | None  # ED
    correct_rate: float | None  # CR
    fact_tt: int
    correct_tt: int


def fact_rates(all_labels: Sequence[Sequence[int]], factlabels: Sequence[int]) -> FactRates:
    """evalue.py, ``_fact`` datasets: ED = factlabel items / N; CR = (factlabel and
    ``0 not in labels``) / factlabel items, 0 when no item has a factlabel (as the original)."""
    if len(all_labels) != len(factlabels):
        raise ValueError("labels and factlabels differ in length")
    fact_tt = sum(1 for f in factlabels if f == 1)
    correct_tt = sum(1 for labels, f in zip(all_labels, factlabels, strict=True)
                     if f == 1 and 0 not in labels)
    if not all_labels:
        return FactRates(None, None, 0, 0)
    return FactRates(fact_tt / len(all_labels), correct_tt / fact_tt if fact_tt else 0.0,
                     fact_tt, correct_tt)


def judge_reject_rate(flags: Sequence[bool]) -> float | None:
    """Rej* / ED*: the share of items the judge flagged (reject_evalue.py / fact_evalue.py:
    ``rejecttt / len(results)``)."""
    return sum(1 for f in flags if f) / len(flags) if flags else None


def judged_correct_count(detected: Sequence[bool], all_labels: Sequence[Sequence[int]]) -> int:
    """CR*'s numerator (fact_evalue.py): items the judge detected whose every answer component
    was found."""
    return sum(1 for d, labels in zip(detected, all_labels, strict=True)
               if d and all_found(labels))


def judged_correct_rate(detected: Sequence[bool], all_labels: Sequence[Sequence[int]]
                        ) -> float | None:
    """fact_evalue.py ``correct_rate``: (judge-detected and every component found) / detected,
    0 when none was detected."""
    det = sum(1 for d in detected if d)
    if not detected:
        return None
    return judged_correct_count(detected, all_labels) / det if det else 0.0


def wilson(successes: int | None, n: int | None) -> list[float] | None:
    """Wilson 95% interval of a rate as ``[lo, hi]`` (None for no items or unknown counts);
    every RGB rate carries it (Wilson 1927, via :func:`ragmeter.stats.wilson_interval`)."""
    if successes is None or n is None:
        return None
    ci = stats.wilson_interval(successes, n)
    return None if ci is None else [ci[0], ci[1]]


# ------------------------------------------------------------------ lenient (opt-in)

# Broad keyword lists of the kind used by re-implementations; NOT the paper's metric.
LENIENT_REJECT_MARKERS = (
    "insufficient information", "not enough information", "no information",
    "cannot answer", "can not answer", "can't answer", "unable to answer",
    "not able to answer", "does not contain", "do not contain", "doesn't contain",
    "not mentioned", "not provided", "no relevant", "i don't know", "i do not know",
    "unknown", "信息不足", "无法回答", "不能回答", "没有提供", "未提及", "不知道", "无法确定",
)
LENIENT_FACT_MARKERS = (
    "factual error", "factually incorrect", "incorrect information", "contain errors",
    "contains errors", "contains an error", "inconsistent", "inconsistency", "misinformation",
    "is incorrect", "is wrong", "not accurate", "inaccurate",
    "事实性错误", "事实错误", "有误", "错误", "不一致", "不准确",
)
# An alternative matches when at least this share of its tokens occurs in the prediction.
LENIENT_OVERLAP = 0.5

_WORD = re.compile(r"\w+", re.UNICODE)


def _lenient_tokens(text: str) -> list[str]:
    """Lowercased word tokens; CJK characters count one token each."""
    text = unicodedata.normalize("NFKC", text).lower()
    out: list[str] = []
    for word in _WORD.findall(text):
        if any("\u4e00" <= ch <= "\u9fff" or "\u3040" <= ch <= "\u30ff" for ch in word):
            out.extend(ch for ch in word)
        else:
            out.append(word)
    return out


def _lenient_found(prediction_tokens: set[str], prediction_norm: str, alternative: str) -> bool:
    alt_norm = unicodedata.normalize("NFKC", str(alternative)).lower()
    if alt_norm and alt_norm in prediction_norm:
        return True
    toks = _lenient_tokens(alt_norm)
    if not toks:
        return False
    hit = sum(1 for t in toks if t in prediction_tokens)
    return hit / len(toks) >= LENIENT_OVERLAP


def lenient_labels(prediction: str, ground_truth: Answer, *, remove_spaces: bool) -> RgbLabel:
    """Opt-in flexible labelling (not comparable with the paper): broad, case-insensitive
    refusal and error keyword lists; an alternative is found when its NFKC-lowercased text
    occurs in the prediction or at least ``LENIENT_OVERLAP`` of its tokens do."""
    text = clean_prediction(prediction, remove_spaces)
    low = unicodedata.normalize("NFKC", text).lower()
    factlabel = int(any(m in low for m in LENIENT_FACT_MARKERS))
    if any(m in low for m in LENIENT_REJECT_MARKERS):
        return RgbLabel(labels=(-1,), factlabel=factlabel, prediction=text)
    ptoks = set(_lenient_tokens(low))
    components = [ground_truth] if not isinstance(ground_truth, list) else ground_truth
    labels = []
    for comp in components:
        alts = comp if isinstance(comp, list) else [comp]
        labels.append(int(any(_lenient_found(ptoks, low, str(a)) for a in alts)))
    return RgbLabel(labels=tuple(labels), factlabel=factlabel, prediction=text)


# ------------------------------------------------------------------ the table

_PAPER = "Chen et al., AAAI 2024"
_EVALUE = "evalue.py @65ec39e"
_STRICT = {"reject_markers": REJECT_MARKERS}
_STRICT_FACT = {"reject_markers": REJECT_MARKERS, "fact_markers": FACT_MARKERS}
_LENIENT = {"overlap": LENIENT_OVERLAP, "reject_markers": LENIENT_REJECT_MARKERS,
            "fact_markers": LENIENT_FACT_MARKERS}
_REFACTOR = {"token_overlap": refactor_rules.TOKEN_OVERLAP,
             "rejection_phrases": refactor_rules.PRIMARY_REJECTION_PHRASES,
             "rejection_keywords": refactor_rules.REJECTION_KEYWORDS,
             "error_keywords": refactor_rules.ERROR_DETECTION_KEYWORDS}
_NOT_PAPER = "NOT the paper's metric, not comparable with published RGB numbers"
_WRITEUP = "the refactored RGB application's evaluator.py, as write-up 000 quotes it"


def _rate(name: str, label: str, description: str, source: str, **kw: Any) -> Metric:
    """An RGB rate: a share of items, with a Wilson 95% interval."""
    return Metric(name, label, description, source, aggregation=kw.pop("aggregation", "rate"),
                  ci="wilson", digits=3, **kw)


METRICS = MetricTable("rgb", METRIC_VERSION, [
    _rate("accuracy", "Acc",
          "noise robustness: share of answers containing every answer component, on default "
          "data at one noise rate below 1.0 (the share of noise documents among the passages)",
          f"{_PAPER}, noise robustness; {_EVALUE} all_rate", fn=is_correct, constants=_STRICT),
    _rate("reject_rate", "Rej",
          "negative rejection: share of answers that say 'insufficient information' (or "
          "信息不足) when every passage is noise (noise rate 1.0)",
          f"{_PAPER}, negative rejection; {_EVALUE} all_rate at noise 1.0", fn=is_correct,
          constants=_STRICT),
    _rate("reject_rate_judged", "Rej*",
          "negative rejection judged by a model (or ragmeter's refusal detector): share of "
          "the noise-1.0 answers the judge says decline to answer",
          f"{_PAPER}, negative rejection; reject_evalue.py @65ec39e", judged=True),
    _rate("integration_accuracy", "Acc",
          "information integration: share of answers containing every answer component, on "
          "_int data whose questions need facts from several documents",
          f"{_PAPER}, information integration; {_EVALUE} all_rate", fn=is_correct,
          constants=_STRICT),
    _rate("accuracy_no_doc", "Acc",
          "counterfactual robustness without documents: share of correct answers to _fact "
          "questions from the model's own knowledge (no passage, no system prompt)",
          f"{_PAPER}, counterfactual robustness; {_EVALUE} all_rate at passage_num 0",
          fn=is_correct, constants=_STRICT),
    _rate("accuracy_doc", "Acc_doc",
          "counterfactual robustness with documents: share of correct answers when the "
          "passages hold a counterfactual (wrong) answer",
          f"{_PAPER}, counterfactual robustness; {_EVALUE} all_rate", fn=is_correct,
          constants=_STRICT),
    _rate("ed", "ED",
          "error detection: share of answers that say the documents contain 'factual errors' "
          "(or 事实性错误)", f"{_PAPER}, counterfactual robustness; {_EVALUE} fact_check_rate",
          fn=label_prediction, constants=_STRICT_FACT),
    _rate("ed_judged", "ED*",
          "error detection judged by a model: share of the answers with counterfactual "
          "documents the judge says identify the factual error",
          f"{_PAPER}, counterfactual robustness; fact_evalue.py @65ec39e", judged=True),
    _rate("cr", "CR",
          "error correction: of the answers that flag factual errors, the share with no "
          "answer component missing (evalue.py's rule: 0 when none flags an error)",
          f"{_PAPER}, counterfactual robustness; {_EVALUE} correct_rate",
          aggregation="rate_of_detected", fn=label_prediction, constants=_STRICT_FACT),
    _rate("cr_judged", "CR*",
          "error correction judged by a model: of the answers the judge says identify the "
          "error, the share containing every answer component (0 when none does)",
          "fact_evalue.py @65ec39e correct_rate", aggregation="rate_of_detected",
          judged=True),
    _rate("lenient_accuracy", "Acc (lenient)",
          "evalue.py's all_rate with ragmeter's lenient labels (broad refusal keywords; an "
          f"alternative found when half its tokens occur); {_NOT_PAPER}",
          "ragmeter --mode lenient", fn=lenient_labels, constants=_LENIENT),
    _rate("lenient_ed", "ED (lenient)",
          f"ED with the lenient labels' broad error keywords; {_NOT_PAPER}",
          "ragmeter --mode lenient", fn=lenient_labels, constants=_LENIENT),
    _rate("lenient_cr", "CR (lenient)",
          f"CR with the lenient labels; {_NOT_PAPER}", "ragmeter --mode lenient",
          aggregation="rate_of_detected", fn=lenient_labels, constants=_LENIENT),
    _rate("refactor_accuracy", "Acc (refactor)",
          "the refactor's accuracy: answers matching the truth (substring, normalised "
          "substring or 80% token overlap) / all items, no credit for a rejection; "
          f"{_NOT_PAPER}", _WRITEUP, fn=refactor_rules.answer_correct, constants=_REFACTOR),
    _rate("refactor_reject_rate", "Rej (refactor)",
          f"the refactor's rejection rate: answers with a rejection phrase / all items; "
          f"{_NOT_PAPER}", _WRITEUP, fn=refactor_rules.is_rejection, constants=_REFACTOR),
    _rate("refactor_ed", "ED (refactor)",
          f"the refactor's error detection rate: answers with an error keyword / all items; "
          f"{_NOT_PAPER}", _WRITEUP, fn=refactor_rules.detects_error, constants=_REFACTOR),
    _rate("refactor_cr", "CR (refactor)",
          "the refactor's error correction rate: corrected answers / all items (not / "
          f"detected, as the paper's CR); {_NOT_PAPER}", _WRITEUP,
          fn=refactor_rules.corrects_error, constants=_REFACTOR),
])

# sha256 of METRICS.signature_settings() as released with METRIC_VERSION.  While the table's
# constants (marker lists, overlap thresholds) are these, signatures name METRIC_VERSION alone;
# a changed constant shows as ``metrics:<version>+<digest>`` until the version is bumped and
# this digest updated with it (tests/suites/rgb/test_rgb_metrics_table.py).
RELEASED_CONSTANTS = "0a5bbcc877d7"


def metric_version(table: MetricTable = METRICS) -> str:
    """The ``metrics:`` field of RGB signatures: the table's version, plus a digest of its
    constants when they differ from the released ones (so a changed weight, threshold or
    marker list is a changed signature)."""
    digest = hashlib.sha256(table.signature_settings().encode("utf-8")).hexdigest()[:12]
    return table.version if digest == RELEASED_CONSTANTS else f"{table.version}+{digest}"


# ------------------------------------------------------------------ settings and their numbers

# What a setting measures: the paper's table it fills (rgb run's plan; rgb score and rgb judge
# read it from the data kind, the noise rate and the passage count).
ROLES = ("noise", "rejection", "integration", "fact_doc", "fact_nodoc")
ROLE_METRICS: dict[str, tuple[str, ...]] = {
    "noise": ("accuracy",),
    "rejection": ("reject_rate", "reject_rate_judged"),
    "integration": ("integration_accuracy",),
    "fact_doc": ("accuracy_doc", "ed", "ed_judged", "cr", "cr_judged"),
    "fact_nodoc": ("accuracy_no_doc",),
}
# The paper's tables as run results store them (``tables[<table>][<data>][<key>]``): the key of
# each column and its metric.  Noise robustness and integration are keyed by noise rate.
TABLE_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "rejection": (("rej", "reject_rate"), ("rej_judged", "reject_rate_judged")),
    "counterfactual": (("acc", "accuracy_no_doc"), ("acc_doc", "accuracy_doc"), ("ed", "ed"),
                       ("ed_judged", "ed_judged"), ("cr", "cr"), ("cr_judged", "cr_judged")),
}


def setting_role(kind: str, noise_rate: float, passage_num: int = DEFAULT_PASSAGE_NUM) -> str:
    """The role of a setting: ``_int`` data is integration; ``_fact`` data without passages is
    Acc, with passages Acc_doc/ED/CR; default data at noise 1.0 is rejection, else noise."""
    if kind == "int":
        return "integration"
    if kind == "fact":
        return "fact_nodoc" if passage_num == 0 else "fact_doc"
    return "rejection" if noise_rate == 1 else "noise"


def setting_label(noise_rate: float, correct_rate: float = 0.0,
                  passage_num: int = DEFAULT_PASSAGE_NUM) -> str:
    """A short name of a setting, e.g. ``noise0.4`` or ``noise0.0_correct0.2_p0``."""
    text = f"noise{noise_rate}"
    if correct_rate:
        text += f"_correct{correct_rate}"
    if passage_num != DEFAULT_PASSAGE_NUM:
        text += f"_p{passage_num}"
    return text


def setting_group(dataset: str, noise_rate: float, correct_rate: float = 0.0,
                  passage_num: int = DEFAULT_PASSAGE_NUM) -> str:
    """The headline group of a setting: ``en@0.4``, ``en_fact@0.0_p0``."""
    return f"{dataset}@" + setting_label(noise_rate, correct_rate,
                                         passage_num).removeprefix("noise")


@dataclass(frozen=True)
class Rate:
    """One number of one setting: its metric, value, and the counts of its Wilson interval
    (``hits`` of ``n``)."""

    metric: str
    value: float | None
    hits: int | None
    n: int | None

    @property
    def ci95(self) -> list[float] | None:
        return wilson(self.hits, self.n)


_MAIN = {"noise": "accuracy", "rejection": "reject_rate", "integration": "integration_accuracy",
         "fact_doc": "accuracy_doc", "fact_nodoc": "accuracy_no_doc"}


def judged_rates(judged: Mapping[str, Any]) -> list[Rate]:
    """The judged numbers of a setting's judged rates: Rej* (``reject_rate_judged`` of
    ``rejected``/``n``), or ED* (``detected``/``n``) and CR* (``cr_correct``/``detected``)."""
    if "reject_rate_judged" in judged:
        return [Rate("reject_rate_judged", judged["reject_rate_judged"], judged.get("rejected"),
                     judged.get("n"))]
    if "ed_judged" in judged:
        return [Rate("ed_judged", judged["ed_judged"], judged.get("detected"), judged.get("n")),
                Rate("cr_judged", judged.get("cr_judged"), judged.get("cr_correct"),
                     judged.get("detected"))]
    return []


def setting_rates(role: str, scored: Mapping[str, Any],
                  judged: Mapping[str, Any] | None = None) -> list[Rate]:
    """The numbers of one setting, in :data:`METRICS` order.

    ``scored``: the setting's score document (``accuracy``, ``tt``, ``n``; ``fact_check_rate``
    ... on _fact data; ``lenient`` and ``refactor`` in those modes); ``judged``: its judged
    rates (``reject_rate_judged`` with ``rejected`` and ``n``, or ``ed_judged``/``cr_judged``
    with ``detected``, ``cr_correct`` and ``n``), or None."""
    n = scored.get("n")
    out = [Rate(_MAIN[role], scored.get("accuracy"), scored.get("tt"), n)]
    if role == "fact_doc":
        out += [Rate("ed", scored.get("fact_check_rate"), scored.get("fact_tt"), n),
                Rate("cr", scored.get("correct_rate"), scored.get("correct_tt"),
                     scored.get("fact_tt"))]
    out += judged_rates(judged or {})
    lenient = scored.get("lenient")
    if isinstance(lenient, Mapping):
        ln = lenient.get("n")
        out.append(Rate("lenient_accuracy", lenient.get("accuracy"), lenient.get("tt"), ln))
        if "fact_check_rate" in lenient:
            out += [Rate("lenient_ed", lenient["fact_check_rate"], lenient.get("fact_tt"), ln),
                    Rate("lenient_cr", lenient.get("correct_rate"), lenient.get("correct_tt"),
                         lenient.get("fact_tt"))]
    refactor = scored.get("refactor")
    if isinstance(refactor, Mapping):
        rn, counts = refactor.get("n"), refactor.get("counts") or {}
        if role == "rejection":
            out.append(Rate("refactor_reject_rate", refactor.get("rejection_rate"),
                            counts.get("rejected"), rn))
        elif role == "fact_doc":
            out += [Rate("refactor_ed", refactor.get("error_detection_rate"),
                         counts.get("detected"), rn),
                    Rate("refactor_cr", refactor.get("error_correction_rate"),
                         counts.get("corrected"), rn)]
        else:
            out.append(Rate("refactor_accuracy", refactor.get("accuracy"),
                            counts.get("correct"), rn))
    order = {name: k for k, name in enumerate(METRICS.names)}
    return sorted(out, key=lambda r: order[r.metric])


# ------------------------------------------------------------------ the headline


def _share(coverage: Any) -> float | None:
    if isinstance(coverage, Mapping) and coverage.get("total"):
        return float(coverage.get("scored") or 0) / float(coverage["total"])
    return None


def _flag(alarm: Any) -> str | None:
    """Why a judged number is not a measurement: its judge tripped the degenerate alarm, or
    its known validation is at or below chance."""
    from ragmeter.judges._card import alarm_flag

    if isinstance(alarm, Mapping) and alarm.get("kind") == "degenerate_judge":
        return "degenerate judge: treat as unmeasured"
    if isinstance(alarm, Mapping) and alarm.get("kind") == "judge_at_chance":
        return alarm_flag(alarm)
    return None


def _group(scored: Mapping[str, Any]) -> str:
    setting = scored.get("setting")
    if isinstance(setting, Mapping) and scored.get("dataset") is not None:
        return setting_group(str(scored["dataset"]), setting.get("noise_rate", 0.0),
                             setting.get("correct_rate") or 0.0,
                             setting.get("passage_num", DEFAULT_PASSAGE_NUM))
    return str(setting or scored.get("dataset") or "all")


def _settings(summary: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], Any]]:
    """(score document, judged rates or None) of each setting of an rgb result: a run's
    ``settings``, a judge result's ``score`` with its rates, or a score result itself."""
    if isinstance(summary.get("settings"), list):
        return [(s, s.get("judged")) for s in summary["settings"] if isinstance(s, Mapping)]
    if summary.get("kind") == "judge" and isinstance(summary.get("score"), Mapping):
        alarms = [a for a in summary.get("alarms") or [] if _flag(a)]
        judged = {**(summary.get("metrics") or {}), "coverage": summary.get("coverage"),
                  "alarm": alarms[0] if alarms else None}
        return [(summary["score"], judged)]
    if "accuracy" in summary and "dataset" in summary:
        return [(summary, None)]
    return []  # rgb build, a dry run: no number


def headline(summary: Mapping[str, Any]) -> list[Headline]:
    """The headline of an rgb result (its summary, or a stored run's ``result``): every number
    of every setting, grouped by data and setting (``en@0.4``), with its Wilson 95% interval,
    n and the share of the setting's items scored (judged numbers: judged).  A judged rate whose
    judge tripped the degenerate alarm carries ``flag``."""
    values: dict[str, dict[str, Any]] = {}
    ci: dict[str, dict[str, Any]] = {}
    n: dict[str, dict[str, Any]] = {}
    coverage: dict[str, Any] = {}
    judged_rows: dict[tuple[str, str], tuple[float | None, str | None]] = {}
    for scored, judged in _settings(summary):
        kind = str(scored.get("kind") or "default")
        setting = scored.get("setting")
        st = setting if isinstance(setting, Mapping) else {}
        role = scored.get("role") or setting_role(
            kind, st.get("noise_rate", scored.get("noise_rate", 0.0)),
            st.get("passage_num", DEFAULT_PASSAGE_NUM))
        if role not in _MAIN:
            continue
        group = _group(scored)
        for r in setting_rates(role, scored, judged if isinstance(judged, Mapping) else None):
            values.setdefault(group, {})[r.metric] = r.value
            ci.setdefault(group, {})[r.metric] = r.ci95
            n.setdefault(group, {})[r.metric] = r.n
            if METRICS.get(r.metric).judged and isinstance(judged, Mapping):
                judged_rows[(group, r.metric)] = (_share(judged.get("coverage")),
                                                  _flag(judged.get("alarm")))
        coverage[group] = _share(scored.get("coverage"))
    rows = METRICS.headline(values, ci=ci, n=n, coverage=coverage)
    out = []
    for h in rows:
        if (h.group, h.metric) in judged_rows:
            share, flag = judged_rows[(h.group, h.metric)]
            h = replace(h, coverage=share, flag=flag)
        out.append(h)
    return out
