"""The types the retrieval modules share: the settings of a measurement, one retrieved document,
one query as read.  Imports nothing of the family (no import cycles inside the package)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = ["Settings", "Doc", "Query", "DEFAULT_K", "ORDERS", "DUPLICATES", "GAINS", "MATCHES"]

DEFAULT_K = (1, 3, 5, 10)
ORDERS = ("score", "given")  # score: trec_eval's (score descending, ties by docid descending)
DUPLICATES = ("error", "first")  # error: trec_eval's ("duplicate docs"); first: the best rank
GAINS = ("linear", "exponential")  # linear: trec_eval's ndcg_cut (the grade is the gain)
MATCHES = ("exact", "contains")  # how a retrieved context text matches a gold passage


@dataclass(frozen=True)
class Settings:
    """Everything that changes a retrieval number.  The defaults are trec_eval's (9.0.x, as
    pytrec_eval runs it): ``order="score"``, ``duplicates="error"``, ``gain="linear"``,
    ``all_queries=False`` (trec_eval without ``-c``), ``relevance_level=1`` (``-l 1``).

    ``order="given"``: the ranking as written (the ``rank`` column, else the order of lines or of
    the list) instead of sorting by score.  ``duplicates="first"``: a document retrieved twice
    for a query counts once, at its best rank (trec_eval refuses such a run).
    ``gain="exponential"``: nDCG gains ``2**grade - 1`` (Burges et al. 2005) instead of the grade.
    ``all_queries``: average over every judged query, a query with no retrieved document
    scoring 0 (trec_eval ``-c``).  ``relevance_level``: the least grade that is relevant
    (trec_eval ``-l``; nDCG uses every positive grade whatever the level, as trec_eval does).
    ``match``: for context texts, a retrieved context matches a gold passage when their
    normalized texts are equal (``exact``) or the gold passage occurs in the context as a run of
    whole words (``contains``).
    """

    k: tuple[int, ...] = DEFAULT_K
    order: str = "score"
    duplicates: str = "error"
    gain: str = "linear"
    all_queries: bool = False
    relevance_level: int = 1
    match: str = "exact"

    @property
    def trec_eval(self) -> str:
        """How this measurement relates to trec_eval: its command line when it is one
        (``trec_eval -c -l 2 -m ...``), else ``no`` and the variants that differ."""
        variants = [f"{name}={value}" for name, value, default in (
            ("order", self.order, "score"), ("duplicates", self.duplicates, "error"),
            ("gain", self.gain, "linear")) if value != default]
        if variants:
            return "no (" + ",".join(variants) + ")"
        flags = (["-c"] if self.all_queries else []) + (
            [f"-l{self.relevance_level}"] if self.relevance_level != 1 else [])
        return " ".join(["exact", *flags])


class Doc(NamedTuple):
    """One retrieved document of a query: its id, score and rank as given (None when the input
    has none) and its place among the query's documents as read (0-based).  A tuple: a large
    run makes millions of them."""

    doc_id: str
    score: float | None
    rank: float | None
    position: int


@dataclass
class Query:
    """One query as read from the run and the judgments.

    ``docs`` (ids) or ``contexts`` (texts): what was retrieved, None when the query is not in
    the run.  ``judgments`` (id -> grade) or ``gold``/``answer`` (texts): None when not given.
    ``fields``: its rows' other columns (``--by``).  ``failed``: the reason its row gave for
    being unscored (an application that failed on the query); the query is then unscored."""

    query_id: str
    docs: list[Doc] | None = None
    contexts: list[str] | None = None
    judgments: dict[str, int] | None = None
    gold: list[str] | None = None
    answer: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    failed: str | None = None

    @property
    def in_run(self) -> bool:
        return self.docs is not None or self.contexts is not None

    @property
    def judged(self) -> bool:
        return self.judgments is not None or self.gold is not None
