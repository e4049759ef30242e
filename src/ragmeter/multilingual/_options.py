"""The multilingual family's own option group: how ``multilingual judge`` scores.  The shared
groups (``RunOptions``, ``OutputOptions``, ``EngineOptions``) are in
:mod:`ragmeter._verb._options`; every field is named as its CLI flag."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["JudgeOptions"]


@dataclass(frozen=True)
class JudgeOptions:
    """How the semantic judge scores an answer (``multilingual judge``).

    ``scoring`` (``--scoring``): ``generate`` (the judge writes ``{"score", "explanation"}``,
    LBRAG's way), ``choices`` (P(yes) of a yes/no question from logits/logprobs) or ``auto``
    (choices when the backend declares choice scoring, as the local one does; generate
    otherwise).  ``repeats`` (``--repeats``): judge
    every answer N times (distinct samples); the score is the mean over the scored repeats.
    Both are in the result's signature.
    """

    scoring: str = "auto"
    repeats: int = 1
