"""Context texts to document ids: for users who hold the retrieved contexts and the gold passages
as text rather than ids.  Then every ranking metric applies unchanged.

Texts are compared after :func:`ragmeter.text.normalize_text` (lower case; digits and the
letters of the common scripts kept; every other run of characters one space).  A retrieved
context *matches* a gold passage when (``match``):

* ``exact``: their normalized texts are equal;
* ``contains``: the normalized gold passage occurs in the normalized context as a run of whole
  words (a retrieved chunk that holds the passage, perhaps with more around it).

The gold passages become documents ``gold:1``, ``gold:2`` ... (in their order; passages equal
after normalization are one document; a passage empty after normalization is dropped), each of
grade 1.  The retrieved context at rank r becomes the first gold passage it matches that no
context ranked above it has matched, else the non-relevant ``context:r``.  So a passage is
found once, at its best rank, and a context repeating an already found passage counts as not
relevant (trec_eval counts a document once).

Pure: texts in, ids out.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragmeter.text import normalize_text

__all__ = ["normalize_all", "match_contexts"]


def normalize_all(texts: Sequence[str]) -> list[str]:
    """Each text normalized (:func:`ragmeter.text.normalize_text`)."""
    return [normalize_text(t) for t in texts]


def _matches(context: str, gold: str, match: str) -> bool:
    if match == "exact":
        return context == gold
    return f" {gold} " in f" {context} "


def match_contexts(contexts: Sequence[str], gold: Sequence[str], match: str = "exact"
                   ) -> tuple[list[str], dict[str, int], int]:
    """``(ranking, judgments, dropped)`` for normalized retrieved contexts (in rank order) and
    normalized gold passages: document ids in rank order, ``{gold id: 1}``, and how many gold
    passages were empty (dropped)."""
    golds: dict[str, str] = {}  # normalized text -> id, first occurrence wins
    dropped = 0
    for text in gold:
        if not text:
            dropped += 1
        elif text not in golds:
            golds[text] = f"gold:{len(golds) + 1}"
    found: set[str] = set()
    ranking = []
    for rank, context in enumerate(contexts, start=1):
        hit = next((gid for text, gid in golds.items()
                    if gid not in found and _matches(context, text, match)), None)
        if hit is None:
            ranking.append(f"context:{rank}")
        else:
            found.add(hit)
            ranking.append(hit)
    return ranking, {gid: 1 for gid in golds.values()}, dropped
