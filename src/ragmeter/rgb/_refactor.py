"""``--mode refactor``: the refactored RGB application's rates beside the paper's, with flips.

The labels and rate definitions are in :mod:`ragmeter.rgb._refactor_metrics` (from the write-up
``../shared/writeups/000_45ee2b9ca6956127.txt``).  Which rates a setting reports follows the
write-up's task split:

* default data below noise 1.0, ``_int`` data, and ``_fact`` data without documents:
  ``accuracy`` = is_correct / total (sections 1 and 3);
* default data at noise 1.0 (negative rejection): ``rejection_rate`` = is_rejection / total
  (section 2), compared with the paper's Rej (``all_rate`` at noise 1.0);
* ``_fact`` data with documents: ``error_detection_rate`` = detects_error / total and
  ``error_correction_rate`` = corrects_error / total (section 4), compared with the paper's ED
  (``fact_check_rate``) and CR (its numerator: factlabel and ``0 not in labels``); the
  refactor's accuracy on this task is its correction count.

``flips`` counts, per compared rate, the items the refactor counts and strict does not
(``gained``) and the reverse (``lost``).
"""

from __future__ import annotations

from typing import Any

from ragmeter.rgb import _refactor_metrics as rgb_refactor
from ragmeter.rgb._data import RgbInstance
from ragmeter.rgb._metrics import RgbLabel

__all__ = ["RefactorTally"]


class RefactorTally:
    """Counts of one setting under the refactor's rules, and the flips against strict."""

    def __init__(self, kind: str, noise_rate: float) -> None:
        self.kind = kind
        self.noise_rate = noise_rate
        self.n = 0
        self.counts = {"correct": 0, "rejected": 0, "detected": 0, "corrected": 0}
        self.flips: dict[str, dict[str, int]] = {}

    def _flip(self, rate: str, strict: bool, refactor: bool) -> None:
        f = self.flips.setdefault(rate, {"gained": 0, "lost": 0})
        if refactor and not strict:
            f["gained"] += 1
        elif strict and not refactor:
            f["lost"] += 1

    def add(self, text: str, inst: RgbInstance, strict: RgbLabel, strict_correct: bool
            ) -> dict[str, int]:
        """Label one prediction; return its refactor labels (kept on the item)."""
        self.n += 1
        correct = rgb_refactor.answer_correct(text, inst.answer)
        rejected = rgb_refactor.is_rejection(text)
        out = {"correct": int(correct), "rejected": int(rejected)}
        self.counts["correct"] += correct
        self.counts["rejected"] += rejected
        if self.kind == "fact":
            detected = rgb_refactor.detects_error(text, inst.fakeanswer)
            corrected = rgb_refactor.corrects_error(text, inst.answer, inst.fakeanswer)
            out.update({"detected": int(detected), "corrected": int(corrected)})
            self.counts["detected"] += detected
            self.counts["corrected"] += corrected
            self._flip("error_detection_rate", bool(strict.factlabel), detected)
            self._flip("error_correction_rate",
                       bool(strict.factlabel) and 0 not in strict.labels, corrected)
        if self.kind == "default" and self.noise_rate == 1.0:
            self._flip("rejection_rate", strict_correct, rejected)
        else:
            self._flip("accuracy", strict_correct, correct)
        return out

    def summary(self) -> dict[str, Any]:
        """The refactor's rates (fractions of all scored items) and the flips."""
        def rate(key: str) -> float | None:
            return self.counts[key] / self.n if self.n else None

        out: dict[str, Any] = {"comparable_with_paper": False, "n": self.n,
                               "accuracy": rate("correct"), "rejection_rate": rate("rejected"),
                               "counts": dict(self.counts)}
        if self.kind == "fact":
            out["error_detection_rate"] = rate("detected")
            out["error_correction_rate"] = rate("corrected")
        else:
            del out["counts"]["detected"], out["counts"]["corrected"]
        out["flips"] = self.flips
        return out
