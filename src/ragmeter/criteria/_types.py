"""The criteria family's shared types: a :class:`Criterion` (its question, its scale with an
anchor per point, the fields of a row the judge sees, worked examples), a
:class:`CriteriaSet` (the criteria of one judging run with the files they came from), and the
reading of a score on a scale.  Pure; nothing here imports the rest of the family."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Criterion", "Example", "CriteriaSource", "CriteriaSet", "ScoreParse",
           "DEFAULT_INPUTS", "INPUT_LABELS"]

# The fields of a row a criterion shows the judge unless it names its own ``inputs``.
DEFAULT_INPUTS = ("question", "response")
# How the prompt labels the usual fields (any other field: its name, capitalized).
INPUT_LABELS: Mapping[str, str] = {
    "question": "Question",
    "response": "Answer",
    "reference": "Reference answer",
    "contexts": "Retrieved context",
    "context": "Context",
}


@dataclass(frozen=True)
class Example:
    """A worked example shown to the judge: the criterion's inputs, the score it deserves and,
    optionally, why."""

    values: Mapping[str, str]
    score: int
    explanation: str | None = None


@dataclass(frozen=True)
class Criterion:
    """One criterion: ``name`` (the group of its numbers), ``question`` (what the judge is
    asked), ``scale`` (``(point, anchor)`` pairs in increasing order of point), ``inputs``
    (the fields of a row the judge sees), ``pass_at`` (the least point that passes) and
    ``examples``."""

    name: str
    question: str
    scale: tuple[tuple[int, str], ...]
    inputs: tuple[str, ...] = DEFAULT_INPUTS
    pass_at: int = 0
    examples: tuple[Example, ...] = ()
    source: str = ""  # the label of the file it came from

    @property
    def points(self) -> tuple[int, ...]:
        return tuple(p for p, _ in self.scale)

    @property
    def lowest(self) -> int:
        return self.scale[0][0]

    @property
    def highest(self) -> int:
        return self.scale[-1][0]

    def normalized(self, score: float) -> float:
        """``score`` mapped onto [0, 1]: the lowest point is 0, the highest 1."""
        return (score - self.lowest) / (self.highest - self.lowest)

    def passes(self, score: int) -> bool:
        return score >= self.pass_at

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "question": self.question,
                               "scale": {str(p): a for p, a in self.scale},
                               "inputs": list(self.inputs), "pass_at": self.pass_at}
        if self.examples:
            out["examples"] = [{**dict(e.values), "score": e.score,
                                **({"explanation": e.explanation} if e.explanation else {})}
                               for e in self.examples]
        return out


def default_pass_at(points: Sequence[int]) -> int:
    """The least point strictly above the middle of the scale (1..5: 4; 0..2: 2; 0..1: 1)."""
    middle = (points[0] + points[-1]) / 2
    return next(p for p in points if p > middle)


@dataclass(frozen=True)
class CriteriaSource:
    """Where criteria came from: ``name`` (a shipped name or the file's name), ``path`` (or a
    label for in-memory criteria), the file's own ``version`` (optional) and ``sha256``: the
    first 12 hex digits of the SHA-256 of the criteria as read, in canonical JSON (a changed
    word, point or example changes it; a comment or reformatting does not)."""

    name: str
    path: str
    sha256: str
    version: str | None = None

    def label(self) -> str:
        """``relevance@v1:3f2a...`` as the signature shows it."""
        version = f"@{self.version}" if self.version else ""
        return f"{self.name}{version}:{self.sha256}"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "path": self.path, "version": self.version,
                "sha256": self.sha256}


@dataclass(frozen=True)
class CriteriaSet:
    """The criteria of one judging run, in order, and the files they came from."""

    criteria: tuple[Criterion, ...]
    sources: tuple[CriteriaSource, ...] = field(default=())

    def __iter__(self) -> Any:
        return iter(self.criteria)

    def __len__(self) -> int:
        return len(self.criteria)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.criteria)

    def get(self, name: str) -> Criterion:
        return next(c for c in self.criteria if c.name == name)

    def inputs(self) -> tuple[str, ...]:
        """Every field some criterion shows the judge, in first-use order."""
        return tuple(dict.fromkeys(f for c in self.criteria for f in c.inputs))

    def label(self) -> str:
        return ",".join(s.label() for s in self.sources)


@dataclass(frozen=True)
class ScoreParse:
    """A score read from a reply, or why none could be (``reason``, ``detail``)."""

    score: int | None
    reason: str | None = None
    detail: str | None = None
    explanation: str | None = None

    @property
    def ok(self) -> bool:
        return self.score is not None
