"""Reference semantic scores in the judged data (LBRAG's released ``semantic_score``, or a
column the user names), and the judge's agreement with them (pure).

The agreement is what ``trace run`` reports for TRACe, for a 0-1 score: AUROC of the judge's
score at ranking the answers whose reference is at least :data:`THRESHOLD` above the others,
Spearman's rho and the mean absolute error, each with a percentile-bootstrap 95% CI over the
rows that have both scores (:func:`ragmeter.stats._validation.score_agreement`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragmeter.errors import InputError
from ragmeter.io import Row, as_number, is_blank, source_label
from ragmeter.multilingual._rows import COMPONENT

__all__ = ["THRESHOLD", "DEFAULT_FIELD", "reference_field_of", "reference_scores", "agreement"]

THRESHOLD = 0.5
DEFAULT_FIELD = "semantic_score"


def reference_field_of(rows: Sequence[Row], given: str | None, data: Any = None) -> str | None:
    """The field holding reference scores: ``given`` (an error when no row has it), else
    ``semantic_score`` when some row has a value there, else None (no validation)."""
    if given is not None:
        if not any(not is_blank(r.data.get(given)) for r in rows):
            raise InputError(f"no row has a value in the reference field {given!r}.",
                             component=COMPONENT, path=source_label(data) if data is not None
                             else None,
                             fix="name the column that holds the reference 0-1 semantic "
                                 "scores (reference_field=..., --reference-field), or leave "
                                 "it out.")
        return given
    if any(not is_blank(r.data.get(DEFAULT_FIELD)) for r in rows):
        return DEFAULT_FIELD
    return None


def reference_scores(rows: Sequence[Row], field: str) -> list[float | None]:
    """Each row's reference score in [0, 1] (None when blank); anything else is an error
    naming the row."""
    return [None if is_blank(r.data.get(field)) else
            as_number(r, field, r.data.get(field), component=COMPONENT, lo=0.0, hi=1.0)
            for r in rows]


def agreement(scores: Sequence[float | None], references: Sequence[float | None], *,
              n_resamples: int, seed: int) -> dict[str, dict[str, Any]]:
    """The judge's agreement with the references over the rows that have both:
    ``{"semantic_auroc"|"semantic_spearman"|"semantic_mae": {"value", "ci95", "n"}}``."""
    from ragmeter.stats._validation import AGREEMENT_STATS, score_agreement

    pairs = [(float(s), float(r)) for s, r in zip(scores, references, strict=True)
             if s is not None and r is not None]
    found = score_agreement([s for s, _ in pairs], [r for _, r in pairs], threshold=THRESHOLD,
                            n_resamples=n_resamples, seed=seed)
    return {f"semantic_{stat}": found[stat].to_dict() for stat in AGREEMENT_STATS}
