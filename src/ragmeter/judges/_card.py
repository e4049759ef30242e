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

and a judge whose measured agreement with reference labels is at or below chance
(:func:`check_chance`) is flagged the same way.

Such numbers are flagged in the console, the run record and every report, never shown as a
plain measurement.  These are pure functions: no model, no I/O beyond reading that shipped
file once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["DEGENERATE_SHARE", "MIN_PROBABILITY_SPREAD", "check_degenerate", "check_chance",
           "judge_card", "card_line", "alarm_lines", "known_validations", "model_id"]

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
        from importlib import resources

        text = resources.files("ragmeter.judges").joinpath("data/validations.json").read_text(
            encoding="utf-8")
        _KNOWN = {e["judge"]: dict(e["validation"]) for e in json.loads(text)["judges"]}
    return _KNOWN


_KNOWN: dict[str, dict[str, Any]] | None = None


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
    if v.get("data"):
        text += f", {v['data']}"
    return text


def alarm_lines(alarms: Iterable[Mapping[str, Any]]) -> list[str]:
    """One warning line per alarm."""
    return [f"WARNING: {a.get('message', a)}" for a in alarms]
