"""The multilingual family's own option group: how ``multilingual judge`` scores.  The shared
groups (``RunOptions``, ``OutputOptions``, ``EngineOptions``) are in
:mod:`ragmeter._verb._options`; every field is named as its CLI flag."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["JudgeOptions"]


@dataclass(frozen=True)
class JudgeOptions:
    """How the semantic judge scores an answer (``multilingual judge``).

    ``scoring`` (``--scoring``): ``fitted`` (ragmeter's fitted semantic score, no model call),
    ``generate`` (the judge writes ``{"score", "explanation"}``, LBRAG's way), ``choices``
    (P(yes) of a yes/no question from logits/logprobs) or ``auto`` (fitted when the backend
    declares choice scoring, as the local one does; generate otherwise).  ``model_file``
    (``--model-file``): a fitted semantic judge's file from ``multilingual fit`` (default: the
    shipped one).  ``repeats`` (``--repeats``): judge every answer N times (distinct samples);
    the score is the mean over the scored repeats.  ``reference_field``
    (``--reference-field``): the column of reference 0-1 semantic scores to validate the
    judge against (default: ``semantic_score`` when the data has it).  Scoring, model and
    repeats are in the result's signature.
    """

    scoring: str = "auto"
    repeats: int = 1
    model_file: str | None = None
    reference_field: str | None = None
