"""Naming the pattern a TRACe result shows: which part of a RAG system its four numbers point
at (issue 25).

The GPT-labelling write-up of RAGBench's metrics (``../shared/writeups/003``, "Common
Patterns" and each metric's "Problem Pattern") reads the metrics together: relevant context
that the answer barely uses points at the generator; complete grounding with low
completeness points at what was retrieved or kept; all four high is a healthy system.
:func:`diagnose` applies those readings, plus one of ragmeter's own (low adherence), to mean
metric values; the thresholds are named constants below.

The write-up's utilization is the share of the *relevant* sentences the answer used;
RAGBench's (ragmeter's default) is the share of *all* context sentences, on the same
denominator as relevance.  So the share of relevant context used is utilization for the
write-up's definitions and utilization / relevance (capped at 1) for RAGBench's.

Pure: numbers in, named patterns out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Diagnosis", "diagnose", "HIGH", "LOW", "ADHERENT", "used_share"]

HIGH = 0.7  # "High (0.7+)": the write-up's ideal value of relevance, utilization, completeness
LOW = 0.5  # below half: the write-up's low examples are 0.3 and 0.4 (utilization, completeness)
ADHERENT = 0.9  # "Perfect (1.0)" adherence, as a share of answers: nine in ten fully grounded
_WRITEUP = "GPT-labelling write-up of RAGBench's TRACe metrics, Common Patterns"


@dataclass(frozen=True)
class Diagnosis:
    """A pattern the numbers show: a stable ``name``, a short ``title``, what it means and
    where to look (``advice``), the numbers that triggered it (``evidence``) and the source of
    the reading."""

    name: str
    title: str
    advice: str
    evidence: str
    source: str


def used_share(relevance: float | None, utilization: float | None, *,
               writeup: bool = False) -> float | None:
    """The share of the relevant context that the answers used (see the module docstring);
    None when it cannot be told (no value, or no relevant context)."""
    if utilization is None:
        return None
    if writeup:
        return utilization
    if relevance is None or relevance <= 0:
        return None
    return min(1.0, utilization / relevance)


def diagnose(values: Mapping[str, float | None], *, writeup: bool = False) -> list[Diagnosis]:
    """The patterns the mean ``relevance``, ``utilization``, ``completeness`` and
    ``adherence`` in ``values`` show (a missing metric is simply not read), in this order:

    * ``ignores_context``: relevance ≥ HIGH and less than LOW of the relevant context used;
    * ``grounded_incomplete``: completeness < LOW and adherence ≥ ADHERENT;
    * ``ungrounded``: adherence < LOW (ragmeter's reading of RAGBench's adherence);
    * ``healthy``: relevance, share used and completeness ≥ HIGH, adherence ≥ ADHERENT.

    ``writeup``: the values follow the write-up's definitions (``--definitions writeup``)."""
    r = values.get("relevance")
    c = values.get("completeness")
    a = values.get("adherence")
    used = used_share(r, values.get("utilization"), writeup=writeup)
    out = []
    if r is not None and used is not None and r >= HIGH and used < LOW:
        out.append(Diagnosis(
            "ignores_context", "the generator ignores good context",
            "Most of the retrieved context is relevant, but the answers use little of it: "
            "look at the generator (its prompt and instructions) before the retriever.",
            f"relevance {r:.2f} ≥ {HIGH}, share of relevant context used {used:.2f} < {LOW}",
            _WRITEUP + " (good retrieval, bad generation)"))
    if c is not None and a is not None and c < LOW and a >= ADHERENT:
        out.append(Diagnosis(
            "grounded_incomplete", "grounded but incomplete",
            "The answers stay within the context but leave out much of what is relevant: "
            "look at retrieval coverage and at how the answer summarizes.",
            f"completeness {c:.2f} < {LOW}, adherence {a:.2f} ≥ {ADHERENT}",
            _WRITEUP + " (conservative but accurate)"))
    if a is not None and a < LOW:
        out.append(Diagnosis(
            "ungrounded", "most answers are not grounded",
            "Most answers contain a sentence the context does not support (a hallucination, "
            "or knowledge from outside the context).",
            f"adherence {a:.2f} < {LOW}",
            "ragmeter, from RAGBench's adherence (Friel et al. 2024)"))
    if (r is not None and used is not None and c is not None and a is not None
            and min(r, used, c) >= HIGH and a >= ADHERENT):
        out.append(Diagnosis(
            "healthy", "comprehensive and grounded",
            "Relevant context, used and covered, in grounded answers: keep watching it.",
            f"relevance {r:.2f}, share used {used:.2f}, completeness {c:.2f} ≥ {HIGH}; "
            f"adherence {a:.2f} ≥ {ADHERENT}",
            _WRITEUP + " (comprehensive and grounded)"))
    return out
