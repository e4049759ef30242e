"""What every judged number carries: the judge's card, and the degenerate-judge alarm.

A *judge card* names a judge (backend, model, strategy, prompt or coefficients version) and
holds its validation: agreement with human or reference labels, with CIs, measured on named
data.  A judge without a validation is shown as **unvalidated** wherever its numbers appear.
Judges that ragmeter ships or defaults to, and has measured, get their measurement from
``judges/data/validations.json`` by exact name (model, method, prompt version).

The *degenerate-judge alarm* trips when a judge says the same thing for nearly every item:

* ``share >= 0.95`` of the items get the same verdict or grade (at least ``min_items``), or
* the judge's probabilities do not separate: the spread of p (95th minus 5th percentile) is
  below ``0.05``;

and a judge whose agreement with reference labels is at or below chance is flagged the same
way (alarm kind ``judge_at_chance``): :func:`check_validity` reads a judge card's validation
(its shipped one, or one measured on the run's own reference labels) and trips on an AUROC at
most ``0.55``, a kappa or a rank correlation at most ``0.2``, or a 95% CI that reaches chance
(0.5 for an AUROC, 0 for a kappa or correlation); :func:`check_chance` trips on a single
value at or below chance itself.  Uniform verdicts are not the only way a judge can print
noise as measurement.

Such numbers are flagged in the console, the run record and every report, never shown as a
plain measurement.  These are pure functions: no model, no I/O beyond reading that shipped
file once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["DEGENERATE_SHARE", "MIN_PROBABILITY_SPREAD", "check_degenerate", "check_chance",
           "judge_card", "card_line", "alarm_lines", "known_validations", "model_id",
           "AT_CHANCE", "ALARM_KINDS", "validation_statistic", "check_validity", "alarm_flag"]

DEGENERATE_SHARE = 0.95
MIN_PROBABILITY_SPREAD = 0.05
MIN_ITEMS = 5


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default) of already sorted values."""
    pos = (len(sorted_values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def check_degenerate(verdicts: Iterable[Any], *, judge: str, what: str,
                     probabilities: Iterable[float | None] | None = None,
                     min_items: int = MIN_ITEMS) -> dict[str, Any] | None:
    """The alarm dict when the judge's verdicts (or probabilities) do not vary, else None.

    ``verdicts``: one verdict or grade per scored item (None = unscored, ignored).
    ``probabilities``: optional p(positive) per item, checked for spread.
    """
    values = [v for v in verdicts if v is not None]
    if len(values) >= min_items:
        top, count = Counter(values).most_common(1)[0]
        share = count / len(values)
        if share >= DEGENERATE_SHARE:
            return {"kind": "degenerate_judge", "judge": judge, "what": what, "n": len(values),
                    "verdict": top, "share": share,
                    "message": f"{what}: the judge {judge} gave {top!r} to {count} of "
                               f"{len(values)} items ({share:.0%}); these numbers describe the "
                               "judge, not the system — treat them as unmeasured"}
    if probabilities is not None:
        probs = sorted(float(p) for p in probabilities if p is not None)
        if len(probs) >= min_items:
            spread = _percentile(probs, 0.95) - _percentile(probs, 0.05)
            if spread < MIN_PROBABILITY_SPREAD:
                return {"kind": "degenerate_judge", "judge": judge, "what": what,
                        "n": len(probs), "spread": spread,
                        "message": f"{what}: the judge {judge}'s probabilities do not separate "
                                   f"the items (5–95% spread {spread:.3f} < "
                                   f"{MIN_PROBABILITY_SPREAD}); treat these numbers as "
                                   "unmeasured"}
    return None


def model_id(backend: Any) -> str:
    """``backend:model`` (``openai:gpt-4o-mini``, ``local:SmolLM2-135M-Instruct``): how every
    judge card and signature names the model a judge runs on (issue 25: the backend too)."""
    ident = backend.identity()
    return f"{ident.get('backend', getattr(backend, 'name', '?'))}:{ident.get('model', '?')}"


def check_chance(value: float | None, *, judge: str, what: str, metric: str,
                 chance: float = 0.0, data: str = "") -> dict[str, Any] | None:
    """The alarm dict when a judge's measured agreement ``value`` (``metric``, e.g. a kappa or
    an AUROC) is at or below ``chance`` (0 for a kappa, 0.5 for an AUROC), else None: such a
    judge is flagged like a degenerate one."""
    if value is None or value > chance:
        return None
    return {"kind": "judge_at_chance", "judge": judge, "what": what, "metric": metric,
            "value": value, "chance": chance,
            "message": f"{what}: the judge {judge} agrees with the reference at or below chance "
                       f"({metric} {value:.3f} <= {chance:g}{f', {data}' if data else ''}); "
                       "treat these numbers as unmeasured"}


def judge_card(identity: Mapping[str, Any] | str,
               validation: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A judge card: ``identity`` (a name or the backend identity dict) and ``validation``.

    ``validation`` holds the agreement measured for this judge, e.g. ``{"metric":
    "hallucination AUROC", "value": 0.71, "ci": [0.66, 0.76], "data": "RAGBench, 4 splits,
    leave-one-split-out"}``; None means unvalidated.
    """
    if isinstance(identity, Mapping):
        parts = [str(identity[k]) for k in ("backend", "model", "strategy", "prompt", "version")
                 if identity.get(k)]
        name = ":".join(parts) or "judge"
    else:
        name = str(identity)
    if validation is None:
        validation = known_validations().get(name)
    return {"judge": name, "validated": validation is not None,
            "validation": dict(validation) if validation else None}


def known_validations() -> dict[str, dict[str, Any]]:
    """Validations ragmeter measured for judges it ships (``judges/data/validations.json``),
    by exact judge name; read once per process."""
    global _KNOWN
    if _KNOWN is None:
        import json

        from ragmeter._util._package import package_file

        text = package_file("ragmeter.judges", "data", "validations.json").read_text(
            encoding="utf-8")
        _KNOWN = {e["judge"]: dict(e["validation"]) for e in json.loads(text)["judges"]}
    return _KNOWN


_KNOWN: dict[str, dict[str, Any]] | None = None

AT_CHANCE: dict[str, tuple[float, float]] = {"auroc": (0.55, 0.5), "kappa": (0.2, 0.0),
                                             "correlation": (0.2, 0.0)}
"""Per kind of agreement statistic: (the value at or below which a judge counts as at
chance, chance itself, which its 95% CI must stay above)."""

ALARM_KINDS = ("degenerate_judge", "judge_at_chance")
"""The alarms that flag a judge's numbers as unmeasured (every door treats them alike)."""


def validation_statistic(validation: Mapping[str, Any]) -> str | None:
    """The kind of a validation's statistic (a key of :data:`AT_CHANCE`): its ``statistic``
    field, else read from its ``metric`` text (AUROC, kappa/κ, Spearman/correlation); None
    for an error such as MAE or RMSE, which has no chance level."""
    given = validation.get("statistic")
    text = str(given if given else validation.get("metric", "")).lower()
    if "auroc" in text or "auc" in text:
        return "auroc"
    if "kappa" in text or "κ" in text or "qwk" in text:
        return "kappa"
    if "spearman" in text or "correlation" in text or "rho" in text or "pearson" in text:
        return "correlation"
    return None


def check_validity(card: Mapping[str, Any], *, what: str,
                   measured_on: str = "its validation") -> dict[str, Any] | None:
    """The validity alarm when the card's validation is at or below chance (module docstring),
    else None (also for an unvalidated judge: the card says so already).  ``what``: the
    numbers it flags (as :func:`check_degenerate`'s); ``measured_on``: where the validation
    was measured, for the message."""
    v = card.get("validation")
    if not isinstance(v, Mapping):
        return None
    stat = validation_statistic(v)
    value = v.get("value")
    if stat is None or not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    limit, chance = AT_CHANCE[stat]
    given = v.get("ci")
    ci = [float(c) for c in given] if isinstance(given, (list, tuple)) and len(given) == 2 \
        and all(isinstance(c, (int, float)) for c in given) else None
    reasons = []
    if value <= limit:
        reasons.append(f"{v.get('metric', stat)} {value:.3f} <= {limit:g}")
    if ci is not None and ci[0] <= chance:
        reasons.append(f"its 95% CI [{ci[0]:.3f}, {ci[1]:.3f}] reaches chance ({chance:g})")
    if not reasons:
        return None
    judge = str(card.get("judge", "judge"))
    return {"kind": "judge_at_chance", "judge": judge, "what": what,
            "metric": v.get("metric", stat), "statistic": stat, "value": float(value),
            "ci": ci, "limit": limit, "chance": chance,
            "message": f"{what}: the judge {judge} is at or below chance on {measured_on} ("
                       + "; ".join(reasons) + "); treat these numbers as unmeasured"}


def alarm_flag(alarm: Mapping[str, Any]) -> str:
    """The short flag a headline row carries for an alarm of :data:`ALARM_KINDS`."""
    if alarm.get("kind") == "judge_at_chance":
        value = alarm.get("value")
        shown = f" {value:.3f}" if isinstance(value, (int, float)) else ""
        return f"judge at or below chance: {alarm.get('metric', 'agreement')}{shown}"
    if "share" in alarm:
        return (f"degenerate judge: {alarm.get('verdict')!r} for {alarm['share']:.0%} of "
                f"{alarm.get('n')} items")
    if "spread" in alarm:
        return f"degenerate judge: probabilities spread {alarm.get('spread', 0.0):.3f}"
    return "degenerate judge"


def card_line(card: Mapping[str, Any]) -> str:
    """``detector v1: hallucination AUROC 0.71 [0.66, 0.76], RAGBench ...`` or
    ``local:SmolLM2: unvalidated``."""
    name = str(card.get("judge", "judge"))
    v = card.get("validation")
    if not v:
        return f"{name}: unvalidated (no agreement with reference labels measured)"
    value = v.get("value")
    text = f"{name}: {v.get('metric', 'agreement')} "
    text += f"{value:.3f}" if isinstance(value, (int, float)) else str(value)
    ci = v.get("ci")
    if isinstance(ci, (list, tuple)) and len(ci) == 2:
        text += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
    for extra in v.get("more") or ():
        if isinstance(extra, Mapping) and isinstance(extra.get("value"), (int, float)):
            text += f"; {extra.get('metric', '')} {extra['value']:.3f}"
            eci = extra.get("ci")
            if isinstance(eci, (list, tuple)) and len(eci) == 2:
                text += f" [{eci[0]:.3f}, {eci[1]:.3f}]"
    if v.get("data"):
        text += f", {v['data']}"
    return text


def alarm_lines(alarms: Iterable[Mapping[str, Any]]) -> list[str]:
    """One warning line per alarm."""
    return [f"WARNING: {a.get('message', a)}" for a in alarms]
